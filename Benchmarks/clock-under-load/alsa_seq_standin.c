// A stand-in for the ALSA sequencer, for hosts without /dev/snd/seq: preloaded into jambridge
// (LD_PRELOAD), it takes the place of every libasound sequencer call jambridge makes, so that an
// `alsa: { create: NAME }` endpoint runs through jambridge's own ALSA code (ALSAClient, ALSASequencer.send,
// the port's OutputBacklog and its retries) with nothing changed in the daemon.
//
// What it models is one thing: a client output pool that fills. Each event jambridge sends takes a
// cell of the pool (JB_SEQ_POOL cells, default 500: the kernel's SNDRV_SEQ_DEFAULT_EVENTS) until
// the destination subscribed to the port has taken it. The destination takes events at the pace of
// a MIDI wire (JB_SEQ_BAUD, default 31,250 baud: 10 bits a byte, so 0.96 ms for a note-on) and stops
// taking any for JB_SEQ_STALL_MS every JB_SEQ_EVERY_MS (default 1,000 ms every 5,000 ms, the first
// JB_SEQ_FIRST_MS after the sequencer is opened; a synth busy loading a patch, say). When the pool is
// full, snd_seq_event_output_direct returns -EAGAIN, as the kernel's does for a full pool, and the
// descriptor snd_seq_poll_descriptors gives for POLLOUT (a timerfd, armed for the instant the
// destination frees the next cell) becomes ready when there is room again, as /dev/snd/seq's does for
// the sender's own pool. jambridge polled it (waitForOutputRoom, up to 10 ms at a time on the engine's
// queue) until issue 30's fix; it now keeps what was refused and tries it again from a timer every 5 ms,
// and asks only for POLLIN descriptors.
//
// Nothing is delivered anywhere; there are no other clients and no input. Every hold (from the
// first -EAGAIN to the output that succeeded next, or to the 100th -EAGAIN in a row, where jambridge
// gave up before issue 30's fix; since, that is half a second of its retries and it gives up nothing:
// it drops what waited a second itself) is logged to JB_SEQ_LOG, if set, when the sequencer is closed
// and again when the process ends (an output after snd_seq_close is refused and counted):
//   pool CELLS baud BAUD stall MS every MS first MS
//   events N eagain N holds N gave_up N max_level N after_close N
//   hold START_NS END_NS TRIES GAVE_UP          (CLOCK_MONOTONIC)
//
// Every call runs on jambridge's engine queue (serial), so no locks.
#define _GNU_SOURCE
#include <alsa/asoundlib.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

struct _snd_seq {
    int input_fd;   // never readable: no input
    int room_fd;    // timerfd: readable when the destination frees a cell
    int next_port;
    int closed;     // kept allocated after snd_seq_close, so that a late call is counted, not a use after free
    char name[64];
};
struct _snd_seq_client_info { int client; };
struct _snd_seq_port_info { int client, port; };
struct _snd_seq_query_subscribe { snd_seq_addr_t root, addr; int index; };
struct _snd_seq_queue_status { snd_seq_real_time_t time; };

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t env_u64(const char *name, uint64_t fallback) {
    const char *text = getenv(name);
    return text && *text ? strtoull(text, NULL, 10) : fallback;
}

// The pool: completion instants of the events it holds, in order (a ring).
static struct {
    int configured;
    uint64_t cells, baud, stall, every, first, opened;
    uint64_t *done;   // completion instant of each held event
    uint64_t head, count, last_done;
    uint64_t events, eagain, holds, gave_up, max_level, after_close;
    uint64_t hold_start, hold_tries;
    uint64_t (*log)[4];
    size_t logged, log_capacity;
    int written;
} pool;

static void configure(void) {
    if (pool.configured) return;
    pool.configured = 1;
    pool.cells = env_u64("JB_SEQ_POOL", 500);
    if (pool.cells == 0) pool.cells = 1;
    pool.baud = env_u64("JB_SEQ_BAUD", 31250);
    pool.stall = env_u64("JB_SEQ_STALL_MS", 1000) * 1000000u;
    pool.every = env_u64("JB_SEQ_EVERY_MS", 5000) * 1000000u;
    pool.first = env_u64("JB_SEQ_FIRST_MS", 2000) * 1000000u;
    pool.done = calloc(pool.cells, sizeof *pool.done);
    pool.log_capacity = 1 << 16;
    pool.log = calloc(pool.log_capacity, sizeof *pool.log);
}

