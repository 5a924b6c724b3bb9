// libyaml (Debian libyaml-dev) for Swift: its parser API imports as it is.
#include <yaml.h>
