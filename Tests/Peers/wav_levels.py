"""How loud and how busy a WAV file is, window by window, read with Debian's soundfile and numpy (readers nobody here
wrote), for jambridge's tests of the drums' audio.

Prints one JSON object: the sample rate, the channel count, the length in frames, and per window of WINDOW seconds
its RMS level (both channels), its peak, and its onsets (frames where the louder channel's magnitude reaches
THRESHOLD after at least GAP frames below it, as wav_onsets.py counts them).
Usage: python3 wav_levels.py FILE WINDOW [THRESHOLD [GAP]]
"""
import json
import sys

import numpy
import soundfile

path, window = sys.argv[1], float(sys.argv[2])
threshold = float(sys.argv[3]) if len(sys.argv) > 3 else 0.05
gap = int(sys.argv[4]) if len(sys.argv) > 4 else 480

frames, rate = soundfile.read(path, dtype="float32", always_2d=True)
level = numpy.abs(frames).max(axis=1)
loud = numpy.flatnonzero(level >= threshold)
# An onset: a loud frame with at least GAP quiet frames before it (the first loud frame counts if GAP frames in).
previous = numpy.concatenate(([-gap - 1], loud[:-1]))
onsets = loud[(loud - previous) > gap]
size = int(window * rate)
windows = []
for start in range(0, len(level) - size + 1, size):
    chunk = frames[start:start + size]
    windows.append({
        "start": start / rate,
        "rms": float(numpy.sqrt(numpy.mean(numpy.square(chunk, dtype=numpy.float64)))),
        "peak": float(level[start:start + size].max()),
        "onsets": int(((onsets >= start) & (onsets < start + size)).sum()),
    })
print(json.dumps({"rate": rate, "channels": frames.shape[1], "frames": len(level), "windows": windows}))
