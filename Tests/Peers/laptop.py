"""The laptop of the acceptance scenario (issue 16): a third-party RTP-MIDI responder, PyPI pymidi's server, that
accepts invitations on every address at PORT (control) and PORT+1 (data) and prints one JSON line per event, each
with "t", the time on CLOCK_MONOTONIC in seconds (the clock of the daemons' logs and of amidi's timestamps):
  {"event": "listening", "pid": ...} / {"event": "connected" | "disconnected", "name": ...} /
  {"event": "note_on" | "note_off", "channel": c (0-15), "key": k, "velocity": v, "seq": RTP sequence number} /
  {"event": "cc", "channel": c, "controller": n, "value": v, "seq": ...} /
  {"event": "cc", "channel": c, "controller": n, "value": v, "lost": ...} (a controller's value the journal gave) /
  {"event": "repaired", "channel": c, "key": k, "lost": packets lost before this one} (a note-off the journal gave) /
  {"event": "repaired_on", "channel": c, "key": k, "velocity": v, "lost": ...} (a note-on the journal gave) /
  {"event": "late", "seq": ...} (a packet behind one already taken: dropped, the journal repaired what it held) /
  {"event": "held", "notes": [[channel, key], ...]} (at the end: what is still on here) /
  {"event": "error", "error": ..., "datagram": hex} (this script failed to read a datagram: a bug here)
Usage: python3 laptop.py PORT SECONDS (or until SIGTERM/SIGINT; "held" is printed either way)

pymidi decodes the commands (it reads note on/off, poly pressure and CC; anything else in a packet ends its
decoding of that packet) and keeps no recovery journal. A receiver that is to keep no note on through packet loss
must read the journal, as macOS and rtpmidid do: when the RTP sequence numbers show packets lost, this script reads
chapter N (RFC 6295, A.6) of the next packet's journal from the datagram, releases each note it holds whose OFFBITS
say it is off, and plays each logged note-on it missed that the sender marks as still worth playing (Y); from
chapter C (A.3) it takes each controller's value that differs from the last it had; a packet that comes after a later
one is dropped (what it held was repaired). The chapters' bytes are found by RFC 6295's layout (pymidi's own journal
parser stops at the first channel); nothing of jambridge's is used.
"""
import json
import os
import signal
import sys
import time

from pymidi import server


def say(**fields):
    print(json.dumps(dict(t=round(time.monotonic(), 4), **fields)), flush=True)


def channel_journals(datagram):
    """The channel journals of an RTP-MIDI datagram's recovery journal, as (channel, chapter bytes) pairs; [] if it
    has none. RFC 6295: the RTP header (12 bytes), the command section (a header of 1 or 2 bytes with its length), the
    journal's header (3 bytes), the system journal if Y, then TOTCHAN + 1 channel journals if A."""
    index = 12
    flags = datagram[index]
    if flags & 0x80:  # B: a 12-bit length
        length = ((flags & 0x0F) << 8) | datagram[index + 1]
        index += 2
    else:
        length = flags & 0x0F
        index += 1
    if not flags & 0x40:  # J: no journal
        return []
    index += length
    header = datagram[index]
    has_system, has_channels, total = header & 0x40, header & 0x20, (header & 0x0F) + 1
    index += 3
    if has_system:
        index += ((datagram[index] & 0x03) << 8) | datagram[index + 1]
    journals = []
    for _ in range(total if has_channels else 0):
        channel = (datagram[index] >> 3) & 0x0F
        size = ((datagram[index] & 0x03) << 8) | datagram[index + 1]
        journals.append((channel, datagram[index + 2], datagram[index + 3:index + size]))
        index += size
    return journals


def chapter_c_and_n(toc, chapters):
    """Chapters C and N of a channel journal, from its table of contents (P C M W N E T A) and its chapters' bytes:
    the controllers' values (number -> value; logs of the toggle and count tools are left out, A = 1), the note logs,
    each (key, velocity, Y: the sender says a lost note-on is still worth playing), and the notes its OFFBITS mark as
    off. Empty for a chapter the journal does not have."""
    index, values = 0, {}
    if toc & 0x80:  # P: program change, 3 bytes
        index += 3
    if toc & 0x40:  # C: a header with LEN, then LEN + 1 logs of 2 bytes (S|NUMBER, A|VALUE)
        count = (chapters[index] & 0x7F) + 1
        for log in range(count):
            number, value = chapters[index + 1 + 2 * log], chapters[index + 2 + 2 * log]
            if not value & 0x80:  # A = 0: the value tool
                values[number & 0x7F] = value
        index += 1 + count * 2
    if toc & 0x20:  # M: parameters, its LENGTH includes its header
        index += ((chapters[index] & 0x03) << 8) | chapters[index + 1]
    if toc & 0x10:  # W: pitch wheel, 2 bytes
        index += 2
    if not toc & 0x08:  # no N
        return values, [], set()
    count, low, high = chapters[index] & 0x7F, chapters[index + 1] >> 4, chapters[index + 1] & 0x0F
    if count == 127 and low == 15 and high == 0:
        count = 128
    index += 2
    logs = []
    for _ in range(count):
        logs.append((chapters[index] & 0x7F, chapters[index + 1] & 0x7F, bool(chapters[index + 1] & 0x80)))
        index += 2
    off = set()
    for octet in range(low, high + 1) if low <= high else []:
        bits = chapters[index]
        index += 1
        for bit in range(8):
            if bits & (0x80 >> bit):
                off.add(octet * 8 + bit)
    return values, logs, off


