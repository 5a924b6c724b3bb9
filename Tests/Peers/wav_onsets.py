"""Finds the onsets in a WAV file with PyPI/Debian soundfile (a reader nobody here wrote) for jambridge's tests.

Prints one JSON object: the sample rate, the channel count, the length in frames, the peak, and the onsets: each
frame where the louder channel's magnitude reaches THRESHOLD after at least GAP frames below it.
Usage: python3 wav_onsets.py FILE [THRESHOLD [GAP]]
"""
import json
import sys

import soundfile

path = sys.argv[1]
threshold = float(sys.argv[2]) if len(sys.argv) > 2 else 0.02
gap = int(sys.argv[3]) if len(sys.argv) > 3 else 480

frames, rate = soundfile.read(path, dtype="float32", always_2d=True)
level = [max(abs(float(value)) for value in frame) for frame in frames]
onsets, quiet = [], gap
for index, value in enumerate(level):
    if value >= threshold:
        if quiet >= gap:
            onsets.append(index)
        quiet = 0
    else:
        quiet += 1
print(json.dumps({"rate": rate, "channels": frames.shape[1], "frames": len(level), "peak": max(level), "onsets": onsets}))
