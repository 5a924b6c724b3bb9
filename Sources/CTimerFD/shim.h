// timerfd(2) for Swift: Glibc's module does not include <sys/timerfd.h> (libc itself, nothing to link).
#include <sys/timerfd.h>
