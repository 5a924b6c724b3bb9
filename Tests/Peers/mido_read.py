"""Reads a Standard MIDI File with PyPI mido (a reader nobody here wrote) for jambridge's tests.

Prints each MIDI message (meta events left out), tracks merged in time order, one per line as
hex bytes ("90 3C 64"). Exits non-zero, with mido's error, if mido cannot read the file.
Usage: python3 mido_read.py FILE
"""
import sys

import mido

for message in mido.merge_tracks(mido.MidiFile(sys.argv[1]).tracks):
    if not message.is_meta:
        print(message.hex())
