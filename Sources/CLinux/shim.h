// Linux calls Swift cannot make through Glibc's module (libc itself, nothing to link): timerfd(2) and eventfd(2),
// which the module does not include, and prctl(2), which is variadic.
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>

/// Turns transparent huge pages off for this process and what it starts: where the system makes them "always", a
/// thread's first touch of a 2 MB-aligned stretch (a stack, a malloc arena) takes 2 MB at once. prctl(2) is variadic,
/// which Swift cannot call. 0, or -1 with errno set.
static inline int jambridge_disable_transparent_huge_pages(void) {
    return prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
}
