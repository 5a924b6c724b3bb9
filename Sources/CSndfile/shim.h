// libsndfile (Debian libsndfile1-dev) for Swift: its whole API imports as it is.
#include <sndfile.h>
