"""Real AppleMIDI sessions inviting jambridge, for its memory benchmark: COUNT players on
127.0.0.1, each with its own control and data ports, each completing the handshake on both
ports and then playing a note and a controller on every one of the 16 channels (so jambridge
keeps the most a peer can make it keep). They answer nothing afterwards and stay connected for
SECONDS (less than jambridge's 60 s timeout).

  applemidi_players.py PORT COUNT SECONDS

Prints "joined J refused R" once every player has its answer, then "done" at the end.
"""
import random
import socket
import struct
import sys
import time


def handshake(command, token, ssrc, name):
    return struct.pack(">HHIII", 0xFFFF, command, 2, token, ssrc) + name.encode() + b"\0"


def port_pair():
    """Two UDP sockets on consecutive ports (control, data)."""
    while True:
        control = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        control.bind(("127.0.0.1", 0))
        data = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            data.bind(("127.0.0.1", control.getsockname()[1] + 1))
            return control, data
        except OSError:
            control.close()
            data.close()


def answer(sock):
    """The command of the next session packet `sock` receives (OK or NO), or None after 5 s."""
    sock.settimeout(5)
    try:
        while True:
            packet = sock.recv(2048)
            if packet[:2] == b"\xff\xff" and packet[2:4] in (b"OK", b"NO"):
                return packet[2:4].decode()
    except socket.timeout:
        return None


def play(data, port, ssrc):
    """One RTP-MIDI packet per channel: note on 60 and controller 7, no journal."""
    sequence = random.randint(0, 65535)
    for channel in range(16):
        commands = bytes([0x90 | channel, 60, 100, 0x00, 0xB0 | channel, 7, 100])
        header = struct.pack(">BBHII", 0x80, 0x61, sequence & 0xFFFF, int(time.monotonic() * 10000) & 0xFFFFFFFF, ssrc)
        data.sendto(header + bytes([len(commands)]) + commands, ("127.0.0.1", port + 1))
        sequence += 1


def main():
    port, count, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    joined = refused = 0
    sockets = []
    for n in range(count):
        control, data = port_pair()
        token, ssrc = random.randint(1, 2 ** 32 - 1), random.randint(1, 2 ** 32 - 1)
        control.sendto(handshake(0x494E, token, ssrc, "player %d" % n), ("127.0.0.1", port))
        if answer(control) != "OK":
            refused += 1
            control.close()
            data.close()
            continue
        data.sendto(handshake(0x494E, token, ssrc, "player %d" % n), ("127.0.0.1", port + 1))
        if answer(data) != "OK":
            refused += 1
            continue
        joined += 1
        play(data, port, ssrc)
        sockets.append((control, data))
    print("joined %d refused %d" % (joined, refused), flush=True)
    time.sleep(seconds)
    print("done", flush=True)


if __name__ == "__main__":
    main()
