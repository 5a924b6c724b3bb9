#!/usr/bin/env python3
"""The probe of Benchmarks/alsa-rtp-latency.sh, run where the sequencer is (the test VM); standard library only.

It writes note-ons into snd-virmidi rawmidi devices, each path fed by a device of its own, the paths taken in turn,
one note-on every 20 ms, and times each to where it comes out:

  kernel     written into hw:0,0, routed by the kernel (aconnect 0-0 -> 0-1), read back from hw:0,1
  jambridge  written into hw:0,2, jambridge's ALSA endpoint routed to its session, RTP-MIDI to this peer
  relay      written into hw:0,3, relay.c (one RTP-MIDI datagram per sequencer event) to this peer
  rtpmidid   (with --rtpmidid) written into hw:0,1 (its output side: the kernel path reads only its input),
             rtpmidid's ALSA port for this peer subscribed to it, RTP-MIDI to this peer

Latency = the kernel's stamp of the arrival minus CLOCK_MONOTONIC read just before write(): for RTP-MIDI the UDP
socket's receive stamp (SO_TIMESTAMPNS, CLOCK_REALTIME, moved onto CLOCK_MONOTONIC), for the kernel path the
rawmidi input's own stamp (timestamp framing, CLOCK_MONOTONIC, as `amidi -T monotonic`): on every path, no wake-up
of this process is counted. After each note-on has arrived, its note-off is written and awaited (not measured), so
that no path collects held notes (and jambridge's recovery journal stays as small as a player's).

The peer invites jambridge's session on 127.0.0.1 (AppleMIDI IN on both ports), keeps it with CK every 2 s and RS
every second, and tells the RTP-MIDI senders apart by SSRC (jambridge's from its OK, the relay's fixed, rtpmidid's
from its IN). With --rtpmidid ADDRESS (rtpmidid's sequencer port that connects to this peer, `connect_to` in its
ini), the probe, once listening, subscribes that port to 'Virtual Raw MIDI 0-1' (aconnect), which makes rtpmidid
invite it; it accepts (OK on both ports), answers rtpmidid's CK and sends it RS every second as it does jambridge.
It prints each path's n, p50, p90, p99 (µs), the ratios of jambridge to the others, and VmRSS and RssAnon of the
processes named with --pid, read at the end of the samples while they still run, with the CPU time (user and
system, all threads) each used from the first note (warm-up included) to the last.
"""
import argparse
import fcntl
import os
import random
import select
import socket
import struct
import subprocess
import sys
import time

SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
RELAY_SSRC = 0x62617265  # relay.c's
TICK_NS = 100_000  # the RTP-MIDI session clock's tick (10 kHz)
IN, OK, NO, BY = b"IN", b"OK", b"NO", b"BY"
# <sound/asound.h>: SNDRV_RAWMIDI_IOCTL_USER_PVERSION = _IOW('W', 0x02, int) (the kernel takes params.mode only from
# a user that said it speaks protocol 2.0.2), SNDRV_RAWMIDI_IOCTL_PARAMS = _IOWR('W', 0x10, struct snd_rawmidi_params)
RAWMIDI_IOCTL_USER_PVERSION, RAWMIDI_PROTOCOL = (1 << 30) | (4 << 16) | (ord("W") << 8) | 0x02, (2 << 16) | 2
RAWMIDI_IOCTL_PARAMS = (3 << 30) | (48 << 16) | (ord("W") << 8) | 0x10  # 48 bytes on 64-bit
RAWMIDI_STREAM_INPUT, FRAMING_TSTAMP, CLOCK_MONOTONIC_STAMPS = 1, 1 << 0, 2 << 3
FRAME = struct.Struct("<BB2xIQ16s")  # struct snd_rawmidi_framing_tstamp
PATHS = (("kernel", 0), ("jambridge", 2), ("relay", 3))  # name, the virmidi device written into
RTPMIDID_PATH = ("rtpmidid", 1)  # with --rtpmidid
PERIOD_NS = 20_000_000
TIMEOUT_S = 2.0


