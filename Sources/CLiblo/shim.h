// liblo (Debian liblo-dev) for Swift. Its variadic calls (lo_send, lo_message_add) do not import:
// jambridge builds messages with lo_message_new + lo_message_add_<type> and serialises them.
#include <lo/lo.h>
