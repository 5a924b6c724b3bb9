// libsamplerate (Debian libsamplerate0-dev) for Swift: its whole API imports as it is.
#include <samplerate.h>
