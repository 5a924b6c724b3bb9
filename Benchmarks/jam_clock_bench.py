#!/usr/bin/env python3
"""The jam's clock against issue 13's targets, measured from outside jambridge, on 127.0.0.1 only.

  jitter   One jambridge (`clock: {}`, a session) is told `jambridge start`; a listener joins its session and
           stamps every packet with the kernel's receive time (SO_TIMESTAMPNS, moved onto CLOCK_MONOTONIC).
           Prints the tick intervals' standard deviation and largest deviation from the nominal period, and
           each tick's lateness against the instant it was scheduled for (recovered from the RTP timestamps,
           which carry the scheduled instants: every tick k lies on anchor + k x period, and the 100 us stamps
           of a minute of ticks pin the anchor to a few microseconds).
  follow   Three jambridge instances: A leads (`clock: {}`), B follows it (`clock: { to: [listener] }`, ticks
           regenerated from its timeline) and C relays A's clock to its listener as it arrives (no `clock:`:
           a plain route, the "immediate" follower). A reaches B and C through relays in this process that
           delay every datagram, both ways, by a uniform random 0..MAX ms (`--delay all`; `--delay rtp` delays
           only A's RTP packets and leaves clock sync exact, as Tests' LossyRelay does) and lose --loss of the RTP
           packets. Three listeners, one
           per instance, stamp what each instance plays on one clock. Prints B's and C's tick and beat times
           against A's, the CK offset B reads A's timestamps through (emulated from the CK packets the relay
           saw: both instances share CLOCK_MONOTONIC, so the true offset is 0) and B's timeline as its RTP
           timestamps say it.
  busy     The clock with the engine busy (issue 30): one jambridge leads (`clock: {}`) while a load generator
           sends --rate MIDI-over-OSC messages a second (bundles of --batch) through its router to a session
           peer, an OSC output and (--alsa-channels) an ALSA output that blocks: jambridge runs with --standin
           (Benchmarks/clock-under-load/alsa_seq_standin.c) preloaded in place of libasound's sequencer, a client
           output pool (--pool) that a destination empties at --baud and stops emptying for --stall-ms every
           --every-ms, so that jambridge's own ALSA output meets a full pool (before issue 30's fix its
           waitForOutputRoom waited for room on the engine's queue; now the port retries from a timer). Beside
           it, in the same seconds, --bare (Benchmarks/clock-under-load/bare_clock.c) sleeps at the same
           SCHED_FIFO priority with clock_nanosleep(TIMER_ABSTIME) to the same deadlines (the tick grid
           recovered from the first --skip seconds of RTP stamps). Prints both side by side, the ticks over
           0.5 ms late that the bare thread also saw, and the rate the router carried. With --drums (issue 42)
           the same jambridge plays drums (built-in rock, a level kept) along the jam, their notes routed to the
           listener too: each hit against the instant it was meant for (its step's tick on the jam's grid, moved
           by the style's humanize shift replayed from the seed, checked against its RTP stamp), beside the bare
           thread, and the hits over 0.5 ms late the bare thread also saw.
           Benchmarks/clock-under-load.sh runs it.

The listeners are AppleMIDI initiators built from Tests/Peers/applemidi.py (handshakes by hand) and decode
RTP-MIDI with PyPI pymidi's packet parser, which nobody here wrote, checked against a hand-written decoder that is
taken where the two differ (counted as fallbacks: pymidi misreads packets of several commands with a clock tick).
A real-time canary per CPU (SCHED_FIFO 19, waking every 2 ms) tells late ticks that jambridge made from stalls
of the machine. Route files use `bind: 127.0.0.1` and `advertise: false`; status files and control sockets go
to a temporary JAMBRIDGE_STATUS_DIR (removed afterwards unless --keep). Every process this starts is ended by
its PID.
"""
import argparse
import heapq
import json
import math
import os
import random
import select
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "Tests", "Peers"))
import applemidi  # noqa: E402
from pymidi import packets  # noqa: E402

SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
SO_RXQ_OVFL = getattr(socket, "SO_RXQ_OVFL", 40)
TICK_NS = 100_000  # the RTP-MIDI session clock's tick (10 kHz)
CLOCK, START, CONTINUE, STOP = 0xF8, 0xFA, 0xFB, 0xFC


def mono():
    return time.monotonic_ns()  # CLOCK_MONOTONIC, as jambridge's MonotonicInstant


def period_ns(bpm):
    return 60e9 / (bpm * 24)


# MARK: Decoding RTP-MIDI

def decode_by_hand(datagram, with_data=False):
    """(timestamp, sequence, [(delta, status)]) of an RTP-MIDI packet: status bytes of the commands only; with
    `with_data`, [(delta, status, data bytes)]."""
    sequence, timestamp = struct.unpack(">HI", datagram[2:8])
    flags = datagram[12]
    length, at = (flags & 0x0F, 13) if not flags & 0x80 else (((flags & 0x0F) << 8) | datagram[13], 14)
    end, commands, delta, status, first = at + length, [], 0, 0, True
    while at < end:
        if not first or flags & 0x20:
            delta = 0
            while True:
                byte = datagram[at]
                at += 1
                delta = (delta << 7) | (byte & 0x7F)
                if not byte & 0x80:
                    break
        first = False
        if datagram[at] & 0x80:
            status = datagram[at]
            at += 1
        if status >= 0xF8 or status in (0xF6,):
            commands.append((delta, status, b"") if with_data else (delta, status))
            continue
        high = status & 0xF0
        size = {0xC0: 1, 0xD0: 1, 0xF1: 1, 0xF3: 1, 0xF2: 2}.get(high if high != 0xF0 else status, 2)
        commands.append((delta, status, bytes(datagram[at:at + size])) if with_data else (delta, status))
        at += size
    return timestamp, sequence, commands


class Decoder:
    """pymidi's reading of each packet, checked against the hand-written one: where pymidi fails or reads the
    command list differently, the hand-written reading is taken and counted in `fallbacks`. pymidi 0.5.0 reads
    only a few journal forms, reads delta times low group first (RTP-MIDI writes them high group first) and gives
    each command two data bytes, so it silently stops after the first command of a packet that has a system
    real-time message (Start, a clock tick) followed by others: the master's Start, its first tick and the total,
    or ticks sent together after a late wake-up.

    `check` (None: every packet) picks, from the hand-written reading of a packet's commands [(delta, status,
    data)], the packets pymidi reads too; the others are read by hand only (counted in `unchecked`). pymidi (PyPI
    `construct` underneath) took 1.3 ms of CPU for a packet of 10 notes (0.35 ms for one) on the 2-core VM of
    2026-12-02: the busy scenario's 1,000 such packets a second to the listener took more than a core, the listener
    fell further behind every second, sent no clock sync for a minute and its session dropped it (the run ended
    with "cannot recover the tick grid ... 0 ticks"). So there `check` picks the packets the figures come from (a
    system message: the jam's ticks and transport; with --drums, a drums' note), and packets of the load's notes
    alone are read by hand only (16 us each)."""

    def __init__(self, check=None):
        self.fallbacks = 0
        self.check = check
        self.checked = self.unchecked = 0

    def decode(self, datagram, with_data=False):
        """(timestamp, sequence, [(delta, status)]); with `with_data`, [(delta, status, data bytes)], the notes' data
        pymidi's where it reads the packet as the hand-written decoder does (else the hand-written one's, counted)."""
        read = decode_by_hand(datagram, True)
        by_hand = read if with_data else (read[0], read[1], [command[:2] for command in read[2]])
        if self.check is not None and not self.check(read[2]):
            self.unchecked += 1
            return by_hand
        self.checked += 1
        try:
            packet = packets.MIDIPacket.parse(datagram)
            entries = list(packet.command.midi_list)
            commands = [(entry.delta_time or 0, int(entry.command_byte)) for entry in entries]
        except Exception:  # pymidi reads only a few journal forms
            self.fallbacks += 1
            return by_hand
        if commands != [command[:2] for command in by_hand[2]]:
            self.fallbacks += 1
            return by_hand
        if with_data:
            # pymidi's note data where it has some (note on and off); the other commands' data as read by hand.
            data = []
            for entry, (_, status, bytes_by_hand) in zip(entries, by_hand[2]):
                if status & 0xE0 == 0x80:  # note off 0x8n, note on 0x9n
                    data.append(bytes((int(entry.params.key), int(entry.params.velocity))))
                else:
                    data.append(bytes_by_hand)
            if data != [command[2] for command in by_hand[2]]:
                self.fallbacks += 1
                return by_hand
            commands = [command + (bytes_of,) for command, bytes_of in zip(commands, data)]
        return packet.header.timestamp, packet.header.rtp_header.sequence_number, commands


# MARK: A session member that records what it is sent

