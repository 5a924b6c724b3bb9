#!/usr/bin/env python3
"""Issue 32, measured: jambridge's clock output against an Ableton Link session's beats, two jambridge instances that
share only Link against each other, and two aalink peers of the same session against each other (Link's own
agreement, the yardstick), in one run.

In a network namespace of its own (made here, only `lo` up, deleted at the end, on error too: Link multicasts to
224.76.78.75:20808 and never runs in the machine's own namespace; this process enters the namespace itself, so every
process it starts is in it):

  - two aalink peers, Tests/Peers/link_peer.py (PyPI aalink, Link's own library wrapped by someone else), at --tempo;
  - two jambridge instances A and B, each its own RTP-MIDI session on 127.0.0.1 (`bind: 127.0.0.1`, `advertise:
    false`) and `clock: { tempo: T, link: { quantum: Q } }`, no invitation between them: they share only Link, each
    the master of its own jam;
  - one listener (the AppleMIDI initiator of Benchmarks/jam_clock_bench.py, in this process) joined to both sessions:
    it keeps them with CK and RS (Tests/Peers/applemidi_listener.py sends no CK, and jambridge drops a peer after
    60 s without one, shorter than a run) and stamps every packet with the kernel's receive time (SO_TIMESTAMPNS,
    CLOCK_REALTIME, moved onto CLOCK_MONOTONIC by the offset measured in this process every 2 s);
  - optionally busy loops pinned to CPUs (--load 1: the other core loaded, as jam_clock_bench.py does), and its
    real-time canaries (SCHED_FIFO 19, one pinned to each CPU, waking every 2 ms), which tell a stall of the machine.

Once every Link peer sees the 3 others and holds the tempo, aalink peer 1 plays (beat 0 at its start, as Link apps
do): both jams start on the session's next bar line. For --seconds both listeners hear the two clocks; every
--ask-every seconds both aalink peers are asked `beats` for the same instants: the arrivals of the packets heard since
the last question and the moment of asking. Then peer 1 stops the session.

  Link vs A, B   each tick k of the song (k counted from the Start) against Link's beat at its arrival (aalink peer
                 1's): x = beat - k/24, offset = (x - q round(x/q)) 60000/tempo ms, q = --quantum (the song starts on
                 a bar line). The same for each tick's scheduled instant (its RTP timestamp, 100 us quanta): the
                 timeline apart from the sending. And the tick grid: while the tempo holds, every tick k lies on
                 anchor + k x period, and the 100 us stamps of all the ticks pin the anchor to a few microseconds
                 (as jam_clock_bench.py does); Link's beat at each tick's grid instant gives the offset of
                 jambridge's timeline from Link's to a few microseconds, the figure to set beside aalink 1 vs 2.
  A vs B         the arrivals of the same tick index at the listener, B - A; and B's tick grid against A's.
  aalink 1 vs 2  their beats at the same instants, the difference (modulo the quantum) in ms at the tempo. aalink
                 reads Link's beat only when asked and extends it at the tempo, so within one question the difference
                 is the same for every instant: the question pairs are the samples, the instants weight them alike.

`beats` extends at the current tempo, so the tempo holds through the run (the default, 128 BPM, is 468,750 us a beat:
Link carries the tempo as whole microseconds a beat, and 111 BPM would be held as 111.0 by the peer that set it and
110.99991 by the others, 50 us apart after a minute). Ticks over --late ms off Link are listed with whether the other
instance's tick of the same index was off too, whether they came in bursts, during a canary stall or within 20 ms of
a question to the peers.

Run as root (network namespaces; SCHED_FIFO for jambridge's clock thread) with the peers' venv, which has aalink
and pymidi (scripts/install-deps.sh):

  sudo .build-peers/venv/bin/python Benchmarks/link_bench.py --jambridge .build/release/jambridge --load 1

Route files, logs and the status directory go to a temporary directory (removed afterwards unless --keep, which also
writes ticks-a.txt and ticks-b.txt: k, arrival ns, scheduled ns, Link's beat at the arrival by aalink 1 and by
aalink 2; and stalls.txt: the canaries' stalls, due ns and lateness ns). Every process this starts is ended by
its PID.
"""
import argparse
import ctypes
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import jam_clock_bench as bench  # noqa: E402  (its listener, processes, canaries and statistics)
from jam_clock_bench import CLOCK, CONTINUE, START, STOP, TICK_NS, mono, percentile  # noqa: E402