// The destination does not read in [opened + first + n x every, ... + stall): a start inside a stall moves to its end.
static uint64_t after_stalls(uint64_t t) {
    if (pool.stall == 0 || pool.every == 0) return t;
    uint64_t origin = pool.opened + pool.first;
    if (t < origin) return t;
    uint64_t into = (t - origin) % pool.every;
    return into < pool.stall ? t + (pool.stall - into) : t;
}

// Bytes the event takes on a MIDI wire.
static uint64_t wire_bytes(const snd_seq_event_t *ev) {
    switch (ev->type) {
    case SND_SEQ_EVENT_NOTEON: case SND_SEQ_EVENT_NOTEOFF: case SND_SEQ_EVENT_KEYPRESS:
    case SND_SEQ_EVENT_CONTROLLER: case SND_SEQ_EVENT_PITCHBEND: case SND_SEQ_EVENT_SONGPOS:
        return 3;
    case SND_SEQ_EVENT_PGMCHANGE: case SND_SEQ_EVENT_CHANPRESS: case SND_SEQ_EVENT_SONGSEL:
    case SND_SEQ_EVENT_QFRAME:
        return 2;
    case SND_SEQ_EVENT_SYSEX:
        return ev->data.ext.len;
    default:
        return 1;
    }
}

static void write_log(void) {
    const char *path = getenv("JB_SEQ_LOG");
    if (!path || !pool.configured) return;
    FILE *file = fopen(path, "w");
    if (!file) return;
    fprintf(file, "pool %llu baud %llu stall %llu every %llu first %llu\n", (unsigned long long)pool.cells,
            (unsigned long long)pool.baud, (unsigned long long)(pool.stall / 1000000u),
            (unsigned long long)(pool.every / 1000000u), (unsigned long long)(pool.first / 1000000u));
    fprintf(file, "events %llu eagain %llu holds %llu gave_up %llu max_level %llu after_close %llu\n",
            (unsigned long long)pool.events, (unsigned long long)pool.eagain, (unsigned long long)pool.holds,
            (unsigned long long)pool.gave_up, (unsigned long long)pool.max_level, (unsigned long long)pool.after_close);
    for (size_t i = 0; i < pool.logged; i++)
        fprintf(file, "hold %llu %llu %llu %llu\n", (unsigned long long)pool.log[i][0],
                (unsigned long long)pool.log[i][1], (unsigned long long)pool.log[i][2],
                (unsigned long long)pool.log[i][3]);
    fclose(file);
}

__attribute__((destructor)) static void at_exit_log(void) { write_log(); }

static void end_hold(uint64_t end, int gave_up) {
    if (pool.logged < pool.log_capacity) {
        pool.log[pool.logged][0] = pool.hold_start;
        pool.log[pool.logged][1] = end;
        pool.log[pool.logged][2] = pool.hold_tries;
        pool.log[pool.logged][3] = (uint64_t)gave_up;
        pool.logged++;
    }
    pool.holds++;
    pool.gave_up += (uint64_t)gave_up;
    pool.hold_start = 0;
    pool.hold_tries = 0;
}

