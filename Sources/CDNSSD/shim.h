// The avahi dns_sd compatibility API, included directly (not through pkg-config, whose
// -D_REENTRANT SwiftPM warns about).
#include <avahi-compat-libdns_sd/dns_sd.h>
