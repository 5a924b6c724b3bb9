"""Real AppleMIDI sessions inviting jambridge, for its memory benchmark: COUNT players on
127.0.0.1, each with its own control and data ports, each completing the handshake on both
ports and then playing a note and a controller on every one of the 16 channels (so jambridge
keeps the most a peer can make it keep). They answer nothing afterwards and stay connected for
SECONDS (less than jambridge's 60 s timeout).

  applemidi_players.py PORT COUNT SECONDS

Prints "joined J refused R" once every player has its answer, then "done" at the end.
"""
import sys
import time

from applemidi import Player


def main():
    port, count, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    joined = refused = 0
    players = []
    for n in range(count):
        player = Player(port, "player %d" % n)
        if not player.join():
            refused += 1
            continue
        joined += 1
        for channel in range(16):
            player.play((0x90 | channel, 60, 100), (0xB0 | channel, 7, 100))
        players.append(player)
    print("joined %d refused %d" % (joined, refused), flush=True)
    time.sleep(seconds)
    print("done", flush=True)


if __name__ == "__main__":
    main()