EXPORT int snd_seq_event_output_direct(snd_seq_t *seq, snd_seq_event_t *ev) {
    if (seq->closed) {
        pool.after_close++;
        return -EBADFD;
    }
    uint64_t now = now_ns();
    uint64_t drained = 0;
    while (pool.count > 0 && pool.done[pool.head] <= now) {
        pool.head = (pool.head + 1) % pool.cells;
        pool.count--;
        drained = 1;
    }
    if (drained) {
        uint64_t ticks;
        struct itimerspec off = {0};
        timerfd_settime(seq->room_fd, 0, &off, NULL);
        (void)!read(seq->room_fd, &ticks, sizeof ticks); // not ready until armed again
    }
    if (pool.count == pool.cells) {
        pool.eagain++;
        if (pool.hold_tries == 0) pool.hold_start = now;
        pool.hold_tries++;
        // Ready when the destination frees the oldest cell.
        uint64_t at = pool.done[pool.head];
        struct itimerspec when = {.it_value = {.tv_sec = (time_t)(at / 1000000000u), .tv_nsec = (long)(at % 1000000000u)}};
        timerfd_settime(seq->room_fd, TFD_TIMER_ABSTIME, &when, NULL);
        if (pool.hold_tries >= 100) end_hold(now, 1); // where jambridge gave up before issue 30's fix
        return -EAGAIN;
    }
    if (pool.hold_tries > 0) end_hold(now, 0);
    uint64_t start = after_stalls(pool.last_done > now ? pool.last_done : now);
    uint64_t bits = wire_bytes(ev) * 10u;
    uint64_t done = start + (pool.baud ? bits * 1000000000u / pool.baud : 0);
    pool.done[(pool.head + pool.count) % pool.cells] = done;
    pool.count++;
    pool.last_done = done;
    pool.events++;
    if (pool.count > pool.max_level) pool.max_level = pool.count;
    return 1;
}

EXPORT int snd_seq_open(snd_seq_t **handle, const char *name, int streams, int mode) {
    (void)streams; (void)mode;
    configure();
    snd_seq_t *seq = calloc(1, sizeof *seq);
    if (!seq) return -ENOMEM;
    seq->input_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    seq->room_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    seq->next_port = 0;
    snprintf(seq->name, sizeof seq->name, "%s", name ? name : "default");
    pool.opened = now_ns();
    *handle = seq;
    return 0;
}

EXPORT int snd_seq_close(snd_seq_t *seq) {
    if (!seq || seq->closed) return 0;
    close(seq->input_fd);
    close(seq->room_fd);
    seq->closed = 1;
    write_log();
    return 0;
}

EXPORT int snd_seq_client_id(snd_seq_t *seq) { (void)seq; return 128; }
EXPORT int snd_seq_set_client_name(snd_seq_t *seq, const char *name) { (void)seq; (void)name; return 0; }
EXPORT int snd_seq_set_client_pool_input(snd_seq_t *seq, size_t size) { (void)seq; (void)size; return 0; }
EXPORT int snd_seq_set_input_buffer_size(snd_seq_t *seq, size_t size) { (void)seq; (void)size; return 0; }

EXPORT int snd_seq_create_simple_port(snd_seq_t *seq, const char *name, unsigned int caps, unsigned int type) {
    (void)name; (void)caps; (void)type;
    return seq->next_port++;
}
EXPORT int snd_seq_delete_simple_port(snd_seq_t *seq, int port) { (void)seq; (void)port; return 0; }
EXPORT int snd_seq_connect_from(snd_seq_t *seq, int my_port, int src_client, int src_port) {
    (void)seq; (void)my_port; (void)src_client; (void)src_port; return 0;
}
EXPORT int snd_seq_connect_to(snd_seq_t *seq, int my_port, int dest_client, int dest_port) {
    (void)seq; (void)my_port; (void)dest_client; (void)dest_port; return 0;
}

EXPORT int snd_seq_alloc_named_queue(snd_seq_t *seq, const char *name) { (void)seq; (void)name; return 0; }
EXPORT int snd_seq_control_queue(snd_seq_t *seq, int q, int type, int value, snd_seq_event_t *ev) {
    (void)seq; (void)q; (void)type; (void)value; (void)ev; return 0;
}
EXPORT int snd_seq_drain_output(snd_seq_t *seq) { (void)seq; return 0; }

EXPORT int snd_seq_queue_status_malloc(snd_seq_queue_status_t **ptr) {
    *ptr = calloc(1, sizeof **ptr);
    return *ptr ? 0 : -ENOMEM;
}
EXPORT void snd_seq_queue_status_free(snd_seq_queue_status_t *ptr) { free(ptr); }
EXPORT int snd_seq_get_queue_status(snd_seq_t *seq, int q, snd_seq_queue_status_t *status) {
    (void)seq; (void)q;
    uint64_t elapsed = now_ns() - pool.opened;
    status->time.tv_sec = (unsigned int)(elapsed / 1000000000u);
    status->time.tv_nsec = (unsigned int)(elapsed % 1000000000u);
    return 0;
}
EXPORT const snd_seq_real_time_t *snd_seq_queue_status_get_real_time(const snd_seq_queue_status_t *info) {
    return &info->time;
}

