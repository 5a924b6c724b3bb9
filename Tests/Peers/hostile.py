"""A hostile AppleMIDI peer for jambridge's hardening tests (issue 29), on 127.0.0.1, built on applemidi.py's
Player: it joins the session at PORT honestly, then misbehaves. Prints one JSON line when done.

  hostile.py backdated PORT SECONDS   one clock-sync exchange (as initiator: CK 0, 1, 2), then a MIDI Start whose
                                      RTP timestamp is SECONDS in the past
  hostile.py flood PORT RATE SECONDS  Start and Stop in turn, RATE a second, for SECONDS
"""
import json
import socket
import struct
import sys
import time

from applemidi import Player

CK = 0x434B


def clock_sync(player):
    """One CK exchange with jambridge as responder, so that it knows our clock (and our timestamps mean something)."""
    now = int(time.monotonic() * 10000)
    player.data.sendto(struct.pack(">HHIB3xQQQ", 0xFFFF, CK, player.ssrc, 0, now, 0, 0), ("127.0.0.1", player.port + 1))
    player.data.settimeout(5)
    while True:
        packet = player.data.recv(2048)
        if packet[:4] == struct.pack(">HH", 0xFFFF, CK) and packet[8] == 1:
            break
    ts1, ts2 = struct.unpack(">QQ", packet[12:28])
    ts3 = int(time.monotonic() * 10000)
    player.data.sendto(struct.pack(">HHIB3xQQQ", 0xFFFF, CK, player.ssrc, 2, ts1, ts2, ts3), ("127.0.0.1", player.port + 1))


def start_stamped(player, ticks):
    """A MIDI Start whose RTP timestamp is `ticks` (100 µs)."""
    header = struct.pack(">BBHII", 0x80, 0x61, player.sequence & 0xFFFF, ticks & 0xFFFFFFFF, player.ssrc)
    player.data.sendto(header + bytes([1, 0xFA]), ("127.0.0.1", player.port + 1))
    player.sequence += 1


def main():
    kind, port = sys.argv[1], int(sys.argv[2])
    player = Player(port, "attacker")
    assert player.join(), "jambridge refused the attacker"
    sent = 0
    if kind == "backdated":
        clock_sync(player)
        time.sleep(0.2)
        start_stamped(player, int((time.monotonic() - float(sys.argv[3])) * 10000))
        sent = 1
    elif kind == "flood":
        rate, seconds = float(sys.argv[3]), float(sys.argv[4])
        begin = time.monotonic()
        while time.monotonic() - begin < seconds:
            player.play((0xFA if sent % 2 == 0 else 0xFC,))
            sent += 1
            due = begin + sent / rate
            pause = due - time.monotonic()
            if pause > 0:
                time.sleep(pause)
    print(json.dumps({"event": "done", "sent": sent}), flush=True)


if __name__ == "__main__":
    main()
