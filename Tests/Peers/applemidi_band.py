"""Two AppleMIDI players sharing jambridge's session at PORT (a route `session -> session`), for
the no-echo test. P1 joins and plays note 60 and CC 1 = 10; P2 joins late; P2 plays note 62 and
CC 1 = 20; P1 plays 64; both play 67; P1 leaves holding 60, 64 and 67 (jambridge releases them);
P2 releases 62 and 67. STEP seconds between steps. Prints one JSON line: what each player heard.

  applemidi_band.py PORT STEP
"""
import json
import sys
import time

from applemidi import Player


def main():
    port, step = int(sys.argv[1]), float(sys.argv[2])
    p1, p2 = Player(port, "P1"), Player(port, "P2")
    heard = {"P1": [], "P2": []}

    def pause():
        time.sleep(step)
        heard["P1"] += p1.heard()
        heard["P2"] += p2.heard()

    assert p1.join(), "jambridge refused P1"
    pause()
    p1.play((0x90, 60, 100), (0xB0, 1, 10))
    pause()
    assert p2.join(), "jambridge refused P2"
    pause()
    p2.play((0x90, 62, 100), (0xB0, 1, 20))
    pause()
    p1.play((0x90, 64, 100))
    pause()
    p1.play((0x90, 67, 100))
    pause()
    p2.play((0x90, 67, 90))
    pause()
    p1.leave()
    pause()
    p2.play((0x80, 62, 0), (0x80, 67, 0))
    pause()
    print(json.dumps(heard), flush=True)


if __name__ == "__main__":
    main()
