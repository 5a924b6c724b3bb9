"""Listens to jambridge sessions for the jam's end-to-end tests: joins each session at the PORTs given, in order, as
an AppleMIDI initiator (applemidi.py; a port not answering yet is tried again for 30 s), prints "joined N" as it joins
the N-th, and then for SECONDS one line per RTP-MIDI packet they send:

  N ARRIVAL HEX EVENTS PYMIDI

N: the session's index among the PORTs; ARRIVAL: the kernel's receive time (SO_TIMESTAMPNS, the system clock) in
seconds, so that reading one packet never makes another seem late; HEX: the command section's bytes;
EVENTS: its commands read by RFC 6295's layout (delta times, running status), comma-separated: tick, start,
continue, stop, spp:SIXTEENTHS, cc:CONTROLLER:VALUE or other; PYMIDI: the first command's status byte as PyPI
pymidi's parser (`pymidi.packets`, which nobody here wrote) reads it, or "error". pymidi 0.5 reads only the first
command of a packet (the others become its parameters), so EVENTS are read here.
Usage: python3 applemidi_listener.py SECONDS PORT [PORT ...]
"""
import select
import socket
import struct
import sys
import time

from pymidi import packets

from applemidi import Player

# Linux's SO_TIMESTAMPNS (and SCM_TIMESTAMPNS), which Python 3.11's socket module does not name.
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


def events(section, zero_delta_first):
    """The commands of a command section (RFC 6295 3.2): names, in order."""
    found, i, first, running = [], 0, True, None
    while i < len(section):
        if not first or zero_delta_first:
            while i < len(section) and section[i] & 0x80:
                i += 1
            i += 1
        first = False
        if i >= len(section):
            break
        status = section[i]
        if status & 0x80:
            i += 1
            if status < 0xF0:
                running = status
        elif running is not None:
            status = running
        else:
            found.append("other")
            break
        names = {0xF8: "tick", 0xFA: "start", 0xFB: "continue", 0xFC: "stop"}
        if status in names:
            found.append(names[status])
        elif status == 0xF2:
            found.append("spp:%d" % (section[i] | section[i + 1] << 7))
            i += 2
        elif 0xB0 <= status < 0xC0:
            found.append("cc:%d:%d" % (section[i], section[i + 1]))
            i += 2
        elif 0x90 <= status < 0xA0 and section[i + 1] > 0:
            found.append("on")
            i += 2
        elif 0x80 <= status < 0xF0:
            found.append("other")
            i += 1 if status & 0xF0 in (0xC0, 0xD0) else 2
        elif status == 0xF0:
            while i < len(section) and section[i] != 0xF7:
                i += 1
            i += 1
            found.append("other")
        else:
            found.append("other")
            i += {0xF1: 1, 0xF3: 1}.get(status, 0)
    return found


def joined(player):
    """True if `player` joined; false (after a pause) if nothing listens there yet."""
    try:
        return player.join()
    except OSError:  # the port refused (ICMP): the daemon is not up yet
        time.sleep(0.2)
        return False


def main():
    seconds, ports = float(sys.argv[1]), [int(port) for port in sys.argv[2:]]
    players = []
    for index, port in enumerate(ports):
        player, deadline = Player(port, "listener"), time.monotonic() + 30
        while not joined(player):
            if time.monotonic() > deadline:
                print("no answer from %d" % port, flush=True)
                return
        player.data.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        players.append(player)
        print("joined %d" % index, flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        readable, _, _ = select.select([player.data for player in players], [], [], 0.2)
        for sock in readable:
            datagram, ancillary, _, _ = sock.recvmsg(65536, 1024)
            stamps = [data for level, kind, data in ancillary if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS]
            seconds_, nanoseconds = struct.unpack("qq", stamps[0][:16]) if stamps else (time.time(), 0)
            arrival = seconds_ + nanoseconds / 1e9
            if datagram[:2] == b"\xff\xff" or len(datagram) < 14:
                continue
            flags = datagram[12]
            length, start = (((flags & 15) << 8) | datagram[13], 14) if flags & 0x80 else (flags & 15, 13)
            section = datagram[start:start + length]
            try:
                first = str(packets.MIDIPacket.parse(datagram).command.midi_list[0].command_byte)
            except Exception:
                first = "error"
            index = [player.data for player in players].index(sock)
            print("%d %.6f %s %s %s" % (index, arrival, section.hex(), ",".join(events(section, flags & 0x20)) or "-",
                                        first), flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
