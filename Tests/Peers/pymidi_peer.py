"""A third-party RTP-MIDI responder for jambridge's tests: PyPI pymidi's server.

Listens on 127.0.0.1:PORT (control) and PORT+1 (data), accepts invitations and prints one
JSON line per event it decodes, flushed at once:
  {"event": "listening"} / {"event": "connected", "name": ...} /
  {"event": "note_on" | "note_off", "channel": c, "key": k, "velocity": v} /
  {"event": "cc", "channel": c, "controller": n, "value": v} / {"event": "disconnected"}
Usage: python3 pymidi_peer.py PORT SECONDS
"""
import json
import sys
import time

from pymidi import server


def say(**fields):
    print(json.dumps(fields), flush=True)


class Recorder(server.Handler):
    def on_peer_connected(self, peer):
        say(event="connected", name=str(peer.name))

    def on_peer_disconnected(self, peer):
        say(event="disconnected", name=str(peer.name))

    def on_midi_commands(self, peer, command_list):
        for command in command_list:
            kind = command.command
            if kind in ("note_on", "note_off"):
                say(event=str(kind), channel=command.channel, key=int(command.params.key),
                    velocity=command.params.velocity)
            elif kind == "control_mode_change":
                say(event="cc", channel=command.channel, controller=command.params.controller,
                    value=command.params.value)
            else:
                say(event="other", command=str(kind))


def main():
    port, seconds = int(sys.argv[1]), float(sys.argv[2])
    peer = server.Server([("127.0.0.1", port)])
    peer.add_handler(Recorder())
    peer._init_protocols()
    say(event="listening")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        peer._loop_once(timeout=0.1)


if __name__ == "__main__":
    main()
