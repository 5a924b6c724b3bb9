// The ALSA sequencer API for Swift: alsa/asoundlib.h plus one-line functions for what Swift
// cannot import (function-like macros, the variadic error handler).
#ifndef JAMBRIDGE_CALSA_SHIM_H
#define JAMBRIDGE_CALSA_SHIM_H
#include <alsa/asoundlib.h>
#include <string.h>

static void jambridge_alsa_ignore_error(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}

/// Stops libasound printing "ALSA lib ..." lines to stderr: jambridge logs errors itself.
static inline void jambridge_alsa_silence(void) { snd_lib_error_set_handler(jambridge_alsa_ignore_error); }

/// snd_seq_ev_clear, then the source port and "to every subscriber" (snd_seq_ev_set_subs).
static inline void jambridge_alsa_event_reset(snd_seq_event_t *ev, unsigned char port) {
    memset(ev, 0, sizeof(*ev));
    ev->source.port = port;
    ev->dest.client = SND_SEQ_ADDRESS_SUBSCRIBERS;
    ev->dest.port = SND_SEQ_ADDRESS_UNKNOWN;
}

/// snd_seq_ev_set_direct: delivered at once, bypassing queues.
static inline void jambridge_alsa_event_direct(snd_seq_event_t *ev) { ev->queue = SND_SEQ_QUEUE_DIRECT; }

/// snd_seq_ev_schedule_real: delivered by `queue` at an absolute real time.
static inline void jambridge_alsa_event_schedule(snd_seq_event_t *ev, int queue, unsigned int sec, unsigned int nsec) {
    ev->queue = (unsigned char)queue;
    ev->flags &= ~(SND_SEQ_TIME_STAMP_MASK | SND_SEQ_TIME_MODE_MASK);
    ev->flags |= SND_SEQ_TIME_STAMP_REAL | SND_SEQ_TIME_MODE_ABS;
    ev->time.time.tv_sec = sec;
    ev->time.time.tv_nsec = nsec;
}

/// Removes the events of `type` this client scheduled on `queue` for sec:nsec (real time on the queue) or later and
/// not yet delivered (snd_seq_remove_events with OUTPUT, TIME_AFTER and EVENT_TYPE: the kernel's queue compares
/// each event's time to this one, ">=").
static inline int jambridge_alsa_remove_scheduled(snd_seq_t *seq, int queue, unsigned char type, unsigned int sec, unsigned int nsec) {
    snd_seq_remove_events_t *remove;
    int err = snd_seq_remove_events_malloc(&remove);
    if (err < 0) return err;
    snd_seq_timestamp_t time;
    time.time.tv_sec = sec;
    time.time.tv_nsec = nsec;
    snd_seq_remove_events_set_queue(remove, queue);
    snd_seq_remove_events_set_condition(remove, SND_SEQ_REMOVE_OUTPUT | SND_SEQ_REMOVE_TIME_AFTER | SND_SEQ_REMOVE_EVENT_TYPE);
    snd_seq_remove_events_set_time(remove, &time);
    snd_seq_remove_events_set_event_type(remove, type);
    err = snd_seq_remove_events(seq, remove);
    snd_seq_remove_events_free(remove);
    return err;
}

/// snd_seq_ev_set_sysex: a variable-length event pointing at `len` bytes.
static inline void jambridge_alsa_event_variable(snd_seq_event_t *ev, unsigned int len, void *data) {
    ev->flags &= ~SND_SEQ_EVENT_LENGTH_MASK;
    ev->flags |= SND_SEQ_EVENT_LENGTH_VARIABLE;
    ev->data.ext.len = len;
    ev->data.ext.ptr = data;
}

/// True if the event's data is variable-length (SysEx).
static inline int jambridge_alsa_event_is_variable(const snd_seq_event_t *ev) {
    return (ev->flags & SND_SEQ_EVENT_LENGTH_MASK) == SND_SEQ_EVENT_LENGTH_VARIABLE;
}
#endif