def realtime_offset():
    """CLOCK_REALTIME - CLOCK_MONOTONIC in ns, from two real-time reads around a monotonic one that came close
    together (a read interrupted by the scheduler would move every arrival by the interruption)."""
    best = None
    for _ in range(50):
        before, middle, after = time.time_ns(), mono(), time.time_ns()
        if best is None or after - before < best[0]:
            best = (after - before, (before + after) // 2 - middle)
        if after - before < 2_000:
            break
    return best[1]


class Listener:
    """Joins the jambridge session on `port` (it invites), keeps the session alive with CK, and records every
    RTP-MIDI packet it gets: (arrival on CLOCK_MONOTONIC from the kernel's stamp, RTP timestamp, commands).
    `count_only`: a sink that only counts the RTP-MIDI packets and their bytes (no decoding, nothing kept);
    `with_data`: the commands' data bytes are kept too (`notes`)."""

    def __init__(self, name, port, decoder, count_only=False, with_data=False):
        self.name, self.port, self.decoder, self.count_only = name, port, decoder, count_only
        self.with_data = with_data
        self.packets, self.bytes = 0, 0
        self.control, self.data = applemidi.port_pair()
        for sock in (self.control, self.data):
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            sock.setsockopt(socket.SOL_SOCKET, SO_RXQ_OVFL, 1)
            try:  # as root, past net.core.rmem_max: seconds of notes if Python falls behind
                sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 32 << 20)
            except PermissionError:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self.dropped = 0  # datagrams the kernel dropped at its sockets (receive buffer full), SO_RXQ_OVFL
        self.token, self.ssrc = random.randint(1, 2 ** 32 - 1), random.randint(1, 2 ** 32 - 1)
        self.records = []  # (arrival_ns, rtp_timestamp, [(delta, status)] or, with_data, [(delta, status, data)])
        self.next_sync, self.next_feedback, self.last_sequence = 0, 0, None
        self.unstamped = 0
        self.realtime_offset = realtime_offset()

    def join(self):
        for sock, port in ((self.control, self.port), (self.data, self.port + 1)):
            sock.sendto(applemidi.handshake(applemidi.IN, self.token, self.ssrc, self.name), ("127.0.0.1", port))
            if applemidi.answer(sock) != "OK":
                raise SystemExit("%s: jambridge on port %d did not accept the invitation" % (self.name, port))
        for sock in (self.control, self.data):
            sock.setblocking(False)

    def sockets(self):
        return [self.control, self.data]

    def readable(self, sock):
        while True:
            try:
                datagram, ancillary, _, _ = sock.recvmsg(65536, 256)
            except BlockingIOError:
                return
            arrival, stamped = mono(), False
            for level, kind, value in ancillary:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                    seconds, nanoseconds = struct.unpack("qq", value[:16])
                    arrival = seconds * 1_000_000_000 + nanoseconds - self.realtime_offset
                    stamped = True
                elif level == socket.SOL_SOCKET and kind == SO_RXQ_OVFL:
                    self.dropped = max(self.dropped, struct.unpack("I", value[:4])[0])
            if not stamped:
                self.unstamped += 1
            if datagram[:2] == b"\xff\xff":
                self.session_packet(sock, datagram)
            elif len(datagram) >= 13 and datagram[0] & 0xC0 == 0x80 and self.count_only:
                self.last_sequence = struct.unpack(">H", datagram[2:4])[0]
                self.packets += 1
                self.bytes += len(datagram)
            elif len(datagram) >= 13 and datagram[0] & 0xC0 == 0x80:
                timestamp, sequence, commands = self.decoder.decode(datagram, self.with_data)
                self.last_sequence = sequence
                self.records.append((arrival, timestamp, commands))

    def session_packet(self, sock, datagram):
        if datagram[2:4] != b"CK" or len(datagram) < 36:
            return
        count = datagram[8]
        ts1, ts2, _ = struct.unpack(">QQQ", datagram[12:36])
        now = mono() // TICK_NS
        if count == 0:
            self.send_ck(1, ts1, now, 0)
        elif count == 1:
            self.send_ck(2, ts1, ts2, now)

    def send_ck(self, count, ts1, ts2, ts3):
        packet = struct.pack(">HHIB3xQQQ", 0xFFFF, 0x434B, self.ssrc, count, ts1, ts2, ts3)
        self.data.sendto(packet, ("127.0.0.1", self.port + 1))

    def housekeeping(self, now):
        """CK every 2 s (a peer that invited is dropped after `timeout` without one); RS every second; the
        offset of the kernel's (real-time) stamps to CLOCK_MONOTONIC measured again with each CK."""
        if now >= self.next_sync:
            self.realtime_offset = realtime_offset()
        if now >= self.next_sync:
            self.send_ck(0, now // TICK_NS, 0, 0)
            self.next_sync = now + 2_000_000_000
        if now >= self.next_feedback and self.last_sequence is not None:
            packet = struct.pack(">HHIHH", 0xFFFF, 0x5253, self.ssrc, self.last_sequence, 0)
            self.control.sendto(packet, ("127.0.0.1", self.port))
            self.next_feedback = now + 1_000_000_000
        return min(self.next_sync, self.next_feedback if self.last_sequence is not None else self.next_sync)

    def leave(self):
        self.control.sendto(applemidi.handshake(applemidi.BY, self.token, self.ssrc), ("127.0.0.1", self.port))

    def stream(self):
        """[(arrival, rtp_timestamp + deltas, status)] of every command, in arrival order (a command's delta time
        counts from the command before it, RFC 6295)."""
        result = []
        for arrival, timestamp, commands in self.records:
            for command in commands:
                timestamp += command[0]
                result.append((arrival, timestamp, command[1]))
        return result

    def notes(self, status):
        """[(arrival, rtp_timestamp + deltas, note, velocity)] of every command with the status byte `status` (such
        as 0x99, a note-on on channel 10), in arrival order; needs `with_data`."""
        result = []
        for arrival, timestamp, commands in self.records:
            for delta, kind, data in commands:
                timestamp += delta
                if kind == status and len(data) == 2:
                    result.append((arrival, timestamp, data[0], data[1]))
        return result


# MARK: A bad network

class Relay:
    """Stands between A (which invites the relay's front ports) and the session on `target` (B or C): every
    datagram is sent on after a uniform random delay of 0..`max_delay` ns (mode `all`), or only A's RTP packets
    are (mode `rtp`). Logs every CK packet it sends on, for the offset the far side reads A's clock through."""

    def __init__(self, target, max_delay, mode, rng, scheduler, loss=0.0):
        self.target, self.max_delay, self.mode, self.rng, self.scheduler = target, max_delay, mode, rng, scheduler
        self.loss, self.dropped = loss, 0
        self.front, self.back = applemidi.port_pair(), applemidi.port_pair()
        for sock in self.front + self.back:
            sock.setblocking(False)
        self.senders = {}
        self.ck_log = []  # (sent_ns, direction "AB"/"BA", count, ts1, ts2, ts3)
        self.forwarded = {"AB": 0, "BA": 0}
        self.rtp_log = []  # (received_ns, sent_ns, sequence) of A's RTP packets

    @property
    def control_port(self):
        return self.front[0].getsockname()[1]

    def sockets(self):
        return list(self.front) + list(self.back)

    def readable(self, sock):
        while True:
            try:
                datagram, sender = sock.recvfrom(65536)
            except BlockingIOError:
                return
            now = mono()
            if sock in self.front:
                index = self.front.index(sock)
                self.senders[index] = sender
                out, to, direction = self.back[index], ("127.0.0.1", self.target + index), "AB"
            else:
                index = self.back.index(sock)
                if index not in self.senders:
                    continue
                out, to, direction = self.front[index], self.senders[index], "BA"
            if datagram[:1] == b"\x80" and self.rng.random() < self.loss:
                self.dropped += 1  # an RTP packet lost, either way
                continue
            delayed = self.mode == "all" or (direction == "AB" and datagram[:1] != b"\xff" and index == 1)
            delay = int(self.rng.uniform(0, self.max_delay)) if delayed else 0
            self.scheduler.at(now + delay, lambda out=out, datagram=datagram, to=to, direction=direction, now=now:
                              self.send(out, datagram, to, direction, now))

    def send(self, sock, datagram, to, direction, received):
        sock.sendto(datagram, to)
        self.forwarded[direction] += 1
        if direction == "AB" and datagram[:1] != b"\xff" and len(datagram) >= 12:
            self.rtp_log.append((received, mono(), struct.unpack(">H", datagram[2:4])[0], datagram[12:16].hex()))
        if datagram[:4] == b"\xff\xffCK" and len(datagram) >= 36:
            self.ck_log.append((mono(), direction, datagram[8]) + struct.unpack(">QQQ", datagram[12:36]))


class Scheduler:
    def __init__(self):
        self.heap, self.count = [], 0

    def at(self, when, action):
        self.count += 1
        heapq.heappush(self.heap, (when, self.count, action))

    def run_due(self, now):
        while self.heap and self.heap[0][0] <= now:
            heapq.heappop(self.heap)[2]()
        return self.heap[0][0] if self.heap else None


def pump(members, until, scheduler=None):
    """Serves the listeners' and relays' sockets and the relays' schedule until `until` (CLOCK_MONOTONIC ns)."""
    owners = {sock: member for member in members for sock in member.sockets()}
    socks = list(owners)
    while True:
        now = mono()
        if now >= until:
            return
        wake = until
        if scheduler:
            due = scheduler.run_due(now)
            wake = min(wake, due) if due else wake
        for member in members:
            if isinstance(member, Listener):
                wake = min(wake, member.housekeeping(now))
        timeout = max(0, wake - mono()) / 1e9
        ready, _, _ = select.select(socks, [], [], timeout)
        for sock in ready:
            owners[sock].readable(sock)


# MARK: Processes

class Processes:
    """The jambridge instances and load loops this run started; `end` ends each by its PID."""

    def __init__(self, binary, directory, prefix):
        self.binary, self.directory, self.prefix = binary, directory, prefix
        self.env = dict(os.environ, JAMBRIDGE_STATUS_DIR=os.path.join(directory, "status"))
        self.started = []

    def jambridge(self, name, routes, env=None):
        """Starts `jambridge run` on `routes` (with `env` added to its environment) and waits until it listens."""
        path = os.path.join(self.directory, name + ".yaml")
        with open(path, "w") as file:
            file.write(routes)
        log = open(os.path.join(self.directory, name + ".log"), "w")
        process = subprocess.Popen(self.prefix + [self.binary, "run", path], stdout=log, stderr=subprocess.STDOUT,
                                   env=dict(self.env, **(env or {})))
        self.started.append(process)
        self.wait_for(name, "listening on UDP ports")
        return process

    def log(self, name):
        with open(os.path.join(self.directory, name + ".log")) as file:
            return file.read()

    def wait_for(self, name, text, seconds=10):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if text in self.log(name):
                return
            time.sleep(0.05)
        raise SystemExit("%s did not log '%s':\n%s" % (name, text, self.log(name)))

    def control(self, process, *command, serving=None):
        """Runs `jambridge COMMAND --pid PID`; `serving` (members, scheduler) are served meanwhile, so that the
        relays do not hold packets back while the command runs."""
        child = subprocess.Popen([self.binary, *command, "--pid", str(process.pid)], env=self.env,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 10
        while child.poll() is None and time.monotonic() < deadline:
            if serving:
                pump(serving[0], mono() + 2_000_000, serving[1])
            else:
                time.sleep(0.002)
        if child.poll() is None:
            child.kill()
        return child.communicate()[0].strip()

    def load(self, cpus):
        for cpu in cpus:
            process = subprocess.Popen(["taskset", "-c", str(cpu), sys.executable, "-c", "while True: pass"])
            self.started.append(process)

    def end(self):
        for process in reversed(self.started):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.started:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def free_base_port():
    """An even port p with p..p+5 free on 127.0.0.1 (three sessions' control and data ports)."""
    for _ in range(100):
        base = random.randrange(20000, 38000, 2)
        socks = []
        try:
            for port in range(base, base + 6):
                sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                socks.append(sock)
                sock.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for sock in socks:
                sock.close()
    raise SystemExit("no free ports")


# A real-time canary per CPU: wakes every 2 ms at SCHED_FIFO 19 (below jambridge's clock thread, 20) and notes
# when it woke more than 0.5 ms late, so that a late tick can be told from a machine that stalled (a shared VM's
# host taking a vCPU away, which shows as steal time too, or the kernel).
# With the arguments "other THRESHOLD_NS" it stays at normal priority (SCHED_OTHER), where jambridge's engine runs, and
# notes wake-ups later than the threshold: how long the scheduler left a normal thread waiting.
CANARY = r"""
import os, signal, sys, time
normal = len(sys.argv) > 1 and sys.argv[1] == "other"
threshold = int(sys.argv[2]) if len(sys.argv) > 2 else 500_000
if not normal:
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(19))
stopped = []
signal.signal(signal.SIGTERM, lambda *_: stopped.append(1))
period, worst, stalls = 2_000_000, 0, []
due = time.monotonic_ns() + period
while not stopped:
    time.sleep(max(0, due - time.monotonic_ns()) / 1e9)
    now = time.monotonic_ns()
    worst = max(worst, now - due)
    if now - due > threshold:
        stalls.append((due, now - due))
    due = max(due + period, now + period // 2)
print(worst, len(stalls))
for stall in stalls:
    print(*stall)
"""


def start_canary(processes):
    """One canary pinned to each CPU: a stall of one vCPU shows on its canary."""
    canaries = []
    for cpu in range(os.cpu_count()):
        process = subprocess.Popen(["taskset", "-c", str(cpu), sys.executable, "-c", CANARY],
                                   stdout=subprocess.PIPE, text=True)
        processes.started.append(process)
        canaries.append(process)
    return canaries


def start_normal_canary(processes, threshold):
    """One canary at normal priority, not pinned (as jambridge's engine threads): its wake-ups over `threshold` ns
    late."""
    process = subprocess.Popen([sys.executable, "-c", CANARY, "other", str(threshold)], stdout=subprocess.PIPE, text=True)
    processes.started.append(process)
    return [process]


def canary_result(canaries):
    """Stops the canaries: (worst lateness ns, [(due, lateness)]) of their stalls over 0.5 ms."""
    worst, stalls = 0, []
    for process in canaries:
        process.send_signal(signal.SIGTERM)
    for process in canaries:
        lines = process.communicate(timeout=30)[0].splitlines()
        worst = max(worst, int(lines[0].split()[0]))
        stalls += [tuple(map(int, line.split())) for line in lines[1:]]
    return worst, sorted(stalls)


def stolen_and_load():
    """CPU time the hypervisor took (steal, seconds, all cores) and the 1-minute load average."""
    fields = open("/proc/stat").readline().split()
    return int(fields[8]) / os.sysconf("SC_CLK_TCK"), float(open("/proc/loadavg").read().split()[0])


def print_machine(load_before, load_after, steal, load, canary_worst, stalls):
    """One line on how busy the machine was during a run."""
    print("# load average %.2f -> %.2f, steal %.2f s, busy loops on CPUs %s; canaries (SCHED_FIFO 19, 2 ms, one per "
          "CPU): worst wake-up %s us, %d stalls over 0.5 ms" % (load_before, load_after, steal, load or "none",
                                                               us(canary_worst), len(stalls)))


def coincide(lates, stalls, slack=2_000_000):
    """How many of `lates` [(instant, lateness)] overlap a canary stall (within `slack`)."""
    return sum(1 for instant, late in lates
               if any(due - slack <= instant + late and instant <= due + stall + slack for due, stall in stalls))


# MARK: Statistics

def percentile(values, p):
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, math.ceil(p / 100 * len(ordered)) - 1))
    return ordered[index]


