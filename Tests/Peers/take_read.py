"""Reads a take with PyPI mido and pretty_midi (two readers nobody here wrote) for jambridge's tests.

Prints one JSON object: for each reader, the notes (pitch, beat, seconds) and the tempo events
(beat, seconds, BPM) as it understands them; pretty_midi's bar lines (seconds) too. mido's beats
are its ticks over the file's ticks per quarter, its seconds its own conversion of the tempo map;
pretty_midi's beats are its time_to_tick of each note's start. Exits non-zero, with the reader's
error, if either cannot read the file.
Usage: python3 take_read.py FILE
"""
import json
import sys

import mido
import pretty_midi

path = sys.argv[1]

midi = mido.MidiFile(path)
ticks_per_quarter = midi.ticks_per_beat
tick, seconds = 0, 0.0
mido_notes, mido_tempos = [], []
# Iterating the file gives mido's seconds, merging its tracks the ticks, message for message.
for timed, message in zip(midi, mido.merge_tracks(midi.tracks)):
    seconds += timed.time
    tick += message.time
    if message.type == "set_tempo":
        mido_tempos.append({"beat": tick / ticks_per_quarter, "seconds": seconds, "bpm": mido.tempo2bpm(message.tempo)})
    elif message.type == "note_on" and message.velocity > 0:
        mido_notes.append({"pitch": message.note, "beat": tick / ticks_per_quarter, "seconds": seconds})

song = pretty_midi.PrettyMIDI(path)
times, tempi = song.get_tempo_changes()
pretty_notes = sorted((note for instrument in song.instruments for note in instrument.notes), key=lambda note: note.start)
print(json.dumps({
    "mido": {"notes": mido_notes, "tempos": mido_tempos},
    "pretty_midi": {
        "notes": [{"pitch": note.pitch, "beat": song.time_to_tick(note.start) / song.resolution, "seconds": note.start}
                  for note in pretty_notes],
        "tempos": [{"seconds": float(time), "bpm": float(bpm)} for time, bpm in zip(times, tempi)],
        "downbeats": [float(time) for time in song.get_downbeats()],
    },
}))