def realtime_only(datagram):
    """True for an RTP-MIDI packet whose commands are all real-time (clock ticks, Start, Stop): nothing in them is
    reported, so pymidi's parser, slow in the VM, is spared the 48 a second of them; only their sequence number and,
    after a loss, their journal matter."""
    if len(datagram) < 13 or datagram[0] & 0xC0 != 0x80:
        return False
    header, start = datagram[12], 13
    length = header & 0x0F
    if header & 0x80:
        if len(datagram) < 14:
            return False
        length, start = (length << 8) | datagram[13], 14
    section = datagram[start:start + length]
    return len(section) == length and not any(0x80 <= byte <= 0xF7 for byte in section)


class Laptop(server.Server):
    def __init__(self, port):
        super().__init__([("0.0.0.0", port)])
        self.held = set()  # (channel, key)
        self.controllers = {}  # (channel, number) -> the last value heard or repaired
        self.expected = None  # the next RTP sequence number
        self.datagram = b""
        self.events = None  # the Events handler, which real-time-only packets go to directly

    def _loop_once(self, timeout=None):
        # pymidi's own loop, keeping the datagram for the journal (pymidi reads 1024 bytes, so does this).
        import select
        readable, _, _ = select.select(list(self.socket_map.keys()), [], [], timeout)
        for sock in readable:
            datagram, address = sock.recvfrom(1024)
            self.datagram = bytes(datagram)
            try:
                if self.events is not None and realtime_only(self.datagram):
                    self.events.take([])
                    continue
                self.socket_map[sock].handle_message(self.datagram, address)
            except Exception as error:  # pymidi's own failures: say it, go on
                say(event="error", error=repr(error), datagram=self.datagram.hex())


class Events(server.Handler):
    def __init__(self, laptop):
        self.laptop = laptop

    def on_peer_connected(self, peer):
        say(event="connected", name=str(peer.name))

    def on_peer_disconnected(self, peer):
        say(event="disconnected", name=str(peer.name))

    def on_midi_commands(self, peer, commands):
        try:
            self.take(commands)
        except Exception as error:  # a bug here must not end the laptop's session: say it, go on
            say(event="error", error=repr(error), datagram=self.laptop.datagram.hex())

    def take(self, commands):
        laptop, datagram = self.laptop, self.laptop.datagram
        seq = (datagram[2] << 8) | datagram[3]
        lost = 0 if laptop.expected is None else (seq - laptop.expected) & 0xFFFF
        if lost and lost < 0x8000:
            for channel, toc, chapters in channel_journals(datagram):
                values, logs, off = chapter_c_and_n(toc, chapters)
                for number, value in sorted(values.items()):
                    if laptop.controllers.get((channel, number)) != value:
                        laptop.controllers[(channel, number)] = value
                        say(event="cc", channel=channel, controller=number, value=value, lost=lost)
                for key in sorted(off):
                    if (channel, key) in laptop.held:
                        laptop.held.discard((channel, key))
                        say(event="repaired", channel=channel, key=key, lost=lost)
                for key, velocity, worth in logs:
                    if worth and velocity > 0 and key not in off and (channel, key) not in laptop.held:
                        laptop.held.add((channel, key))
                        say(event="repaired_on", channel=channel, key=key, velocity=velocity, lost=lost)
        if lost >= 0x8000:  # behind one already taken: the journal repaired what it held
            say(event="late", seq=seq)
            return
        laptop.expected = (seq + 1) & 0xFFFF
        for command in commands:
            kind = command.command
            if kind in ("note_on", "note_off"):
                key = int(command.params.key)
                on = kind == "note_on" and command.params.velocity > 0
                if on:
                    laptop.held.add((command.channel, key))
                else:
                    laptop.held.discard((command.channel, key))
                say(event="note_on" if on else "note_off", channel=command.channel, key=key,
                    velocity=command.params.velocity, seq=seq)
            elif kind == "control_mode_change":
                laptop.controllers[(command.channel, int(command.params.controller))] = int(command.params.value)
                say(event="cc", channel=command.channel, controller=command.params.controller,
                    value=command.params.value, seq=seq)


def main():
    port, seconds = int(sys.argv[1]), float(sys.argv[2])
    laptop = Laptop(port)
    laptop.events = Events(laptop)
    laptop.add_handler(laptop.events)
    laptop._init_protocols()
    laptop.ipv4_protocols[0].name = laptop.ipv4_protocols[1].name = "Laptop"
    running = [True]

    def stop(*_):
        running[0] = False

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    say(event="listening", pid=os.getpid())
    deadline = time.monotonic() + seconds
    while running[0] and time.monotonic() < deadline:
        laptop._loop_once(timeout=0.1)
    say(event="held", notes=sorted([list(note) for note in laptop.held]))


if __name__ == "__main__":
    main()