def us(ns):
    return "%.1f" % (ns / 1000)


def ms(ns):
    return "%.2f" % (ns / 1e6)


def ticks_after_start(stream):
    """The clock ticks after the last Start or Continue (a Start overtaken by the tick after it is dropped as late
    and comes back from the journal as Continue): [(arrival, rtp_time_ns)]."""
    starts = [i for i, (_, _, status) in enumerate(stream) if status in (START, CONTINUE)]
    if not starts:
        return []
    stops = [i for i, (_, _, status) in enumerate(stream) if status == STOP and i > starts[-1]]
    end = stops[0] if stops else len(stream)
    return [(arrival, stamp * TICK_NS) for arrival, stamp, status in stream[starts[-1]:end] if status == CLOCK]


def scheduled_instants(ticks, period):
    """The instants the ticks were scheduled for: anchor + k x period, the anchor pinned by every tick's 100 us
    RTP stamp (floor of its instant). Returns (instants, uncertainty_ns) or (None, why) if they do not fit."""
    low = max(stamp - k * period for k, (_, stamp) in enumerate(ticks))
    high = min(stamp + TICK_NS - k * period for k, (_, stamp) in enumerate(ticks))
    if low > high:
        return None, "the RTP stamps do not lie on one %.1f us grid (%.1f us apart)" % (period / 1000, (low - high) / 1000)
    anchor = (low + high) / 2
    return [anchor + k * period for k in range(len(ticks))], (high - low) / 2


# MARK: Scenarios

def jitter(arguments):
    decoder = Decoder()
    base = free_base_port()
    directory = tempfile.mkdtemp(prefix="jam-clock-bench-")
    prefix = ["setpriv", "--inh-caps=-sys_nice", "--bounding-set=-sys_nice"] if arguments.no_rt else []
    processes = Processes(arguments.jambridge, directory, prefix)
    steal_before, load_before = stolen_and_load()
    try:
        processes.load(arguments.load)
        canary = start_canary(processes)
        a = processes.jambridge("a", "session: { name: jam-a, port: %d, bind: 127.0.0.1, advertise: false }\n"
                                     "clock: { tempo: %g }\n" % (base, arguments.tempo))
        listener = Listener("bench-listener", base, decoder)
        listener.join()
        pump([listener], mono() + 500_000_000)
        print("# start: %s" % processes.control(a, "start", serving=([listener], None)))
        pump([listener], mono() + int(arguments.seconds * 1e9))
        status = processes.control(a, "status", serving=([listener], None))
        processes.control(a, "stop", serving=([listener], None))
        pump([listener], mono() + 300_000_000)
        listener.leave()
        steal_after, load_after = stolen_and_load()
        canary_worst, stalls = canary_result(canary)
    finally:
        processes.end()
    print_machine(load_before, load_after, steal_after - steal_before, arguments.load, canary_worst, stalls)
    log = processes.log("a")
    priority = [line.split("] ", 1)[1] for line in log.splitlines() if "clock thread runs" in line]
    print("# %s" % (priority[0] if priority else "no clock thread line in the log"))
    print("# status: %s" % " | ".join(status.splitlines()[-1:]))
    period = period_ns(arguments.tempo)
    ticks = ticks_after_start(listener.stream())
    ticks = ticks[int(arguments.skip * 1e9 / period):]
    if len(ticks) < 10:
        raise SystemExit("only %d ticks heard; log:\n%s" % (len(ticks), log))
    arrivals = [arrival for arrival, _ in ticks]
    intervals = [b - a for a, b in zip(arrivals, arrivals[1:])]
    deviations = [interval - period for interval in intervals]
    instants, uncertainty = scheduled_instants(ticks, period)
    print("ticks %d (after the first %.1f s), pymidi decode fallbacks %d, unstamped %d"
          % (len(ticks), arguments.skip, decoder.fallbacks, listener.unstamped))
    print("interval at arrival: mean %s us (nominal %s), std %s us, max |deviation| %s us, p99 |deviation| %s us"
          % (us(statistics.fmean(intervals)), us(period), us(statistics.pstdev(intervals)),
             us(max(abs(d) for d in deviations)), us(percentile([abs(d) for d in deviations], 99))))
    stamp_intervals = [b - a for (_, a), (_, b) in zip(ticks, ticks[1:])]
    print("interval of the RTP stamps: min %s us, max %s us (100 us quantum)"
          % (us(min(stamp_intervals)), us(max(stamp_intervals))))
    if instants is None:
        print("lateness: %s" % uncertainty)
    else:
        lateness = [arrival - instant for arrival, instant in zip(arrivals, instants)]
        print("arrival - scheduled instant (anchor known to +-%s us): min %s us, p50 %s, p99 %s, p99.9 %s, max %s us, "
              "std %s us" % (us(uncertainty), us(min(lateness)), us(percentile(lateness, 50)),
                             us(percentile(lateness, 99)), us(percentile(lateness, 99.9)), us(max(lateness)),
                             us(statistics.pstdev(lateness))))
        lates = [(instant, late) for instant, late in zip(instants, lateness) if late > 500_000]
        print("ticks over 0.5 ms late: %d, of which %d during a canary stall" % (len(lates), coincide(lates, stalls)))
        calm = [interval - period for interval, before, after in zip(intervals, lateness, lateness[1:])
                if before <= 500_000 and after <= 500_000]
        print("intervals between ticks neither over 0.5 ms late (%d): std %s us, max |deviation| %s us"
              % (len(calm), us(statistics.pstdev(calm)), us(max(map(abs, calm)))))
    if arguments.keep:
        with open(os.path.join(directory, "ticks.txt"), "w") as file:
            for (arrival, stamp), instant in zip(ticks, instants or [0] * len(ticks)):
                file.write("%d %d %.0f\n" % (arrival, stamp, instant))
        print("# kept %s" % directory)
    else:
        shutil.rmtree(directory, ignore_errors=True)


