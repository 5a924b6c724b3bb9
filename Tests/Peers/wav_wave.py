"""Reads a WAV file with Python's own `wave` module (the reader most scripts reach for first) for jambridge's tests.

Prints one JSON object: the sample width in bytes, the channel count, the rate, the length in frames and the peak
(0-1) over every sample; or {"error": "..."} with what `wave` said if it cannot read the file (it reads integer PCM
only, so a 32-bit float WAV is "unknown format: 3").
Usage: python3 wav_wave.py FILE
"""
import json
import sys
import wave

try:
    with wave.open(sys.argv[1], "rb") as file:
        width, channels, rate, frames = file.getsampwidth(), file.getnchannels(), file.getframerate(), file.getnframes()
        data = file.readframes(frames)
except (wave.Error, EOFError) as error:
    print(json.dumps({"error": str(error)}))
    sys.exit(0)

full = 1 << (8 * width - 1)
peak = 0
for start in range(0, len(data), width):
    value = int.from_bytes(data[start:start + width], "little", signed=width > 1)
    peak = max(peak, abs(value))
print(json.dumps({"width": width, "channels": channels, "rate": rate, "frames": frames, "peak": peak / full}))
