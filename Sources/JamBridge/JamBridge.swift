import MIDI