LINK_PEER = os.path.join(ROOT, "Tests", "Peers", "link_peer.py")
CLONE_NEWNET = 0x40000000


# MARK: The namespace

class Namespace:
    """A network namespace with only loopback up, entered by this process (and so by every process it starts)."""

    def __init__(self):
        self.name = "jblinkbench%d" % os.getpid()
        self.made = False

    def enter(self):
        for command in (["ip", "netns", "add", self.name], ["ip", "-n", self.name, "link", "set", "lo", "up"]):
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode != 0:
                raise SystemExit("%s: %s" % (" ".join(command), result.stderr.strip()))
            self.made = True
        libc = ctypes.CDLL(None, use_errno=True)
        descriptor = os.open("/run/netns/" + self.name, os.O_RDONLY)
        try:
            if libc.setns(descriptor, CLONE_NEWNET) != 0:
                raise SystemExit("setns: %s" % os.strerror(ctypes.get_errno()))
        finally:
            os.close(descriptor)
        interfaces = [line.split(":")[0].strip() for line in open("/proc/self/net/dev").read().splitlines()[2:]]
        if interfaces != ["lo"]:
            raise SystemExit("not in a namespace of loopback only (interfaces %s): Link must not run here" % interfaces)

    def remove(self):
        if self.made:
            subprocess.run(["ip", "netns", "del", self.name], capture_output=True)
            self.made = False


# MARK: An aalink peer

