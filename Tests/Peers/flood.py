"""Forged traffic for jambridge's hardening tests and benchmarks: datagrams from distinct source
ports, each sent once and never followed up, as a spoofing attacker would send them.

  flood.py applemidi PORT COUNT [RATE]
                                  AppleMIDI invitations (IN) on the control port PORT, each with
                                  a random SSRC and token, from a socket of its own; RATE a second
                                  if given, else as fast as they go
  flood.py osc PORT COUNT         OSC fader messages (/1/fader1 f 0.5) to PORT, each from a socket
                                  of its own

Everything goes to 127.0.0.1. Prints one line: how many datagrams were sent.
"""
import random
import socket
import struct
import sys
import time


def invitation():
    ssrc, token = random.randint(1, 2 ** 32 - 1), random.randint(1, 2 ** 32 - 1)
    return struct.pack(">HHIII", 0xFFFF, 0x494E, 2, token, ssrc) + b"forged\0"


def fader():
    # OSC: address, type tags ",f", one float; each string padded to 4 bytes.
    return b"/1/fader1\0\0\0" + b",f\0\0" + struct.pack(">f", 0.5)


def main():
    kind, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rate = float(sys.argv[4]) if len(sys.argv) > 4 else None
    make = {"applemidi": invitation, "osc": fader}[kind]
    begin = time.monotonic()
    for n in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        s.sendto(make(), ("127.0.0.1", port))
        s.close()
        if rate is not None:
            pause = begin + (n + 1) / rate - time.monotonic()
            if pause > 0:
                time.sleep(pause)
    print("sent %d %s datagrams" % (count, kind), flush=True)


if __name__ == "__main__":
    main()