def follow(arguments):
    decoder = Decoder()
    rng = random.Random(arguments.seed)
    base = free_base_port()
    directory = tempfile.mkdtemp(prefix="jam-clock-bench-")
    processes = Processes(arguments.jambridge, directory, [])
    scheduler = Scheduler()
    max_delay = int(arguments.max_delay * 1e6)
    relay_b = Relay(base + 2, max_delay, arguments.delay, rng, scheduler, arguments.loss)
    relay_c = Relay(base + 4, max_delay, arguments.delay, rng, scheduler, arguments.loss)
    relays = [relay_b, relay_c]
    steal_before, load_before = stolen_and_load()
    try:
        processes.load(arguments.load)
        canary = start_canary(processes)
        b = processes.jambridge("b", """\
session: { name: jam-b, port: %d, bind: 127.0.0.1, advertise: false }
endpoints:
  listener: { peer: bench-listener-b }
clock: { to: [listener] }
""" % (base + 2))
        c = processes.jambridge("c", """\
session: { name: jam-c, port: %d, bind: 127.0.0.1, advertise: false }
endpoints:
  master: { peer: jam-a }
  listener: { peer: bench-listener-c }
routes:
  - { from: master, to: listener }
""" % (base + 4))
        a = processes.jambridge("a", """\
session: { name: jam-a, port: %d, bind: 127.0.0.1, advertise: false,
           invite: [ { host: 127.0.0.1, port: %d }, { host: 127.0.0.1, port: %d } ] }
clock: { tempo: %g }
""" % (base, relay_b.control_port, relay_c.control_port, arguments.tempo))
        listeners = [Listener("bench-listener-%s" % name, port, decoder)
                     for name, port in (("a", base), ("b", base + 2), ("c", base + 4))]
        for listener in listeners:
            listener.join()
        members = listeners + relays
        # The relays must be served while A invites B and C through them; then CK settles (quick syncs).
        pump(members, mono() + int(arguments.settle * 1e9), scheduler)
        for name in ("b", "c"):
            if "peer 'jam-a' joined" not in processes.log(name):
                raise SystemExit("%s: jam-a has not joined:\n%s" % (name, processes.log(name)))
        started_at = mono()
        print("# start: %s" % processes.control(a, "start", serving=(members, scheduler)))
        pump(members, mono() + int(arguments.seconds * 1e9), scheduler)
        statuses = {name: processes.control(p, "status", serving=(members, scheduler)).splitlines()[-1]
                    for name, p in (("a", a), ("b", b))}
        processes.control(a, "stop", serving=(members, scheduler))
        pump(members, mono() + 500_000_000, scheduler)
        for listener in listeners:
            listener.leave()
        pump(members, mono() + 200_000_000, scheduler)
        steal_after, load_after = stolen_and_load()
        canary_worst, stalls = canary_result(canary)
    finally:
        processes.end()
    print_machine(load_before, load_after, steal_after - steal_before, arguments.load, canary_worst, stalls)
    for name in ("a", "b"):
        print("# %s: %s" % (name, statuses[name]))
    if arguments.keep:
        with open(os.path.join(directory, "relay-b-ck.txt"), "w") as file:
            for entry in relay_b.ck_log:
                file.write("%d %s %d %d %d %d\n" % entry)
        with open(os.path.join(directory, "relay-b-rtp.txt"), "w") as file:
            for entry in relay_b.rtp_log:
                file.write("%d %d %d %s\n" % entry)
        for listener in listeners:
            with open(os.path.join(directory, listener.name + ".txt"), "w") as file:
                for arrival, stamp, status in listener.stream():
                    file.write("%d %d %02X\n" % (arrival, stamp, status))
    period = period_ns(arguments.tempo)
    streams = {listener.name[-1]: ticks_after_start(listener.stream()) for listener in listeners}
    master = streams["a"]
    if len(master) < 48:
        raise SystemExit("A sent %d ticks; logs:\n%s" % (len(master), processes.log("a")))
    print("ticks heard: A %d, B %d, C %d; pymidi decode fallbacks %d; relay datagrams A->B %d, B->A %d, RTP lost %d"
          % (len(master), len(streams["b"]), len(streams["c"]), decoder.fallbacks, relay_b.forwarded["AB"],
             relay_b.forwarded["BA"], relay_b.dropped))
    for name in ("b", "c"):
        for line in processes.log(name).splitlines():
            if "stopped:" in line and "session" in line:
                counts = [part for part in line.split(": ", 2)[-1].split(", ")
                          if "lost" in part or "late" in part]
                print("# %s's session: %s" % (name.upper(), ", ".join(counts)))
    warmup = started_at + int(arguments.skip * 1e9)
    master_stamps = [stamp for _, stamp in master]

    def pairs(ticks):
        """Each tick with A's tick of the nearest RTP stamp (a follower stamps a tick with the instant it meant it
        for; the immediate follower with its arrival), after the warm-up: [(k, output offset, timeline offset,
        A's send lateness, its own send lateness, its stamp)], in ns."""
        result, j = [], 0
        for arrival, stamp in ticks:
            while j + 1 < len(master_stamps) and abs(master_stamps[j + 1] - stamp) <= abs(master_stamps[j] - stamp):
                j += 1
            if stamp > master_stamps[-1] + period / 2:
                continue  # predicted past A's last tick, before A's Stop reached it: counted in `beyond`
            if arrival >= warmup and master[j][0] >= warmup:
                result.append((j, arrival - master[j][0], stamp - master[j][1], master[j][0] - master[j][1],
                               arrival - stamp, stamp))
        return result

    def stalled(entry):
        """A tick that A or the follower sent over 0.5 ms late while the canary also stalled: the machine's."""
        _, _, _, late_a, late_self, stamp = entry
        return any(late > 500_000 and coincide([(stamp, late)], stalls) for late in (late_a, late_self))

    def summary(values):
        return ("mean %s ms, mean |.| %s ms, std %s ms, p99 |.| %s ms, max |.| %s ms"
                % (ms(statistics.fmean(values)), ms(statistics.fmean(map(abs, values))), ms(statistics.pstdev(values)),
                   ms(percentile([abs(v) for v in values], 99)), ms(max(map(abs, values)))))

    def report(label, entries):
        if not entries:
            print("%s: nothing paired" % label)
            return
        calm = [entry for entry in entries if not stalled(entry)]
        duplicates = len(entries) - len({entry[0] for entry in entries})
        print("%s: %d ticks paired, %d on an A tick paired already, %d sent late in a machine stall"
              % (label, len(entries), duplicates, len(entries) - len(calm)))
        for name, chosen in (("every tick", entries), ("outside machine stalls", calm)):
            beats = [entry[1] for entry in chosen if entry[0] % 24 == 0]
            print("  %-22s output offset %s; beats (%d): mean |.| %s ms, max |.| %s ms"
                  % (name, summary([entry[1] for entry in chosen]), len(beats),
                     ms(statistics.fmean(map(abs, beats))) if beats else "-", ms(max(map(abs, beats))) if beats else "-"))
        print("  %-22s timeline (own RTP stamp - A's) %s" % ("outside machine stalls", summary([e[2] for e in calm])))
        lateness = [entry[4] for entry in calm]
        print("  %-22s own send lateness (arrival - own stamp, 0-100 us of it the stamp's quantum): p50 %s us, "
              "p99 %s us, max %s us" % ("outside machine stalls", us(percentile(lateness, 50)),
                                        us(percentile(lateness, 99)), us(max(lateness))))
        return entries

    for name in ("b", "c"):
        beyond = sum(1 for _, stamp in streams[name] if stamp > master_stamps[-1] + period / 2)
        if beyond:
            print("# %s sent %d tick(s) after A's last one (predicted before A's Stop reached it); not paired"
                  % (name.upper(), beyond))
    follower = pairs(streams["b"])
    immediate = pairs(streams["c"])
    print("# against A's ticks as A's listener heard them, after the first %.1f s, on CLOCK_MONOTONIC:" % arguments.skip)
    report("B (follower, regenerated)", follower)
    report("C (immediate, relayed as it arrives)", immediate)
    lateness_a = [arrival - stamp for arrival, stamp in master if arrival >= warmup]
    late_a = [(stamp, arrival - stamp) for arrival, stamp in master if arrival >= warmup and arrival - stamp > 500_000]
    print("A's send lateness: p50 %s us, p99 %s us, max %s us; %d ticks over 0.5 ms, %d of them in a canary stall"
          % (us(percentile(lateness_a, 50)), us(percentile(lateness_a, 99)), us(max(lateness_a)), len(late_a),
             coincide(late_a, stalls)))
    stamps = [entry[2] for entry in follower if not stalled(entry)]
    stamp_times = [entry[5] for entry in follower if not stalled(entry)]
    ck = ck_offsets(relay_b.ck_log)
    if ck:
        in_force = []
        for stamp in stamp_times:
            current = [offset for when, offset, _ in ck if when <= stamp]
            in_force.append(current[-1] if current else 0)
        rounds = [round_trip for _, _, round_trip in ck]
        print("B's CK offset to A (true offset 0; emulated: quickest leg each way over the last 16 s): %d changes, "
              "shortest round trips %s-%s ms; in force over the ticks: mean %s ms, mean |.| %s ms, max |.| %s ms"
              % (len(ck), ms(min(rounds)), ms(max(rounds)), ms(statistics.fmean(in_force)),
                 ms(statistics.fmean(map(abs, in_force))), ms(max(map(abs, in_force)))))
        residual = [stamp - offset for stamp, offset in zip(stamps, in_force)]
        if residual:
            print("B's timeline less the CK offset in force (the filter's own error, 100 us quanta): %s" % summary(residual))
    if arguments.keep:
        print("# kept %s" % directory)
    else:
        shutil.rmtree(directory, ignore_errors=True)


