"""What the Link test peers (link_peer.py, linkhut.py) share: CLOCK_MONOTONIC, jambridge's clock, and their answers
as one JSON object a line, flushed at once, whole even when threads print together."""
import json
import threading
import time

_printing = threading.Lock()


def monotonic():
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def say(**fields):
    with _printing:
        try:
            print(json.dumps(fields), flush=True)
        except BrokenPipeError:  # the test stopped reading (and will end this peer)
            pass
