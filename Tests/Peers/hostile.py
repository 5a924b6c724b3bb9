"""A hostile AppleMIDI peer for jambridge's hardening tests (issue 29), on 127.0.0.1, built on applemidi.py's
Player: it joins the session at PORT honestly, then misbehaves. Prints one JSON line when done.

  hostile.py backdated PORT SECONDS   one clock-sync exchange (as initiator: CK 0, 1, 2), then a MIDI Start whose
                                      RTP timestamp is SECONDS in the past
  hostile.py flood PORT RATE SECONDS  Start and Stop in turn, RATE a second, for SECONDS
  hostile.py forged PORT KIND         leads a song at 120 BPM (clock sync, Start, 2 s of ticks), then one forged
                                      packet under its SSRC, then 2 s more of ticks and its Stop. KIND:
                                        stop      a Stop from another address (127.0.0.2)
                                        sequence  from its own address (as a spoofer would), a tick 30,000 on in
                                                  sequence
                                        journal   from its own address, a tick one packet on whose journal's
                                                  chapter Q puts the running song at tick 500,000
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


def stamped(player, sequence, body):
    """An RTP-MIDI packet numbered `sequence` stamped now, carrying `body` (command section and journal)."""
    header = struct.pack(">BBHII", 0x80, 0x61, sequence & 0xFFFF, int(time.monotonic() * 10000) & 0xFFFFFFFF, player.ssrc)
    return header + body


def lead_song(player, seconds, start):
    """A tick every 1/48 s for `seconds` (after a Start if `start`), stamped when sent."""
    if start:
        player.play((0xFA,))
    begin = time.monotonic()
    for tick in range(int(seconds * 48)):
        pause = begin + tick / 48 - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        player.play((0xF8,))


def forged(player, kind):
    """Sends the forged packet of `kind` under `player`'s SSRC (see the module's doc)."""
    if kind == "stop":
        forger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        forger.bind(("127.0.0.2", 0))
        forger.sendto(stamped(player, player.sequence, bytes([1, 0xFC])), ("127.0.0.1", player.port + 1))
    elif kind == "sequence":
        player.data.sendto(stamped(player, player.sequence + 30000, bytes([1, 0xF8])), ("127.0.0.1", player.port + 1))
    elif kind == "journal":
        # J=1, one command (a tick); the journal: Y=1, checkpoint; the system journal: Q, 5 bytes; chapter Q:
        # N (running), C (clock), TOP 7, CLOCK 0xA120: 500,000.
        journal = struct.pack(">BHHBH", 0x40, (player.sequence - 1) & 0xFFFF, 0x1005, 0x57, 0xA120)
        player.sequence += 1  # one packet "lost" before it, so that its journal repairs
        player.data.sendto(stamped(player, player.sequence, bytes([0x41, 0xF8]) + journal), ("127.0.0.1", player.port + 1))
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
    elif kind == "forged":
        clock_sync(player)
        lead_song(player, 2, start=True)
        forged(player, sys.argv[3])
        lead_song(player, 2, start=False)
        player.play((0xFC,))
        sent = 1
    print(json.dumps({"event": "done", "sent": sent}), flush=True)


if __name__ == "__main__":
    main()
