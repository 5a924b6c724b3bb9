// The bare thread beside the jam's clock: at SCHED_FIFO PRIORITY (default 20, the clock thread's),
// it sleeps with clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) to the deadlines ANCHOR + k x PERIOD
// (nanoseconds on CLOCK_MONOTONIC, read as one line "ANCHOR PERIOD END" from standard input, once the
// benchmark has recovered the jam's tick grid), from the first deadline at least 2 ms ahead up to END,
// and notes when each wake-up came. Then, given a PORT, it sends k (8 bytes) to 127.0.0.1:PORT, so that
// its wake-ups can also be stamped at a listener the way the jam's ticks are; nothing else: no queue, no
// lock. At the end (or on SIGTERM) it prints "k deadline woke" per deadline, in nanoseconds. Given a CPU, it
// runs on that CPU only (PORT 0: no datagram): one per CPU sees every stall of the CPU the jam's thread was on.
//
//   bare_clock [PRIORITY [PORT [CPU]]] < "ANCHOR PERIOD END"
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stopped;
static void stop(int signal) { (void)signal; stopped = 1; }

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int main(int argc, char **argv) {
    int priority = argc > 1 ? atoi(argv[1]) : 20;
    int sock = -1;
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (argc > 2 && atoi(argv[2]) > 0) {
        to.sin_port = htons((uint16_t)atoi(argv[2]));
        sock = socket(AF_INET, SOCK_DGRAM, 0);
    }
    if (argc > 3) {
        cpu_set_t cpus;
        CPU_ZERO(&cpus);
        CPU_SET(atoi(argv[3]), &cpus);
        if (sched_setaffinity(0, sizeof cpus, &cpus) != 0) {
            fprintf(stderr, "bare_clock: cannot run on CPU %s: %s\n", argv[3], strerror(errno));
            return 1;
        }
    }
    struct sched_param parameters = {.sched_priority = priority};
    int refused = pthread_setschedparam(pthread_self(), SCHED_FIFO, &parameters);
    if (refused) {
        fprintf(stderr, "bare_clock: SCHED_FIFO %d refused: %s\n", priority, strerror(refused));
        return 1;
    }
    struct sigaction action = {.sa_handler = stop};
    sigaction(SIGTERM, &action, NULL);
    printf("# SCHED_FIFO %d\n", priority);
    fflush(stdout);

    double anchor, period, end;
    if (scanf("%lf %lf %lf", &anchor, &period, &end) != 3 || period <= 0) {
        fprintf(stderr, "bare_clock: expected \"ANCHOR PERIOD END\" on standard input\n");
        return 1;
    }
    int64_t first = (int64_t)ceil(((double)now_ns() + 2e6 - anchor) / period);
    int64_t last = (int64_t)floor((end - anchor) / period);
    if (last < first) return 0;
    size_t count = (size_t)(last - first + 1);
    int64_t *woke = calloc(count, sizeof *woke);
    if (!woke) return 1;
    memset(woke, 0, count * sizeof *woke); // touch every page before the first deadline

    size_t done = 0;
    for (int64_t k = first; k <= last && !stopped; k++) {
        int64_t deadline = (int64_t)llround(anchor + (double)k * period);
        struct timespec at = {.tv_sec = deadline / 1000000000, .tv_nsec = deadline % 1000000000};
        int result;
        while ((result = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL)) == EINTR && !stopped) {}
        if (result != 0) break;
        woke[done++] = now_ns();
        if (sock >= 0) sendto(sock, &k, sizeof k, 0, (struct sockaddr *)&to, sizeof to);
    }
    for (size_t i = 0; i < done; i++) {
        int64_t k = first + (int64_t)i;
        printf("%" PRId64 " %" PRId64 " %" PRId64 "\n", k, (int64_t)llround(anchor + (double)k * period), woke[i]);
    }
    return 0;
}
