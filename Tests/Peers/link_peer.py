"""An Ableton Link peer for jambridge's Link tests (issue 32): PyPI aalink, Link's own C++ library wrapped for
Python by someone else, enabled with start/stop sync on. Run it in a network namespace of the test's own (Link
multicasts to 224.76.78.75:20808; see docs/testing.md). It reads commands from standard input, one a line, and
prints one JSON line for each, flushed at once; every line has "t", the time on CLOCK_MONOTONIC in seconds (the
clock of jambridge and of the other peers' "t") at which its values hold:

  (at start)        {"event": "enabled", "pid": ..., STATE}     Link is enabled: the peer is in the session
  state             {"event": "state", STATE}
  beats T1 T2 ...   {"event": "beats", "beats": [Link's beat at each CLOCK_MONOTONIC instant Ti], "tempo": ...,
                    "t": ...}                                   (seconds, as floats; "t" is when the beat was read)
  tempo BPM         {"event": "tempo", STATE}                   sets the session's tempo (from now on)
  play              {"event": "play", STATE}                    starts, with beat 0 at the start (as Link apps do)
  stop              {"event": "stop", STATE}
  quantum Q         {"event": "quantum", STATE}                 this peer's quantum (beats per bar for the phase)
  jump B            {"event": "jump", STATE}                    moves the whole session's beat by B beats at once
                                                                (Link's forceBeatAtTime: every peer's phase jumps)
  startstop on|off  {"event": "startstop", STATE}               start/stop sync, on from the start
  enable / disable  {"event": "enable" | "disable", STATE}      joins / leaves the session
  watch             {"event": "watch", STATE}                   from now on also prints a line for each change:
                    {"event": "changed", "peers" | "tempo" | "playing": new value, "t": ...}
  quit              {"event": "quit", "t": ...}, then leaves the session and exits (so do end of input and SIGTERM)
  (anything else)   {"event": "error", "error": ...}

STATE is "peers" (other peers seen), "tempo" (BPM), "playing", "beat" (at "t"; negative while a start counts in
to the session's next bar), "phase" (the beat's place in the quantum, 0 <= phase < quantum, read a few microseconds
after the beat), "quantum", "start_stop_sync".

Clocks: Link's clock on Linux is CLOCK_MONOTONIC_RAW (ableton/platforms/Config.hpp; aalink's `time` is the same),
which runs apart from CLOCK_MONOTONIC (NTP slews the latter; they differ by a constant and a few ppm at most). Each
answer maps one to the other afresh: of 5 back-to-back readings MONOTONIC, RAW, MONOTONIC, the one whose MONOTONIC
readings are closest gives the offset. aalink reads Link's beat only now (`Link.beat`), never at a time given, so
"beats" reads it now, between two RAW readings, and extends it along the timeline:
beat(T) = beat(now) + (T - now) * tempo / 60, which is Link's own timeline (beats are linear in time) and exact for
every T as long as the tempo holds (a tempo change is a new line from its moment on). Link shares tempo and phase,
not the beat's magnitude: two peers that joined stopped agree on the phase (their beats differ by a multiple of the
quantum); after a start, each peer that asks for beat 0 at the start (this one does, for its own starts and for the
session's) has the same beats. A change reaches the other peers within 50 ms (Link sends a peer's state at once, or
50 ms after its last message). Link carries the tempo as microseconds per beat: a tempo set here reads back exactly,
one set by another peer as it came (133 BPM is 132.99994680 here): compare tempos within 0.001 BPM. A "changed"
line's "t" is when the callback ran here (aalink hands Link's callbacks to the asyncio loop: well within a
millisecond on an idle peer).

  link_peer.py [--bpm BPM] [--quantum Q] [--watch]     (defaults: 120 BPM, quantum 4, no watch lines)
"""
import argparse
import asyncio
import os
import signal
import sys
import threading
import time

import aalink

from json_lines import monotonic, say


def raw():
    return time.clock_gettime(time.CLOCK_MONOTONIC_RAW)


def raw_to_monotonic():
    """CLOCK_MONOTONIC minus CLOCK_MONOTONIC_RAW, from the tightest of 5 back-to-back readings."""
    best = None
    for _ in range(5):
        before, r, after = monotonic(), raw(), monotonic()
        if best is None or after - before < best[0]:
            best = (after - before, (before + after) / 2 - r)
    return best[1]