def ck_offsets(log):
    """The offset B reads A's timestamps through, over time: [(since_ns, offset_ns, round_trip_ns)], each time it
    changes. From the CK packets the relay delivered: B's samples are its own exchanges (completed when A's CK 1
    reaches it: ts3) and A's (when A's CK 2 reaches it); the estimate is half the difference of the shortest leg
    each way over the last 16 s (at most 96 exchanges), with the shortest round trip, as ClockOffsetEstimate."""
    samples = []
    for sent, direction, count, ts1, ts2, ts3 in log:
        if count != 2:
            continue
        round_trip = ts3 - ts1
        midpoint = ts1 // 2 + ts3 // 2 + (ts1 % 2 + ts3 % 2) // 2
        if direction == "BA":  # B initiated: B's clock minus A's; done when CK 1 reached B (its ts3)
            samples.append((ts3 * TICK_NS, midpoint - ts2, round_trip))
        else:  # A initiated: B stores the negated offset when CK 2 reaches it
            samples.append((sent, ts2 - midpoint, round_trip))
    samples.sort()
    window, kept, changes, current = 16_000_000_000, [], [], None
    for when, offset, round_trip in samples:
        kept = [s for s in kept if when - s[0] <= window]
        if len(kept) == 96:
            kept.pop(0)
        kept.append((when, offset, round_trip))
        out = min(rt - 2 * off for _, off, rt in kept)
        back = min(rt + 2 * off for _, off, rt in kept)
        best = (int((back - out) / 4) * TICK_NS, min(rt for _, _, rt in kept) * TICK_NS)
        if best != current:
            current = best
            changes.append((when, best[0], best[1]))
    return changes


# MARK: The clock with the engine busy (issue 30)

# The load generator: a controller sending MIDI-over-OSC `/note` messages (channel, note, velocity: each note on,
# then off) to jambridge's OSC endpoint at RATE messages a second, BATCH to a bundle, one bundle every BATCH/RATE
# s on an absolute schedule (a late send catches up, so the rate holds over the run); the channels cycle 1-16. It
# also reads what jambridge's OSC output sends to SINK_PORT, and counts it. Prints its counts when it gets SIGTERM.
LOADGEN = r"""
import signal, socket, struct, sys, time
target, sink_port, rate, batch = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
stopped = []
signal.signal(signal.SIGTERM, lambda *_: stopped.append(1))
def message(i):
    channel, m = i % 16 + 1, i // 16
    return b"/note\0\0\0,iii\0\0\0\0" + struct.pack(">iii", channel, 40 + (m // 2) % 40, 100 if m % 2 == 0 else 0)
cycle = 16 * 80
bundles = []
for first in range(0, cycle * batch, batch):
    parts = [message(i % cycle) for i in range(first, first + batch)]
    bundles.append(b"#bundle\0" + struct.pack(">Q", 1) + b"".join(struct.pack(">i", len(p)) + p for p in parts))
out = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
out.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sink.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
sink.bind(("127.0.0.1", sink_port))
sink.setblocking(False)
interval = int(batch / rate * 1e9)
start = due = time.monotonic_ns()
sent = datagrams = received = worst = refused = 0
while not stopped:
    now = time.monotonic_ns()
    worst = max(worst, now - due)
    while due <= now:
        try:
            out.sendto(bundles[datagrams % len(bundles)], ("127.0.0.1", target))
            sent += batch
        except OSError:
            refused += 1
        datagrams += 1
        due += interval
    while True:
        try:
            sink.recv(65536)
            received += 1
        except BlockingIOError:
            break
    time.sleep(max(0, due - time.monotonic_ns()) / 1e9)
print(sent, datagrams, refused, time.monotonic_ns() - start, received, worst)
"""


def status_counts(text):
    """{endpoint: (in, out)} from `jambridge status --json`."""
    try:
        status = json.loads(text[text.index("{"):])
    except (ValueError, IndexError):
        return {}
    return {name: (traffic.get("in", 0), traffic.get("out", 0)) for name, traffic in status.get("endpoints", {}).items()}


def udp_drops(port):
    """Datagrams the kernel dropped at the UDP socket bound to 127.0.0.1:`port` (its receive buffer full), from
    /proc/net/udp; None if there is no such socket."""
    wanted = "0100007F:%04X" % port
    for line in open("/proc/net/udp").read().splitlines()[1:]:
        fields = line.split()
        if fields[1] == wanted:
            return int(fields[-1])
    return None


def read_holds(path):
    """The stand-in's log: (header dict, [(start, end, tries, gave_up)])."""
    header, holds = {}, []
    if not os.path.exists(path):
        return header, holds
    for line in open(path):
        fields = line.split()
        if fields and fields[0] == "hold":
            holds.append(tuple(int(f) for f in fields[1:5]))
        elif fields:
            header.update({fields[i]: int(fields[i + 1]) for i in range(0, len(fields) - 1, 2)})
    return header, holds


def during(instant, late, windows, slack=0):
    """True if the span from `instant` to `instant + late` overlaps one of `windows` [(start, end)]."""
    return any(start - slack <= instant + late and instant <= end + slack for start, end in windows)


class Stamper:
    """Receives the bare thread's datagrams (k, 8 bytes native) on a port of 127.0.0.1 and stamps each with the
    kernel's receive time, as the listeners stamp the jam's ticks: {k: arrival on CLOCK_MONOTONIC}."""

    def __init__(self, clock_of):
        self.clock_of = clock_of  # a Listener, for its offset of the kernel's stamps to CLOCK_MONOTONIC
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.setblocking(False)
        self.port = self.sock.getsockname()[1]
        self.arrivals = {}

    def sockets(self):
        return [self.sock]

    def readable(self, sock):
        while True:
            try:
                datagram, ancillary, _, _ = sock.recvmsg(64, 256)
            except BlockingIOError:
                return
            arrival = None
            for level, kind, value in ancillary:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                    seconds, nanoseconds = struct.unpack("qq", value[:16])
                    arrival = seconds * 1_000_000_000 + nanoseconds - self.clock_of.realtime_offset
            if arrival is not None and len(datagram) == 8:
                self.arrivals[struct.unpack("q", datagram)[0]] = arrival


# A wake-up of the normal-priority canary this late counts as the scheduler keeping normal threads (the engine's) waiting.
NORMAL_STALL = 5_000_000


# MARK: The drums under load (issue 42)

# With --drums the jambridge of `busy` plays built-in rock at level DRUM_LEVEL along the jam's song, its notes routed to
# the listener that stamps the jam's ticks. Each voice plays note DRUM_NOTE_BASE + its index in DrumVoice's order
# (Sources/Drums/Kit.swift) on channel DRUM_CHANNEL: below the load's notes (40-79), so that the listener tells the
# drums' notes from the load's, and each note names its voice.
DRUM_VOICES = ["kick", "snare", "rim", "clap", "hat", "pedal-hat", "open-hat", "low-tom", "mid-tom", "high-tom", "crash",
               "ride", "ride-bell", "tambourine", "cowbell", "clave", "shaker", "high-conga", "low-conga"]
DRUM_NOTE_BASE, DRUM_CHANNEL, DRUM_LEVEL = 20, 10, 5
# Built-in rock (Sources/RouteFile/BuiltinStyles.swift): 4/4 at 24 ticks a beat, 16 straight steps a bar (6 ticks
# each, swing 50), every hit moved by up to +-3 ms (`humanize: { time: 3 }`), drawn from the seed (1, the default).
ROCK = {"step_ticks": 6, "bar_ticks": 96, "humanize_ms": 3.0, "seed": 1}
MASK64 = (1 << 64) - 1