class LinkPeer:
    """Tests/Peers/link_peer.py: commands to its standard input, one JSON object a line back, read here as the
    listener's sockets are served (it is a member for jam_clock_bench.pump)."""

    def __init__(self, name, python, tempo, quantum, processes):
        self.name = name
        self.process = subprocess.Popen([python, LINK_PEER, "--bpm", "%g" % tempo, "--quantum", "%g" % quantum],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        processes.started.append(self.process)
        self.buffer, self.objects = b"", []

    def sockets(self):
        return [self.process.stdout]

    def readable(self, stream):
        data = os.read(stream.fileno(), 1 << 20)
        if not data:
            raise SystemExit("aalink peer %s ended (status %s)" % (self.name, self.process.poll()))
        self.buffer += data
        *lines, self.buffer = self.buffer.split(b"\n")
        self.objects += [json.loads(line) for line in lines if line.strip()]

    def send(self, command):
        self.process.stdin.write((command + "\n").encode())
        self.process.stdin.flush()

    def answer(self, event, since):
        return next((o for o in self.objects[since:] if o.get("event") == event), None)


def ask(members, peers, command, seconds=10):
    """Sends `command` to each of `peers` at once and serves `members` until each has answered: their answers."""
    event = command.split()[0]
    since = [len(peer.objects) for peer in peers]
    for peer in peers:
        peer.send(command)
    deadline = mono() + int(seconds * 1e9)
    while mono() < deadline:
        answers = [peer.answer(event, index) for peer, index in zip(peers, since)]
        if all(answers):
            return answers
        bench.pump(members, mono() + 1_000_000)
    raise SystemExit("no answer to '%s' from %s" % (command.split()[0], [p.name for p in peers]))


def wait_until(members, condition, seconds, what):
    deadline = mono() + int(seconds * 1e9)
    while not condition():
        if mono() > deadline:
            raise SystemExit("waited %g s in vain for %s" % (seconds, what))
        bench.pump(members, mono() + 50_000_000)


# MARK: The songs heard

def song(listener):
    """[(k, arrival ns, scheduled ns)] of the ticks from the first Start (or Continue) to the Stop after it, and the
    Start's arrival. A tick's scheduled instant is its RTP timestamp (100 us quanta, the session clock is
    CLOCK_MONOTONIC), unwrapped near its arrival, plus half a quantum."""
    stream = listener.stream()
    begin = next((i for i, (_, _, status) in enumerate(stream) if status in (START, CONTINUE)), None)
    if begin is None:
        return [], None, None
    ticks, wrap = [], (1 << 32) * TICK_NS
    for arrival, stamp, status in stream[begin + 1:]:
        if status == STOP:
            break
        if status == CLOCK:
            scheduled = stamp * TICK_NS
            scheduled += round((arrival - scheduled) / wrap) * wrap
            ticks.append((len(ticks), arrival, scheduled + TICK_NS // 2))
    return ticks, stream[begin][0], stream[begin][2]


def grid_offset_ms(beat, index, tempo, quantum):
    past = beat - index / 24
    return (past - round(past / quantum) * quantum) * 60_000 / tempo


def phase_ms(difference, tempo, quantum):
    return (difference - round(difference / quantum) * quantum) * 60_000 / tempo


def tick_grid(rows, tempo):
    """The instants jambridge scheduled the ticks for, {k: ns}, and the uncertainty (ns), or (None, why): while the
    tempo holds every tick k lies on anchor + k x period, and its 100 us RTP stamp (the floor of its instant) bounds
    the anchor; the bounds of all the ticks together pin it (jam_clock_bench.scheduled_instants, by k)."""
    period = 60e9 / (tempo * 24)
    stamps = [(k, when - TICK_NS // 2) for k, _, when, _, _ in rows]
    low = max(stamp - k * period for k, stamp in stamps)
    high = min(stamp + TICK_NS - k * period for k, stamp in stamps)
    if low > high:
        return None, "the RTP stamps do not lie on one %.1f us grid (%.1f us apart)" % (period / 1000, (low - high) / 1000)
    anchor = (low + high) / 2
    return {k: anchor + k * period for k, _ in stamps}, (high - low) / 2


def figures(label, values, unit="ms"):
    """One line: count, mean |.|, p50 / p99 of |.|, max |.|, signed mean."""
    magnitudes = [abs(v) for v in values]
    if not values:
        print("%-44s no samples" % label)
        return
    print("%-44s %5d  mean |.| %.3f %s, p50 %.3f, p99 %.3f, max %.3f %s; signed mean %+.3f %s"
          % (label, len(values), statistics.fmean(magnitudes), unit, percentile(magnitudes, 50),
             percentile(magnitudes, 99), max(magnitudes), unit, statistics.fmean(values), unit))


def bursts(instants, gap_ns=200_000_000):
    """Groups instants (sorted) less than `gap_ns` apart: [[instant, ...], ...]."""
    groups = []
    for instant in sorted(instants):
        if groups and instant - groups[-1][-1] < gap_ns:
            groups[-1].append(instant)
        else:
            groups.append([instant])
    return groups


# MARK: The run

def run(arguments):
    tempo, quantum = arguments.tempo, arguments.quantum
    namespace = Namespace()
    directory = tempfile.mkdtemp(prefix="link-bench-")
    processes = bench.Processes(arguments.jambridge, directory, [])
    decoder = bench.Decoder()
    previous = {sig: signal.signal(sig, lambda number, _: sys.exit(128 + number)) for sig in (signal.SIGTERM, signal.SIGHUP)}
    steal_before, load_before = bench.stolen_and_load()
    asks = []  # (asked at, {instant ns: (beat 1, beat 2)}) of each question pair
    try:
        namespace.enter()
        processes.load(arguments.load)
        canary = bench.start_canary(processes)
        peers = [LinkPeer("aalink-%d" % n, arguments.python, tempo, quantum, processes) for n in (1, 2)]
        members = list(peers)
        wait_until(members, lambda: all(peer.answer("enabled", 0) for peer in peers), 10, "the aalink peers")
        base = bench.free_base_port()
        daemons = {}
        for name, port in (("a", base), ("b", base + 2)):
            daemons[name] = processes.jambridge(name, "session: { name: link-%s, port: %d, bind: 127.0.0.1, advertise: "
                                                      "false }\nclock: { tempo: %g, link: { quantum: %g } }\n"
                                                % (name, port, tempo, quantum))

        def link_of(daemon):
            text = processes.control(daemon, "status", "--json", serving=(members, None))
            try:
                return (json.loads(text).get("jam") or {}).get("link") or {}
            except ValueError:
                return {}
        wait_until(members, lambda: all(link_of(daemon).get("peers") == 3 for daemon in daemons.values()), 20,
                   "both jambridge instances to see 3 other Link peers")
        # Which tempo two sessions keep when they meet is Link's choice: the tempo is set once all see each other.
        ask(members, peers[:1], "tempo %g" % tempo)
        wait_until(members, lambda: all(state["peers"] == 3 and abs(state["tempo"] - tempo) < 1e-6
                                        for state in ask(members, peers, "state")), 10, "the aalink peers at %g BPM" % tempo)
        listeners = [bench.Listener("bench-listener-%s" % name, port, decoder) for name, port in (("a", base), ("b", base + 2))]
        for listener in listeners:
            listener.join()
        members = listeners + peers
        bench.pump(members, mono() + int(arguments.settle * 1e9))
        statuses = {}
        for name, daemon in daemons.items():
            link = statuses[name] = link_of(daemon)
            if link.get("peers") != 3 or abs(link.get("tempo", 0) - tempo) > 1e-6:
                raise SystemExit("%s's Link: %s" % (name, link))

        asked = [0, 0]  # records of each listener already asked about

        def question():
            instants = []
            for i, listener in enumerate(listeners):
                for arrival, _, commands in listener.records[asked[i]:]:
                    if any(status in (CLOCK, START, CONTINUE, STOP) for _, status in commands):
                        instants.append(arrival)
                asked[i] = len(listener.records)
            now = mono()
            instants.append(now)
            answers = ask(members, peers, "beats " + " ".join("%.9f" % (t / 1e9) for t in instants))
            for answer in answers:
                if abs(answer["tempo"] - tempo) > 1e-6:
                    raise SystemExit("the tempo moved to %s during the run" % answer["tempo"])
            asks.append((now, dict(zip(instants, zip(answers[0]["beats"], answers[1]["beats"])))))

        played = ask(members, peers[:1], "play")[0]
        print("# aalink peer 1 plays at %.6f (beat %.3f)" % (played["t"], played["beat"]))
        started = mono()
        end = started + int(arguments.seconds * 1e9)
        due = started + int(arguments.ask_every * 1e9)
        while due < end:
            bench.pump(members, due)
            question()
            due += int(arguments.ask_every * 1e9)
        bench.pump(members, end)
        question()
        ask(members, peers[:1], "stop")
        wait_until(members, lambda: all(any(status == STOP for _, _, status in listener.stream()) for listener in listeners),
                   5, "the Stop at both sessions")
        bench.pump(members, mono() + 200_000_000)
        for listener in listeners:
            listener.leave()
        steal_after, load_after = bench.stolen_and_load()
        canary_worst, stalls = bench.canary_result(canary)
    finally:
        processes.end()
        namespace.remove()
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    # The machine and the instances.
    bench.print_machine(load_before, load_after, steal_after - steal_before, arguments.load, canary_worst, stalls)
    for name in daemons:
        log = processes.log(name)
        priority = [line.split("] ", 1)[-1] for line in log.splitlines() if "clock thread runs" in line]
        start = [line.split("] ", 1)[-1] for line in log.splitlines() if "the Link session started" in line]
        print("# %s: %s; %s; Link before the start: %d peers, %g BPM"
              % (name.upper(), priority[0] if priority else "no clock thread line",
                 start[0] if start else "NO START FROM LINK", statuses[name]["peers"], statuses[name]["tempo"]))
    beats = {}
    for _, answered in asks:
        beats.update(answered)
    songs = {}
    for name, listener in zip(("a", "b"), listeners):
        ticks, start_arrival, start_status = song(listener)
        songs[name] = [(k, arrival, scheduled, beats[arrival][0], beats[arrival][1])
                       for k, arrival, scheduled in ticks if arrival in beats]
        if start_status != START:
            print("# %s: the song began with %s, not a Start" % (name.upper(), "nothing" if start_status is None else
                                                                 "a Continue"))
        if start_arrival in beats:
            beat = beats[start_arrival][0]
            print("# %s's Start heard at Link's beat %.4f: %+.3f ms off the bar line"
                  % (name.upper(), beat, phase_ms(beat, tempo, quantum)))
    print("ticks heard with Link's beat: A %d, B %d (%.0f s at %g BPM, quantum %g); questions to the aalink peers %d; "
          "pymidi decode fallbacks %d, unstamped %d"
          % (len(songs["a"]), len(songs["b"]), arguments.seconds, tempo, quantum, len(asks), decoder.fallbacks,
             sum(listener.unstamped for listener in listeners)))
    for name in ("a", "b"):
        if len(songs[name]) < 24:
            raise SystemExit("%s: %d ticks heard; log:\n%s" % (name.upper(), len(songs[name]), processes.log(name)))

    # a. Link's beat against each instance's clock output.
    offsets = {}
    for name in ("a", "b"):
        offsets[name] = {k: grid_offset_ms(beat, k, tempo, quantum) for k, _, _, beat, _ in songs[name]}
        figures("Link (aalink 1) vs %s's ticks (arrival)" % name.upper(), list(offsets[name].values()))
        figures("Link (aalink 2) vs %s's ticks (arrival)" % name.upper(),
                [grid_offset_ms(beat2, k, tempo, quantum) for k, _, _, _, beat2 in songs[name]])
        scheduled = [grid_offset_ms(beat - (arrival - when) * tempo / 60e9, k, tempo, quantum)
                     for k, arrival, when, beat, _ in songs[name]]
        figures("Link (aalink 1) vs %s's scheduled instants" % name.upper(), scheduled)
        late = [(arrival - when) / 1e6 for _, arrival, when, _, _ in songs[name]]
        print("%-44s %5d  p50 %.3f ms, p99 %.3f, max %.3f ms (0.05 ms RTP quantum)"
              % ("%s: arrival - scheduled instant" % name.upper(), len(late), percentile(late, 50), percentile(late, 99),
                 max(late)))

    # a'. Each instance's tick grid (its timeline, to a few microseconds) against Link's beats.
    grids = {}
    for name in ("a", "b"):
        grids[name], uncertainty = tick_grid(songs[name], tempo)
        if grids[name] is None:
            print("%-44s %s" % ("Link (aalink 1) vs %s's tick grid" % name.upper(), uncertainty))
            continue
        grid_offsets = [grid_offset_ms(beat - (arrival - grids[name][k]) * tempo / 60e9, k, tempo, quantum) * 1000
                        for k, arrival, _, beat, _ in songs[name]]
        print("%-44s %5d  the grid fitted to +-%.1f us; offset mean %+.1f us, from %+.1f to %+.1f us over the run"
              % ("Link (aalink 1) vs %s's tick grid" % name.upper(), len(grid_offsets), uncertainty / 1000,
                 statistics.fmean(grid_offsets), min(grid_offsets), max(grid_offsets)))

    # b. The two instances against each other.
    arrivals = {name: {k: arrival for k, arrival, _, _, _ in songs[name]} for name in ("a", "b")}
    common = sorted(set(arrivals["a"]) & set(arrivals["b"]))
    figures("B vs A, same tick index (arrival)", [(arrivals["b"][k] - arrivals["a"][k]) / 1e6 for k in common])
    if grids["a"] and grids["b"]:
        apart = [(grids["b"][k] - grids["a"][k]) / 1000 for k in common]
        print("%-44s %5d  %+.1f us (B's grid - A's, each fitted to a few us)" % ("B vs A, tick grids", len(apart),
                                                                               statistics.fmean(apart)))

    # c. Link's own agreement: the two aalink peers at the same instants.
    per_instant = [phase_ms(b1 - b2, tempo, quantum) for _, answered in asks for b1, b2 in answered.values()]
    per_question = [phase_ms(b1 - b2, tempo, quantum) for _, answered in asks
                    for b1, b2 in [answered[max(answered)]]]
    figures("aalink 1 vs 2, same instants (each instant)", per_instant)
    figures("aalink 1 vs 2, same instants (each question)", per_question)

    # The ticks far off Link: in bursts? at both instances at once? the machine?
    threshold = arguments.late
    for name, other in (("a", "b"), ("b", "a")):
        by_k = {k: (arrival, when) for k, arrival, when, _, _ in songs[name]}
        far = sorted(k for k, offset in offsets[name].items() if abs(offset) > threshold)
        if not far:
            print("%s: no tick over %.1f ms off Link" % (name.upper(), threshold))
            continue
        both = [k for k in far if abs(offsets[other].get(k, 0)) > threshold / 2]
        groups = bursts([by_k[k][0] for k in far])
        stalled = bench.coincide([(by_k[k][1], by_k[k][0] - by_k[k][1]) for k in far], stalls)
        near_question = sum(1 for k in far if any(0 <= by_k[k][0] - at <= 20_000_000 for at, _ in asks))
        print("%s: %d ticks over %.1f ms off Link, in %d bursts (ticks < 0.2 s apart); %s's tick of the same index over "
              "%.2f ms off too: %d; during a canary stall: %d; within 20 ms after a question to the peers: %d"
              % (name.upper(), len(far), threshold, len(groups), other.upper(), threshold / 2, len(both), stalled,
                 near_question))
        worst = sorted(far, key=lambda k: -abs(offsets[name][k]))[:8]
        print("  the farthest: %s" % ", ".join("k %d %+.2f ms (%s %+.2f, sent %.2f ms after its instant)"
                                                % (k, offsets[name][k], other.upper(), offsets[other].get(k, float("nan")),
                                                   (by_k[k][0] - by_k[k][1]) / 1e6) for k in worst))
    if arguments.keep:
        for name in ("a", "b"):
            with open(os.path.join(directory, "ticks-%s.txt" % name), "w") as file:
                for k, arrival, when, beat, beat2 in songs[name]:
                    file.write("%d %d %d %.9f %.9f\n" % (k, arrival, when, beat, beat2))
        with open(os.path.join(directory, "stalls.txt"), "w") as file:
            for due, stall in stalls:
                file.write("%d %d\n" % (due, stall))
        print("# kept %s" % directory)
    else:
        shutil.rmtree(directory, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jambridge", required=True, help="the jambridge binary (a release build)")
    parser.add_argument("--python", default=os.path.join(ROOT, ".build-peers", "venv", "bin", "python"),
                        help="the Python with aalink, for the Link peers")
    parser.add_argument("--seconds", type=float, default=60, help="how long the song plays")
    parser.add_argument("--tempo", type=float, default=128)
    parser.add_argument("--quantum", type=float, default=4)
    parser.add_argument("--load", type=lambda text: [int(c) for c in text.split(",") if c != ""], default=[],
                        help="CPUs to keep busy with a spinning process each, such as 1 (the other core loaded)")
    parser.add_argument("--ask-every", type=float, default=0.5, help="seconds between questions to the aalink peers")
    parser.add_argument("--settle", type=float, default=2, help="seconds with the listener joined before the start")
    parser.add_argument("--late", type=float, default=1.0, help="ms off Link above which a tick is listed")
    parser.add_argument("--keep", action="store_true", help="keep route files, logs and the ticks")
    arguments = parser.parse_args()
    if os.geteuid() != 0:
        parser.error("run as root (network namespaces)")
    if not os.access(arguments.python, os.X_OK):
        parser.error("no %s: run scripts/install-deps.sh" % arguments.python)
    run(arguments)


if __name__ == "__main__":
    main()