class Peer:
    def __init__(self, bpm, quantum):
        self.link = aalink.Link(bpm)
        self.link.quantum = quantum
        self.link.start_stop_sync_enabled = True
        self.watching = False
        self.link.set_num_peers_callback(lambda peers: self.changed(peers=peers))
        self.link.set_tempo_callback(lambda tempo: self.changed(tempo=tempo))
        self.link.set_start_stop_callback(self.started_or_stopped)
        self.link.enabled = True

    def started_or_stopped(self, playing):
        # As LinkHut does on any start, its own or the session's: beat 0 at the start (quantized to the
        # session's phase when there are peers), so that every peer counts the song alike.
        if playing:
            self.link.request_beat_at_start_playing_time(0)
        self.changed(playing=playing)

    def changed(self, **field):
        if self.watching:
            say(event="changed", t=monotonic(), **field)

    def reading(self):
        """(tempo, beat, phase, CLOCK_MONOTONIC instant of the beat), read together."""
        for _ in range(10):
            tempo = self.link.tempo
            before = raw()
            beat, phase = self.link.beat, self.link.phase
            after = raw()
            if self.link.tempo == tempo and after - before < 0.0005:
                break
        return tempo, beat, phase, (before + after) / 2 + raw_to_monotonic()

    def state(self):
        tempo, beat, phase, at = self.reading()
        return dict(peers=self.link.num_peers, tempo=tempo, playing=self.link.playing, beat=beat, phase=phase,
                    quantum=self.link.quantum, start_stop_sync=self.link.start_stop_sync_enabled, t=at)

    def beats(self, instants):
        tempo, beat, _, at = self.reading()
        return dict(beats=[beat + (instant - at) * tempo / 60 for instant in instants], tempo=tempo, t=at)

    def command(self, line):
        """Answers one command; False once the peer is to quit."""
        words = line.split()
        if not words:
            return True
        name, arguments = words[0], words[1:]
        try:
            if name == "state" and not arguments:
                pass
            elif name == "beats":
                say(event="beats", **self.beats([float(word) for word in arguments]))
                return True
            elif name == "tempo" and len(arguments) == 1:
                self.link.tempo = float(arguments[0])
            elif name == "play" and not arguments:
                self.link.set_is_playing_and_request_beat_at_time(True, self.link.time, 0)
            elif name == "stop" and not arguments:
                self.link.playing = False
            elif name == "quantum" and len(arguments) == 1:
                self.link.quantum = float(arguments[0])
            elif name == "jump" and len(arguments) == 1:
                self.link.force_beat(self.link.beat + float(arguments[0]))
            elif name == "startstop" and arguments in (["on"], ["off"]):
                self.link.start_stop_sync_enabled = arguments[0] == "on"
            elif name in ("enable", "disable") and not arguments:
                self.link.enabled = name == "enable"
            elif name == "watch" and not arguments:
                self.watching = True
            elif name == "quit" and not arguments:
                return False
            else:
                say(event="error", error="unknown command: " + line.strip(), t=monotonic())
                return True
        except ValueError as error:
            say(event="error", error=str(error), t=monotonic())
            return True
        say(event=name, **self.state())
        return True


async def main():
    parser = argparse.ArgumentParser(description="An Ableton Link peer driven through standard input (aalink).")
    parser.add_argument("--bpm", type=float, default=120.0)
    parser.add_argument("--quantum", type=float, default=4.0)
    parser.add_argument("--watch", action="store_true", help="print a line for each change of peers, tempo, playing")
    options = parser.parse_args()

    loop = asyncio.get_running_loop()
    peer = Peer(options.bpm, options.quantum)
    peer.watching = options.watch
    say(event="enabled", pid=os.getpid(), **peer.state())

    lines = asyncio.Queue()
    loop.add_signal_handler(signal.SIGTERM, lines.put_nowait, "quit")
    # A thread reads standard input (a pipe, a file or a terminal alike); the loop runs the commands and Link's
    # callbacks.
    def read():
        for line in sys.stdin:
            loop.call_soon_threadsafe(lines.put_nowait, line)
        loop.call_soon_threadsafe(lines.put_nowait, "quit")
    threading.Thread(target=read, daemon=True).start()
    while peer.command(await lines.get()):
        pass
    say(event="quit", t=monotonic())
    peer.link.enabled = False  # says goodbye to the session's other peers (from Link's own thread)
    await asyncio.sleep(0.1)
    os._exit(0)  # without tearing Link down under Python's finalization, its callbacks still registered


if __name__ == "__main__":
    asyncio.run(main())