def mono():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def realtime_offset():
    """CLOCK_REALTIME - CLOCK_MONOTONIC in ns, from the closest of a few real-time reads around a monotonic one."""
    best = None
    for _ in range(50):
        before, middle, after = time.time_ns(), mono(), time.time_ns()
        if best is None or after - before < best[0]:
            best = (after - before, (before + after) // 2 - middle)
    return best[1]


def stamped_rawmidi_input(device):
    """hw:0,DEVICE's input, each read a list of 32-byte frames stamped by the kernel on CLOCK_MONOTONIC."""
    fd = os.open("/dev/snd/midiC0D%d" % device, os.O_RDONLY | os.O_NONBLOCK)
    fcntl.ioctl(fd, RAWMIDI_IOCTL_USER_PVERSION, struct.pack("i", RAWMIDI_PROTOCOL))
    params = struct.pack("=i4xQQII12s4x", RAWMIDI_STREAM_INPUT, 4096, 1, 0, FRAMING_TSTAMP | CLOCK_MONOTONIC_STAMPS, b"")
    fcntl.ioctl(fd, RAWMIDI_IOCTL_PARAMS, params)
    try:  # virmidi drops what arrives before the input's first read or poll (the params ioctl stops it again)
        os.read(fd, 4096)
    except BlockingIOError:
        pass
    return fd


def first_command(datagram):
    """(status, data1, data2) of the first MIDI command of an RTP-MIDI packet, or None."""
    flags = datagram[12]
    if flags & 0x80:
        length, at = ((flags & 0x0F) << 8) | datagram[13], 14
    else:
        length, at = flags & 0x0F, 13
    end = at + length
    if flags & 0x20:  # Z: the first command has a delta time
        while at < end and datagram[at] & 0x80:
            at += 1
        at += 1
    if at + 3 > end or not datagram[at] & 0x80:
        return None
    return datagram[at], datagram[at + 1], datagram[at + 2]


class Probe:
    def __init__(self, session_port, peer_port, paths):
        self.session_port = session_port
        self.control = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.control.bind(("127.0.0.1", peer_port))
        self.data = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.data.bind(("127.0.0.1", peer_port + 1))
        self.data.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        self.token, self.ssrc = random.randint(1, 2 ** 32 - 1), random.randint(1, 2 ** 32 - 1)
        self.jambridge_ssrc = None
        # rtpmidid's SSRC (from its IN) and control address, once it has invited us
        self.rtpmidid_ssrc, self.rtpmidid_control, self.rtpmidid_joined = None, None, False
        self.last_sequence = {}  # by SSRC: the last RTP sequence number received, for RS
        self.outputs = {device: os.open("/dev/snd/midiC0D%d" % device, os.O_WRONLY) for _, device in paths}
        self.kernel_input = stamped_rawmidi_input(1)
        self.offset = realtime_offset()
        self.next_sync = self.next_feedback = 0

    def handshake(self, command, name=None):
        packet = struct.pack(">H2sIII", 0xFFFF, command, 2, self.token, self.ssrc)
        return packet + (name.encode() + b"\0" if name is not None else b"")

    def invite(self, seconds=60):
        """Joins jambridge's session (both ports); keeps jambridge's SSRC. Retries until it answers: it may still be
        opening its ports."""
        deadline = time.monotonic() + seconds
        for sock, port in ((self.control, self.session_port), (self.data, self.session_port + 1)):
            sock.settimeout(2)
            while True:
                if time.monotonic() > deadline:
                    sys.exit("probe: jambridge's session on port %d did not accept the invitation" % port)
                sock.sendto(self.handshake(IN, "probe"), ("127.0.0.1", port))
                try:
                    answer = sock.recv(2048)
                except socket.timeout:
                    continue
                if answer[:2] == b"\xff\xff" and answer[2:4] == NO:
                    sys.exit("probe: jambridge refused the invitation")
                if answer[:2] == b"\xff\xff" and answer[2:4] == OK:
                    self.jambridge_ssrc = struct.unpack(">I", answer[12:16])[0]
                    break
            sock.setblocking(False)

    def await_rtpmidid(self, address, seconds=60):
        """Subscribes rtpmidid's port ADDRESS to hw:0,1's sequencer port, which makes rtpmidid invite this peer, and
        waits until it has joined both ports."""
        subprocess.run(["aconnect", "Virtual Raw MIDI 0-1", address], check=True)
        deadline = time.monotonic() + seconds
        while not self.rtpmidid_joined:
            if time.monotonic() > deadline:
                sys.exit("probe: rtpmidid did not invite this peer on both ports")
            self.arrivals(0.5)

    def accept(self, sock, datagram, sender):
        """Answers an invitation (rtpmidid's) with OK, and keeps the inviter's SSRC."""
        token, ssrc = struct.unpack(">II", datagram[8:16])
        sock.sendto(struct.pack(">H2sIII", 0xFFFF, OK, 2, token, self.ssrc) + b"probe\0", sender)
        self.rtpmidid_ssrc = ssrc
        if sock is self.control:
            self.rtpmidid_control = sender
        else:
            self.rtpmidid_joined = True

    def send_ck(self, count, ts1, ts2, ts3, to=None):
        packet = struct.pack(">H2sIB3xQQQ", 0xFFFF, b"CK", self.ssrc, count, ts1, ts2, ts3)
        self.data.sendto(packet, to or ("127.0.0.1", self.session_port + 1))

    def housekeeping(self):
        """CK every 2 s (jambridge drops an inviter that stops syncing), RS every second (its journal shrinks)."""
        now = mono()
        if now >= self.next_sync:
            self.offset = realtime_offset()
            self.send_ck(0, now // TICK_NS, 0, 0)
            self.next_sync = now + 2_000_000_000
        if now >= self.next_feedback:
            for ssrc, control in ((self.jambridge_ssrc, ("127.0.0.1", self.session_port)),
                                  (self.rtpmidid_ssrc, self.rtpmidid_control)):
                if ssrc in self.last_sequence and control is not None:
                    packet = struct.pack(">H2sIHH", 0xFFFF, b"RS", self.ssrc, self.last_sequence[ssrc], 0)
                    self.control.sendto(packet, control)
            self.next_feedback = now + 1_000_000_000

    def arrivals(self, timeout):
        """[(path, status, data1, data2, stamp_ns)] of what arrived within `timeout` seconds (empty if nothing)."""
        ready, _, _ = select.select([self.kernel_input, self.data, self.control], [], [], timeout)
        found = []
        if self.kernel_input in ready:
            frames = os.read(self.kernel_input, 4096)
            for at in range(0, len(frames) - FRAME.size + 1, FRAME.size):
                kind, length, nanoseconds, seconds, payload = FRAME.unpack_from(frames, at)
                if kind != 0:  # 0: MIDI bytes; other kinds are for MIDI 2.0, to be skipped
                    continue
                for i in range(0, length - 2, 3):  # note-ons and note-offs only are played
                    found.append(("kernel", *payload[i:i + 3], seconds * 1_000_000_000 + nanoseconds))
        if self.control in ready:
            datagram, sender = self.control.recvfrom(2048)  # nothing else to answer there once joined
            if datagram[:4] == b"\xff\xff" + IN and len(datagram) >= 16:
                self.accept(self.control, datagram, sender)
        if self.data in ready:
            while True:
                try:
                    datagram, ancillary, _, sender = self.data.recvmsg(2048, 256)
                except BlockingIOError:
                    break
                stamp = None
                for level, kind, value in ancillary:
                    if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                        seconds, nanoseconds = struct.unpack("qq", value[:16])
                        stamp = seconds * 1_000_000_000 + nanoseconds - self.offset
                if datagram[:4] == b"\xff\xff" + IN and len(datagram) >= 16:
                    self.accept(self.data, datagram, sender)
                elif datagram[:4] == b"\xff\xffCK" and len(datagram) >= 36:
                    count, (ts1, ts2, _) = datagram[8], struct.unpack(">QQQ", datagram[12:36])
                    if count == 0:
                        self.send_ck(1, ts1, mono() // TICK_NS, 0, sender)
                    elif count == 1:
                        self.send_ck(2, ts1, ts2, mono() // TICK_NS, sender)
                elif len(datagram) >= 13 and datagram[0] & 0xC0 == 0x80:
                    ssrc = struct.unpack(">I", datagram[8:12])[0]
                    path = {self.jambridge_ssrc: "jambridge", RELAY_SSRC: "relay", self.rtpmidid_ssrc: "rtpmidid"}.get(ssrc)
                    if ssrc in (self.jambridge_ssrc, self.rtpmidid_ssrc):
                        self.last_sequence[ssrc] = struct.unpack(">H", datagram[2:4])[0]
                    command = first_command(datagram)
                    if path and command and stamp is not None:
                        found.append((path, *command, stamp))
        return found

    def play(self, path, device, message):
        """Writes `message` into hw:0,DEVICE and waits for it on `path`: its latency in ns, or None after the
        timeout. A note-off may arrive as a note-on with velocity 0."""
        note, on = message[1], message[0] & 0xF0 == 0x90 and message[2] > 0
        deadline = time.monotonic() + TIMEOUT_S
        written = mono()
        os.write(self.outputs[device], message)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            for where, s, n, v, stamp in self.arrivals(left):
                if where == path and n == note and (s & 0xF0 == 0x90 and v > 0) == on:
                    return stamp - written

    def leave(self):
        self.control.sendto(self.handshake(BY), ("127.0.0.1", self.session_port))


def cpu_seconds(pid):
    """User and system CPU time process PID has used, in seconds (all its threads)."""
    with open("/proc/%d/stat" % pid) as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime: fields 14 and 15


def memory(pid):
    """VmRSS and RssAnon of process PID, in kB."""
    with open("/proc/%d/status" % pid) as status:
        fields = dict(line.split(":", 1) for line in status)
    return int(fields["VmRSS"].split()[0]), int(fields["RssAnon"].split()[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=300, help="note-ons measured per path")
    parser.add_argument("--warmup", type=int, default=20, help="note-ons per path first, not counted")
    parser.add_argument("--session-port", type=int, required=True, help="jambridge's session (control) port")
    parser.add_argument("--peer-port", type=int, required=True, help="this peer's control port (data: the next)")
    parser.add_argument("--pid", action="append", default=[], metavar="NAME=PID", help="a process to read RSS of")
    parser.add_argument("--rtpmidid", metavar="CLIENT:PORT", help="rtpmidid's sequencer port connecting to this peer")
    args = parser.parse_args()

    paths = PATHS + ((RTPMIDID_PATH,) if args.rtpmidid else ())
    probe = Probe(args.session_port, args.peer_port, paths)
    probe.invite()
    if args.rtpmidid:
        probe.await_rtpmidid(args.rtpmidid)
    pids = {name: int(pid) for name, pid in (entry.split("=") for entry in args.pid)}
    cpu = {name: cpu_seconds(pid) for name, pid in pids.items()}
    latencies = {name: [] for name, _ in paths}
    lost = {name: 0 for name, _ in paths}
    next_at = mono()
    for step in range((args.warmup + args.samples) * len(paths)):
        path, device = paths[step % len(paths)]
        note = 36 + step // len(paths) % 48
        latency = probe.play(path, device, bytes([0x90, note, 100]))
        if step >= args.warmup * len(paths):
            if latency is None:
                lost[path] += 1
            else:
                latencies[path].append(latency / 1000)
        probe.play(path, device, bytes([0x80, note, 0]))
        probe.housekeeping()
        next_at = max(next_at + PERIOD_NS, mono())  # a step that overran delays the next, no burst to catch up
        time.sleep(max(0, next_at - mono()) / 1e9)
    rss = {name: memory(pid) for name, pid in pids.items()}
    cpu = {name: cpu_seconds(pid) - cpu[name] for name, pid in pids.items()}
    probe.leave()

    def pick(values, q):
        return values[min(len(values) - 1, int(q * len(values)))]

    figures = {}
    print("| path | n | lost | p50 µs | p90 µs | p99 µs |")
    print("|---|---|---|---|---|---|")
    for name, _ in paths:
        values = sorted(latencies[name])
        if not values:
            sys.exit("probe: nothing came back on the %s path" % name)
        figures[name] = {q: pick(values, q) for q in (0.5, 0.9, 0.99)}
        print("| %s | %d | %d | %.0f | %.0f | %.0f |" % (name, len(values), lost[name], *figures[name].values()))
    for other in ("relay", "kernel") + (("rtpmidid",) if args.rtpmidid else ()):
        print("jambridge/%s: p50 %.1fx, p99 %.1fx" % (other, figures["jambridge"][0.5] / figures[other][0.5],
                                                      figures["jambridge"][0.99] / figures[other][0.99]))
    for name, (vm_rss, rss_anon) in rss.items():
        print("%s while running: VmRSS %d kB, RssAnon %d kB, CPU %.2f s over the notes" % (name, vm_rss, rss_anon,
                                                                                           cpu[name]))


if __name__ == "__main__":
    main()
