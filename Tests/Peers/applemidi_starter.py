"""A third-party RTP-MIDI player for the jam's end-to-end test, built on pymidi's packets (applemidi.py):
it invites jambridge's session at PORT as "starter", then reads commands from standard input, one a line:
"start" (a MIDI Start and 48 clock ticks at 120 BPM), "stop", "cc CHANNEL CONTROLLER VALUE" (channel 1-16),
"leave". It prints one JSON line per command
done, with what it heard from jambridge so far (pymidi's decoding).

  applemidi_starter.py PORT
"""
import json
import sys
import time

from applemidi import Player


def main():
    player = Player(int(sys.argv[1]), "starter")
    assert player.join(), "jambridge refused the starter"
    print(json.dumps({"event": "joined"}), flush=True)
    for line in sys.stdin:
        command = line.strip()
        if command == "start":
            player.play((0xFA,))
            for _ in range(48):
                time.sleep(60 / 120 / 24)
                player.play((0xF8,))
        elif command == "stop":
            player.play((0xFC,))
        elif command.startswith("cc "):
            channel, controller, value = (int(word) for word in command.split()[1:])
            player.play((0xB0 | (channel - 1), controller, value))
        elif command == "leave":
            player.leave()
        print(json.dumps({"event": command, "heard": player.heard()}), flush=True)
        if command == "leave":
            return


if __name__ == "__main__":
    main()