def drum_draw(seed, bar, step, voice, purpose):
    """DrumSequencer.draw (Sources/Drums/DrumSequencer.swift): a number in 0..<1 for `voice` (its index) at `step` of
    `bar` and `purpose` (1: the hit's time), from the seed alone (splitmix64)."""
    x = (seed + bar * 0x9E3779B97F4A7C15 + step * 0xBF58476D1CE4E5B9 + voice * 0x94D049BB133111EB
         + purpose * 0xD6E8FEB86659FD93) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    x ^= x >> 31
    return (x >> 11) / float(1 << 53)


def drum_hits(notes, anchor, period, style=ROCK):
    """The drums' note-ons as the listener heard them, [(arrival, rtp_timestamp, note, velocity)], with the instant
    each was meant for: [(intended, arrival, bar, step, voice, agreed)] in order of `intended`. A hit's step is the
    step nearest its RTP stamp (the hit's time floored to 100 us: the session stamps a note with its time, and the
    humanize shift is far less than half a step); the step's instant is the jam's tick of that step on the grid
    `anchor` + k x `period` (the drums play along the jam's song, whose tick k is the jam's k-th clock tick), moved
    by the shift the sequencer drew for the voice there (DrumSequencer.hitsOfStep, replayed). `agreed`: that
    instant floors to the RTP stamp (+-1 for the anchor's uncertainty); where it does not (a sequencer that draws
    otherwise), the middle of the stamp's 100 us is taken instead."""
    hits = []
    step_ns = style["step_ticks"] * period
    steps_a_bar = style["bar_ticks"] // style["step_ticks"]
    for arrival, stamp, note, velocity in notes:
        voice = note - DRUM_NOTE_BASE
        if velocity == 0 or not 0 <= voice < len(DRUM_VOICES):
            continue  # a note-off written as a note-on at velocity 0, or one of the load's notes
        stamped = stamp * TICK_NS
        index = round((stamped - anchor) / step_ns)
        if index < 0:
            continue
        bar, step = divmod(index, steps_a_bar)
        shift = int(style["humanize_ms"] * 1e6 * (2 * drum_draw(style["seed"], bar, step, voice, 1) - 1))
        intended = anchor + index * style["step_ticks"] * period + shift
        agreed = abs(int(intended // TICK_NS) - stamp) <= 1
        hits.append((intended if agreed else stamped + TICK_NS / 2, arrival, bar, step, voice, agreed))
    return sorted(hits)


def drums_notes(status_text):
    """The drums' note-ons sent so far (`drums.notes` of `jambridge status --json`), or None."""
    try:
        return json.loads(status_text[status_text.index("{"):]).get("drums", {}).get("notes")
    except (ValueError, AttributeError):
        return None


def drums_figures(listener, grid_anchor, bare_anchor, period, first, last, bare_rows, pinned_rows, bare_lateness,
                  bare_sent_lateness, bare_interval_std, holds, stalls, normal_stalls, sent, keep):
    """Prints the drums' hits beside the bare thread (issue 42): the hits whose instants fall within the bare thread's
    deadlines `first`..`last`, each against the instant it was meant for (`drum_hits`), with the same figures as the
    jam's ticks; the hits over 0.5 ms late that the bare thread (or one pinned to a CPU) also saw. A hit lies up to
    3 ms off its step's tick (humanize), so a bare thread "also saw" it when its wake-up for the deadline nearest the
    hit (the step's tick) was over 0.5 ms late, or when one of its wake-ups over 0.5 ms late overlaps the hit's
    lateness (a stall between the two instants). `sent`: (the drums' note-ons by their status before, after,
    seconds between)."""
    notes = listener.notes(0x90 | (DRUM_CHANNEL - 1))
    hits = drum_hits(notes, grid_anchor, period)
    agreed = sum(1 for hit in hits if hit[5])
    nearest = lambda intended: round((intended - bare_anchor) / period)
    measured = [hit for hit in hits if first <= nearest(hit[0]) <= last]
    before, after, seconds = sent
    print("# drums (rock, level %d, on channel %d as notes %d-%d): %s note-ons sent over the counted %.1f s (their "
          "status), %d heard at the listener, %d of them within the bare thread's deadlines; the instants replayed from "
          "the style agree with the RTP stamps for %d of the %d"
          % (DRUM_LEVEL, DRUM_CHANNEL, DRUM_NOTE_BASE, DRUM_NOTE_BASE + len(DRUM_VOICES) - 1,
             after - before if before is not None and after is not None else "?", seconds, len(hits), len(measured),
             agreed, len(hits)))
    if len(measured) < 10:
        print("drum hits: only %d heard within the measured seconds; no figures" % len(measured))
        return
    lateness = [arrival - intended for intended, arrival, *_ in measured]
    deviations = [abs((b[1] - a[1]) - (b[0] - a[0])) for a, b in zip(measured, measured[1:])]
    interval_std = statistics.pstdev([(b[1] - a[1]) - (b[0] - a[0]) for a, b in zip(measured, measured[1:])])
    late_std = statistics.pstdev(lateness)
    print("%-36s %5d  interval std %7s us, max |dev| %8s us, p99 |dev| %7s us; late p50 %6s / p99 %8s / max %8s us; "
          "> 0.5 ms late: %d; lateness std %s us"
          % ("drum hits (kernel receive stamp)", len(measured), us(interval_std), us(max(deviations)),
             us(percentile(deviations, 99)), us(percentile(lateness, 50)), us(percentile(lateness, 99)),
             us(max(lateness)), sum(1 for late in lateness if late > 500_000), us(late_std)))
    print("%-36s        (a hit's interval: from the hit before it, against the interval they were meant for; the bare "
          "thread's lateness std: wake-up %s us, its datagram stamped %s us)"
          % ("", us(statistics.pstdev(bare_lateness)),
             us(statistics.pstdev(bare_sent_lateness)) if bare_sent_lateness else "-"))

    def late_windows(rows):
        return {k: (deadline, woke) for k, deadline, woke in rows if woke - deadline > 500_000}

    def saw(windows, intended, late):
        """(at the hit's own tick, a late wake-up overlapping the hit's lateness)."""
        own = nearest(intended) in windows
        overlapping = any(deadline <= intended + late and intended <= woke for deadline, woke in windows.values())
        return own, overlapping
    bare_windows = late_windows(bare_rows)
    pinned_windows = [late_windows(rows) for rows in pinned_rows]
    late_hits = [(intended, arrival - intended, bar, step, voice)
                 for intended, arrival, bar, step, voice, _ in measured if arrival - intended > 500_000]
    by_bare = [saw(bare_windows, hit[0], hit[1]) for hit in late_hits]
    by_pinned = [any(any(saw(windows, hit[0], hit[1])) for windows in pinned_windows) for hit in late_hits]
    seen = sum(1 for own, overlapping in by_bare if own or overlapping)
    unseen = sum(1 for (own, overlapping), pinned in zip(by_bare, by_pinned) if not (own or overlapping or pinned))
    lates = [(hit[0], hit[1]) for hit in late_hits]
    print("hits > 0.5 ms late: %d; the bare thread also > 0.5 ms late: %d (at the hit's own tick %d, a late wake-up "
          "overlapping the hit's lateness %d); a bare thread pinned to a CPU: %d; during a hold of the ALSA output: %d; "
          "during a canary stall: %d; while the normal-priority canary waited over %s ms: %d"
          % (len(late_hits), seen, sum(1 for own, _ in by_bare if own), sum(1 for _, overlapping in by_bare if overlapping),
             sum(by_pinned), sum(1 for instant, late in lates if during(instant, late, holds)), coincide(lates, stalls),
             ms(NORMAL_STALL), coincide(lates, normal_stalls, slack=0)))
    if late_hits:
        def flags(instant, late):
            found = [name for name, hit in (("held", during(instant, late, holds)),
                                            ("normal canary waited", coincide([(instant, late)], normal_stalls, slack=0)),
                                            ("canary stall", coincide([(instant, late)], stalls))) if hit]
            return " (%s)" % ", ".join(found) if found else ""
        worst = sorted(late_hits, key=lambda hit: -hit[1])[:10]
        print("  the latest: %s" % ", ".join("bar %d step %d %s %s ms%s" % (bar + 1, step + 1, DRUM_VOICES[voice], ms(late),
                                                                          flags(instant, late))
                                             for instant, late, bar, step, voice in worst))
    reference = statistics.pstdev(bare_sent_lateness) if bare_sent_lateness else statistics.pstdev(bare_lateness)
    ratio = late_std / reference if reference else float("inf")
    interval_ratio = interval_std / bare_interval_std if bare_interval_std else float("inf")
    print("issue 42: the hits' lateness std %.2fx the bare thread's (%s; target <= 1.3x): %s; their interval std %.2fx "
          "the bare thread's interval std; hits > 0.5 ms late that the bare thread did not also see: %d, nor one pinned "
          "to a CPU: %d (target 0): %s"
          % (ratio, "its datagram, stamped" if bare_sent_lateness else "its wake-up", "met" if ratio <= 1.3 else "MISSED",
             interval_ratio, len(late_hits) - seen, unseen, "met" if not unseen else "MISSED"))
    if keep:
        with open(keep, "w") as file:  # bar step voice intended arrival lateness agreed (ns, CLOCK_MONOTONIC)
            for intended, arrival, bar, step, voice, agreed_stamp in hits:
                file.write("%d %d %s %.0f %d %.0f %d\n" % (bar + 1, step + 1, DRUM_VOICES[voice], intended, arrival,
                                                          arrival - intended, agreed_stamp))


def checked_in_busy(commands):
    """The packets pymidi reads too in `busy` (see `Decoder`): those with a system message (the jam's ticks and
    transport) or a drums' note (--drums); not those with the load's notes alone."""
    return any(status >= 0xF0 or (status & 0xEF == 0x80 | (DRUM_CHANNEL - 1) and len(data) == 2
                                  and DRUM_NOTE_BASE <= data[0] < DRUM_NOTE_BASE + len(DRUM_VOICES))
               for _, status, data in commands)


def busy(arguments):
    decoder = Decoder(check=checked_in_busy)
    base = free_base_port()  # session base, base+1; controller base+2; OSC output base+3; its receiver base+4
    directory = tempfile.mkdtemp(prefix="clock-under-load-")
    processes = Processes(arguments.jambridge, directory, [])
    period = period_ns(arguments.tempo)
    standin_log = os.path.join(directory, "standin.txt")
    env = {"LD_PRELOAD": arguments.standin, "JB_SEQ_LOG": standin_log, "JB_SEQ_POOL": str(arguments.pool),
           "JB_SEQ_BAUD": str(arguments.baud), "JB_SEQ_STALL_MS": str(arguments.stall_ms),
           "JB_SEQ_EVERY_MS": str(arguments.every_ms), "JB_SEQ_FIRST_MS": str(arguments.first_ms)}
    routes = """\
session: { name: jam-a, port: %d, bind: 127.0.0.1, advertise: false }
alsa: { client: clock-under-load }
clock: { tempo: %g }
endpoints:
  controller: { osc: { listen: %d, host: 127.0.0.1 } }
  osc-out: { osc: { listen: %d, host: 127.0.0.1, accept: none, send: "127.0.0.1:%d" } }
  synth: { alsa: { create: synth } }
  peer-out: { peer: bench-sink }
  listener-out: { peer: bench-listener }
routes:
  - { from: controller, to: [peer-out, osc-out%s] }
  - { from: controller, to: synth, channels: %s }
""" % (base, arguments.tempo, base + 2, base + 3, base + 4,
       "" if arguments.quiet_listener else ", listener-out", arguments.alsa_channels)
    if arguments.drums:
        # Each voice on its own note below the load's (40-79), on channel 10: the listener tells them apart.
        routes += "  - { from: drums, to: listener-out }\ndrums: { style: rock, level: %d, notes: { channel: %d, %s } }\n" % (
            DRUM_LEVEL, DRUM_CHANNEL, ", ".join("%s: %d" % (voice, DRUM_NOTE_BASE + index)
                                                for index, voice in enumerate(DRUM_VOICES)))
    steal_before, load_before = stolen_and_load()
    try:
        processes.load(arguments.load)
        canary = start_canary(processes)
        normal_canary = start_normal_canary(processes, NORMAL_STALL)
        a = processes.jambridge("a", routes, env)
        if "ALSA sequencer client 'clock-under-load'" not in processes.log("a"):
            raise SystemExit("jambridge has no ALSA client (is the stand-in preloaded?):\n%s" % processes.log("a"))
        listener = Listener("bench-listener", base, decoder, with_data=arguments.drums)
        sink = Listener("bench-sink", base, decoder, count_only=True)
        for member in (listener, sink):
            member.join()
        stamper = Stamper(listener)
        members = [listener, sink, stamper]
        bare = subprocess.Popen([arguments.bare, str(arguments.bare_priority), str(stamper.port)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        processes.started.append(bare)
        bare_policy = bare.stdout.readline().strip()
        if not bare_policy.startswith("# SCHED_FIFO"):
            raise SystemExit("the bare thread did not start: %r" % bare_policy)
        # One more per CPU, pinned there: whichever CPU the jam's thread was on, one of these saw its stalls.
        pinned = [subprocess.Popen([arguments.bare, str(arguments.bare_priority), "0", str(cpu)],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                  for cpu in range(os.cpu_count())]
        processes.started.extend(pinned)
        for thread in pinned:
            if not thread.stdout.readline().startswith("# SCHED_FIFO"):
                raise SystemExit("a pinned bare thread did not start")
        loadgen = subprocess.Popen([sys.executable, "-c", LOADGEN, str(base + 2), str(base + 4), str(arguments.rate),
                                    str(arguments.batch)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        processes.started.append(loadgen)
        pump(members, mono() + int(arguments.warmup * 1e9))
        if loadgen.poll() is not None:
            raise SystemExit("the load generator ended:\n%s" % loadgen.stderr.read())
        status_before = processes.control(a, "status", "--json", serving=(members, None))
        counts_before = status_counts(status_before)
        counted_from = mono()
        started_at = mono()
        print("# start: %s" % processes.control(a, "start", serving=(members, None)))
        pump(members, started_at + int(arguments.skip * 1e9))
        early = ticks_after_start(listener.stream())
        grid, uncertainty = scheduled_instants(early, period) if len(early) >= 3 else (None, "too few ticks")
        if grid is None:
            raise SystemExit("cannot recover the tick grid after %.1f s (%d ticks): %s" % (arguments.skip, len(early), uncertainty))
        anchor = grid[0]
        end = started_at + int((arguments.skip + arguments.seconds) * 1e9)
        for thread in [bare] + pinned:
            thread.stdin.write("%.0f %.6f %d\n" % (anchor, period, end))
            thread.stdin.close()
        pump(members, end + 100_000_000)
        status_after = processes.control(a, "status", "--json", serving=(members, None))
        counts_after = status_counts(status_after)
        counted_to = mono()
        osc_drops = udp_drops(base + 2)
        loadgen.send_signal(signal.SIGTERM)
        load_output, load_errors = loadgen.communicate(timeout=10)
        load_figures = load_output.split()
        if len(load_figures) != 6:
            raise SystemExit("the load generator failed:\n%s" % load_errors)
        processes.control(a, "stop", serving=(members, None))
        pump(members, mono() + 300_000_000)
        for member in (listener, sink):
            member.leave()
        steal_after, load_after = stolen_and_load()
        canary_worst, stalls = canary_result(canary)
        normal_worst, normal_stalls = canary_result(normal_canary)
        bare_lines = bare.stdout.read().splitlines()  # it ends at its last deadline, before this
        bare.wait(timeout=10)
        pinned_lines = [thread.stdout.read().splitlines() for thread in pinned]
    finally:
        processes.end()
    print_machine(load_before, load_after, steal_after - steal_before, arguments.load, canary_worst, stalls)
    log = processes.log("a")
    priority = [line.split("] ", 1)[1] for line in log.splitlines() if "clock thread runs" in line]
    print("# %s; bare thread: %s" % (priority[0] if priority else "no clock thread line in the log", bare_policy[2:]))
    if arguments.drums:
        drums_thread = [line.split("] ", 1)[1] for line in log.splitlines() if "drums thread runs" in line]
        print("# %s" % (drums_thread[0] if drums_thread else "no drums thread line in the log"))
    print("# normal-priority canary (SCHED_OTHER, not pinned, 2 ms): worst wake-up %s ms, %d wake-ups over %s ms late"
          % (ms(normal_worst), len(normal_stalls), ms(NORMAL_STALL)))

    # The load and where it went.
    seconds = (counted_to - counted_from) / 1e9
    sent, datagrams, refused, elapsed, received, worst = map(int, load_figures)
    print("load generator: %d /note messages in %d bundles of %d in %.1f s (%.0f a second; %d sends refused, "
          "worst send lag %.1f ms); its OSC receiver got %d datagrams"
          % (sent, datagrams, arguments.batch, elapsed / 1e9, sent / (elapsed / 1e9), refused, worst / 1e6, received))

    def rate(name, index):
        before, after = counts_before.get(name), counts_after.get(name)
        return (after[index] - before[index]) / seconds if before and after else float("nan")
    print("through jambridge's router over %.1f s (its own counters): controller %.0f in/s (once per route from it: "
          "2) -> peer-out %.0f/s, "
          "osc-out %.0f/s, synth (ALSA) %.0f/s; the sink peer got %d RTP-MIDI packets; datagrams the kernel dropped "
          "(receive buffer full) at the controller's socket: %s, at the listener's: %d"
          % (seconds, rate("controller", 0), rate("peer-out", 1), rate("osc-out", 1), rate("synth", 1), sink.packets,
             "unknown" if osc_drops is None else osc_drops, listener.dropped))
    header, all_holds = read_holds(standin_log)
    measured_from = started_at + int(arguments.skip * 1e9)
    holds = [hold for hold in all_holds if hold[1] >= measured_from and hold[0] <= end]
    windows = [(start, stop) for start, stop, _, _ in all_holds]
    lengths = [stop - start for start, stop, _, _ in holds]
    print("ALSA stand-in: pool %s cells, %s baud, destination stalls %s ms every %s ms; %s events taken, %s EAGAIN, "
          "pool at most %s; in the measured %.0f s the ALSA output waited for room %d times (%d cut at 100 -EAGAIN "
          "in a row): p50 %s ms, max %s ms, %.2f s in all; outside them %d holds (%d cut); outputs after "
          "the sequencer was closed: %s"
          % (header.get("pool"), header.get("baud"), header.get("stall"), header.get("every"), header.get("events"),
             header.get("eagain"), header.get("max_level"), (end - measured_from) / 1e9, len(holds),
             sum(h[3] for h in holds), ms(percentile(lengths, 50)) if lengths else "-",
             ms(max(lengths)) if lengths else "-", sum(lengths) / 1e9, len(all_holds) - len(holds),
             sum(h[3] for h in all_holds) - sum(h[3] for h in holds), header.get("after_close")))

    # The jam's ticks and the bare thread's wake-ups over the same deadlines.
    if arguments.keep:
        with open(os.path.join(directory, "listener.txt"), "w") as file:
            for arrival, timestamp, commands in listener.records:
                file.write("%d %d %s\n" % (arrival, timestamp, " ".join("%d:%02X" % c[:2] for c in commands)))
        with open(os.path.join(directory, "bare.txt"), "w") as file:
            file.write("\n".join(bare_lines) + "\n")
    ticks = ticks_after_start(listener.stream())
    instants, final_uncertainty = scheduled_instants(ticks, period)
    if instants is None:
        raise SystemExit("the ticks do not lie on one grid: %s%s"
                         % (final_uncertainty, " (kept %s)" % directory if arguments.keep else ""))
    def wake_rows(lines):
        """A bare thread's output: [(k, deadline, woke)]."""
        return [tuple(map(int, line.split())) for line in lines if line and not line.startswith("#")]

    def late_deadlines(rows):
        return {k for k, deadline, woke in rows if woke - deadline > 500_000}
    bare_rows = wake_rows(bare_lines)
    if len(bare_rows) < 10:
        raise SystemExit("the bare thread woke %d times" % len(bare_rows))
    first, last = bare_rows[0][0], bare_rows[-1][0]
    print("# tick grid: anchor recovered after %.1f s to +-%s us, %s us from the anchor of the whole run (+-%s us); "
          "deadlines %d-%d (%.1f s), pymidi decode fallbacks %d of the %d packets it read (%d with the load's notes "
          "alone read by hand only), unstamped %d"
          % (arguments.skip, us(uncertainty), us(anchor - instants[0]), us(final_uncertainty), first, last,
             (last - first) * period / 1e9, decoder.fallbacks, decoder.checked, decoder.unchecked, listener.unstamped))
    jam = [(k, ticks[k][0], instants[k]) for k in range(first, min(last + 1, len(ticks)))]
    bare_by_k = {k: (deadline, woke) for k, deadline, woke in bare_rows}

    def figures(label, stamps):
        """stamps: [(k, when, deadline)] in order of k."""
        intervals = [b[1] - a[1] for a, b in zip(stamps, stamps[1:]) if b[0] == a[0] + 1]
        deviations = [abs(i - period) for i in intervals]
        lateness = [when - deadline for _, when, deadline in stamps]
        std = statistics.pstdev(intervals)
        print("%-36s %5d  interval std %7s us, max |dev| %8s us, p99 |dev| %7s us; late p50 %6s / p99 %8s / max %8s us; "
              "> 0.5 ms late: %d" % (label, len(stamps), us(std), us(max(deviations)), us(percentile(deviations, 99)),
                                      us(percentile(lateness, 50)), us(percentile(lateness, 99)), us(max(lateness)),
                                      sum(1 for late in lateness if late > 500_000)))
        return std, lateness
    jam_std, _ = figures("jam ticks (kernel receive stamp)", jam)
    calm = [b[1] - a[1] - period for a, b in zip(jam, jam[1:])
            if b[0] == a[0] + 1 and a[1] - a[2] <= 500_000 and b[1] - b[2] <= 500_000]
    if calm:
        print("%-36s %5d  interval std %7s us, max |dev| %8s us (intervals between ticks neither over 0.5 ms late)"
              % ("", len(calm) + 1, us(statistics.pstdev(calm)), us(max(map(abs, calm)))))
    bare_std, bare_lateness = figures("bare thread (wake-up)", [(k, woke, deadline) for k, deadline, woke in bare_rows])
    bare_sent = [(k, stamper.arrivals[k], deadline) for k, deadline, _ in bare_rows if k in stamper.arrivals]
    bare_sent_lateness = None
    if len(bare_sent) > 10:
        _, bare_sent_lateness = figures("bare thread (its datagram, stamped)", bare_sent)
    late_ticks = [(k, instant, arrival - instant) for k, arrival, instant in jam if arrival - instant > 500_000]
    bare_late = late_deadlines(bare_rows)
    seen = [entry for entry in late_ticks if entry[0] in bare_late]
    pinned_late = [late_deadlines(wake_rows(lines)) for lines in pinned_lines]
    seen_pinned = [entry for entry in late_ticks if any(entry[0] in late for late in pinned_late)]
    unseen = [entry for entry in late_ticks if not any(entry[0] in late for late in [bare_late] + pinned_late)]
    held = [entry for entry in late_ticks if during(entry[1], entry[2], windows)]
    stalled = coincide([(instant, late) for _, instant, late in late_ticks], stalls)
    starved = coincide([(instant, late) for _, instant, late in late_ticks], normal_stalls, slack=0)
    print("ticks > 0.5 ms late: %d; the bare thread also > 0.5 ms late at the same deadline: %d; a bare thread pinned "
          "to a CPU (%s): %d; during a hold of the ALSA output: %d; during a canary stall: %d; while the normal-priority "
          "canary waited over %s ms: %d"
          % (len(late_ticks), len(seen), "/".join("%d late" % len(late) for late in pinned_late), len(seen_pinned),
             len(held), stalled, ms(NORMAL_STALL), starved))
    if late_ticks:
        worst = sorted(late_ticks, key=lambda entry: -entry[2])[:10]
        def flags(instant, late):
            found = [name for name, hit in (("held", during(instant, late, windows)),
                                            ("normal canary waited", coincide([(instant, late)], normal_stalls, slack=0)),
                                            ("canary stall", coincide([(instant, late)], stalls))) if hit]
            return " (%s)" % ", ".join(found) if found else ""
        print("  the latest: %s" % ", ".join("k %d %s ms%s" % (k, ms(late), flags(i, late)) for k, i, late in worst))
    ratio = jam_std / bare_std if bare_std else float("inf")
    print("issue 30: interval std %.2fx the bare thread's (target <= 2x): %s; ticks > 0.5 ms late that the bare thread "
          "did not also see: %d, nor one pinned to a CPU: %d (target 0): %s"
          % (ratio, "met" if ratio <= 2 else "MISSED", len(late_ticks) - len(seen), len(unseen),
             "met" if not unseen else "MISSED"))
    if arguments.drums:
        pinned_rows = [wake_rows(lines) for lines in pinned_lines]
        drums_figures(listener, instants[0], anchor, period, first, last, bare_rows, pinned_rows, bare_lateness,
                      bare_sent_lateness, bare_std, windows, stalls, normal_stalls,
                      (drums_notes(status_before), drums_notes(status_after), seconds),
                      os.path.join(directory, "hits.txt") if arguments.keep else None)
    if arguments.keep:
        with open(os.path.join(directory, "ticks.txt"), "w") as file:
            for k, arrival, instant in jam:
                deadline, woke = bare_by_k.get(k, (0, 0))
                file.write("%d %d %.0f %d %d\n" % (k, arrival, instant, deadline, woke))
        print("# kept %s" % directory)
    else:
        shutil.rmtree(directory, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenario", choices=["jitter", "follow", "busy"])
    parser.add_argument("--jambridge", required=True)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--tempo", type=float, default=120)
    parser.add_argument("--skip", type=float, default=None, help="seconds after the start not counted")
    parser.add_argument("--load", type=lambda text: [int(c) for c in text.split(",") if c != ""], default=[],
                        help="CPUs to keep busy with a spinning process each, such as 1 or 0,1")
    parser.add_argument("--no-rt", action="store_true", help="run jambridge without CAP_SYS_NICE (no SCHED_FIFO)")
    parser.add_argument("--max-delay", type=float, default=10, help="follow: the relays' largest delay, ms")
    parser.add_argument("--delay", choices=["all", "rtp"], default="all", help="follow: which datagrams are delayed")
    parser.add_argument("--loss", type=float, default=0, help="follow: the fraction of RTP packets the relays lose")
    parser.add_argument("--settle", type=float, default=3, help="follow: seconds of clock sync before the start")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--rate", type=float, default=10000, help="busy: OSC messages a second into the router")
    parser.add_argument("--batch", type=int, default=10, help="busy: messages to an OSC bundle")
    parser.add_argument("--alsa-channels", default="1", help="busy: the channels routed to the ALSA output")
    parser.add_argument("--standin", help="busy: the ALSA sequencer stand-in to preload (alsa_seq_standin.so)")
    parser.add_argument("--bare", help="busy: the bare thread's program (bare_clock)")
    parser.add_argument("--bare-priority", type=int, default=20, help="busy: the bare thread's SCHED_FIFO priority")
    parser.add_argument("--pool", type=int, default=500, help="busy: the stand-in's output pool, in events")
    parser.add_argument("--baud", type=int, default=31250, help="busy: the pace the stand-in's destination takes")
    parser.add_argument("--stall-ms", type=int, default=1000, help="busy: how long the destination stops taking events")
    parser.add_argument("--every-ms", type=int, default=5000, help="busy: how often it stops")
    parser.add_argument("--first-ms", type=int, default=2000, help="busy: its first stop, after the sequencer opens")
    parser.add_argument("--warmup", type=float, default=2, help="busy: seconds of load before the start")
    parser.add_argument("--drums", action="store_true",
                        help="busy: the drums play too (built-in rock at level %d, notes routed to the listener): their "
                             "hits beside the bare thread (issue 42)" % DRUM_LEVEL)
    parser.add_argument("--quiet-listener", action="store_true",
                        help="busy: the listener gets the clock only (by default it gets the notes too, as a player does)")
    parser.add_argument("--keep", action="store_true", help="keep the route files and logs")
    arguments = parser.parse_args()
    if arguments.skip is None:
        arguments.skip = 5 if arguments.scenario == "follow" else 1
    if arguments.scenario == "busy" and not (arguments.standin and arguments.bare):
        parser.error("busy needs --standin and --bare (Benchmarks/clock-under-load.sh builds them)")
    {"jitter": jitter, "follow": follow, "busy": busy}[arguments.scenario](arguments)


if __name__ == "__main__":
    main()