EXPORT int snd_seq_poll_descriptors_count(snd_seq_t *seq, short events) {
    (void)seq;
    return (events & POLLIN ? 1 : 0) + (events & POLLOUT ? 1 : 0);
}
EXPORT int snd_seq_poll_descriptors(snd_seq_t *seq, struct pollfd *pfds, unsigned int space, short events) {
    unsigned int n = 0;
    if ((events & POLLIN) && n < space) pfds[n++] = (struct pollfd){.fd = seq->input_fd, .events = POLLIN};
    if ((events & POLLOUT) && n < space) pfds[n++] = (struct pollfd){.fd = seq->room_fd, .events = POLLIN};
    return (int)n;
}
EXPORT int snd_seq_event_input(snd_seq_t *seq, snd_seq_event_t **ev) {
    (void)seq;
    *ev = NULL;
    return -EAGAIN;
}

EXPORT int snd_seq_client_info_malloc(snd_seq_client_info_t **ptr) {
    *ptr = calloc(1, sizeof **ptr);
    return *ptr ? 0 : -ENOMEM;
}
EXPORT void snd_seq_client_info_free(snd_seq_client_info_t *ptr) { free(ptr); }
EXPORT void snd_seq_client_info_set_client(snd_seq_client_info_t *info, int client) { info->client = client; }
EXPORT int snd_seq_client_info_get_client(const snd_seq_client_info_t *info) { return info->client; }
EXPORT const char *snd_seq_client_info_get_name(snd_seq_client_info_t *info) { (void)info; return ""; }
EXPORT int snd_seq_query_next_client(snd_seq_t *seq, snd_seq_client_info_t *info) { (void)seq; (void)info; return -ENOENT; }

EXPORT int snd_seq_port_info_malloc(snd_seq_port_info_t **ptr) {
    *ptr = calloc(1, sizeof **ptr);
    return *ptr ? 0 : -ENOMEM;
}
EXPORT void snd_seq_port_info_free(snd_seq_port_info_t *ptr) { free(ptr); }
EXPORT void snd_seq_port_info_set_client(snd_seq_port_info_t *info, int client) { info->client = client; }
EXPORT void snd_seq_port_info_set_port(snd_seq_port_info_t *info, int port) { info->port = port; }
EXPORT int snd_seq_port_info_get_port(const snd_seq_port_info_t *info) { return info->port; }
EXPORT const char *snd_seq_port_info_get_name(const snd_seq_port_info_t *info) { (void)info; return ""; }
EXPORT unsigned int snd_seq_port_info_get_capability(const snd_seq_port_info_t *info) { (void)info; return 0; }
EXPORT int snd_seq_query_next_port(snd_seq_t *seq, snd_seq_port_info_t *info) { (void)seq; (void)info; return -ENOENT; }

EXPORT int snd_seq_query_subscribe_malloc(snd_seq_query_subscribe_t **ptr) {
    *ptr = calloc(1, sizeof **ptr);
    return *ptr ? 0 : -ENOMEM;
}
EXPORT void snd_seq_query_subscribe_free(snd_seq_query_subscribe_t *ptr) { free(ptr); }
EXPORT void snd_seq_query_subscribe_set_root(snd_seq_query_subscribe_t *info, const snd_seq_addr_t *addr) { info->root = *addr; }
EXPORT void snd_seq_query_subscribe_set_type(snd_seq_query_subscribe_t *info, snd_seq_query_subs_type_t type) { (void)info; (void)type; }
EXPORT void snd_seq_query_subscribe_set_index(snd_seq_query_subscribe_t *info, int index) { info->index = index; }
EXPORT int snd_seq_query_subscribe_get_index(const snd_seq_query_subscribe_t *info) { return info->index; }
EXPORT const snd_seq_addr_t *snd_seq_query_subscribe_get_addr(const snd_seq_query_subscribe_t *info) { return &info->addr; }
EXPORT int snd_seq_query_port_subscribers(snd_seq_t *seq, snd_seq_query_subscribe_t *subs) { (void)seq; (void)subs; return -ENOENT; }
