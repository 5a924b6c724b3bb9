// jambridge_link.h over Ableton Link's C++ API. Link's own threads do its networking; these calls only capture and
// commit its app session state.
#include "jambridge_link.h"

#include <ableton/Link.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <time.h>

struct jb_link {
    ableton::Link link;
    explicit jb_link(double bpm) : link(bpm) {}
};

jb_link *jb_link_create(double bpm, char *error, int size) {
    try {
        auto *made = new jb_link(bpm);
        made->link.enableStartStopSync(true);
        return made;
    } catch (const std::exception &failure) {
        std::snprintf(error, size, "%s", failure.what());
    } catch (...) {
        std::snprintf(error, size, "an unknown error");
    }
    return nullptr;
}

void jb_link_destroy(jb_link *link) { delete link; }

void jb_link_enable(jb_link *link, bool enable) { link->link.enable(enable); }

uint64_t jb_link_peers(jb_link *link) { return link->link.numPeers(); }

static int64_t nanoseconds(clockid_t clock) {
    timespec now{};
    clock_gettime(clock, &now);
    return int64_t(now.tv_sec) * 1000000000 + now.tv_nsec;
}

int64_t jb_link_clock_offset(void) {
    int64_t best = 0, narrowest = INT64_MAX;
    for (int reading = 0; reading < 5; reading++) {
        int64_t before = nanoseconds(CLOCK_MONOTONIC), raw = nanoseconds(CLOCK_MONOTONIC_RAW),
                after = nanoseconds(CLOCK_MONOTONIC);
        if (after - before < narrowest) {
            narrowest = after - before;
            best = raw - (before + (after - before) / 2);
        }
    }
    return best;
}

jb_link_state jb_link_capture(jb_link *link, double quantum) {
    auto state = link->link.captureAppSessionState();
    auto now = link->link.clock().micros();
    return jb_link_state{state.tempo(), state.beatAtTime(now, quantum), now.count(), state.isPlaying(),
                         state.timeForIsPlaying().count()};
}

void jb_link_set_tempo(jb_link *link, double bpm, int64_t time) {
    auto state = link->link.captureAppSessionState();
    state.setTempo(bpm, std::chrono::microseconds(time));
    link->link.commitAppSessionState(state);
}

void jb_link_set_playing(jb_link *link, bool playing, int64_t time) {
    auto state = link->link.captureAppSessionState();
    state.setIsPlaying(playing, std::chrono::microseconds(time));
    link->link.commitAppSessionState(state);
}

void jb_link_request_beat(jb_link *link, double beat, int64_t time, double quantum) {
    auto state = link->link.captureAppSessionState();
    state.requestBeatAtTime(beat, std::chrono::microseconds(time), quantum);
    link->link.commitAppSessionState(state);
}
