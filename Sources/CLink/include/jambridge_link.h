// jambridge's C interface to Ableton Link (Debian's header-only ableton-link-dev 3.0.6, which has no C wrapper):
// the few calls the jam needs, for Swift. Times are Link's clock (CLOCK_MONOTONIC_RAW on Linux) in microseconds.
#ifndef JAMBRIDGE_LINK_H
#define JAMBRIDGE_LINK_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// A Link instance: its network threads start with it, disabled until `jb_link_enable`.
typedef struct jb_link jb_link;

/// A session state as captured: its tempo and beats, and whether it plays.
typedef struct {
    double tempo;
    /// The beat at `time` (quantum `quantum`): beat(t) = beat + (t - time) * tempo / 60e6.
    double beat;
    int64_t time;
    bool playing;
    /// When `playing` last changed.
    int64_t playingSince;
} jb_link_state;

/// A new instance at `bpm` on the `count` network interfaces named in `interfaces` (every interface if none), or NULL
/// if Link could not start (its error in `error`, `size` bytes at most). Its sockets for measuring sessions and what it
/// sends to any one address are bounded (link.cpp).
jb_link *jb_link_create(double bpm, const char *const *interfaces, int count, char *error, int size);
void jb_link_destroy(jb_link *link);
void jb_link_enable(jb_link *link, bool enable);
uint64_t jb_link_peers(jb_link *link);
/// Link's clock minus CLOCK_MONOTONIC, in nanoseconds, read back to back (the closest of a few readings).
int64_t jb_link_clock_offset(void);
/// The session as it is now (from a thread that is not real-time: Link's app calls, which take a lock).
jb_link_state jb_link_capture(jb_link *link, double quantum);
/// Sets the session's tempo from `time` on.
void jb_link_set_tempo(jb_link *link, double bpm, int64_t time);
/// Starts or stops the session's transport at `time`.
void jb_link_set_playing(jb_link *link, bool playing, int64_t time);
/// Maps `beat` to `time` in a session alone (with peers, to the next time after it with the same phase).
void jb_link_request_beat(jb_link *link, double beat, int64_t time, double quantum);

#ifdef __cplusplus
}
#endif

#endif
