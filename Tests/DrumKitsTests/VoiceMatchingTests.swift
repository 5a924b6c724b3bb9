import Drums
import Testing

/// Which instrument plays each voice: overrides, then names, then General MIDI notes (`KitDescription.assignVoices`).
@Suite struct VoiceMatchingTests {
    /// A description of instruments called `names` (with `notes`, if given), one layer each.
    private func kit(_ names: [String], notes: [UInt8?]? = nil) -> KitDescription {
        KitDescription(name: "k", instruments: names.enumerated().map { index, name in
            KitDescription.Instrument(name: name, note: notes?[index], layers: [KitDescription.Layer(file: "\(index).wav")])
        })
    }

    /// The voice the instrument called `name` gets alone in a kit.
    private func voice(of name: String) -> DrumVoice? {
        kit([name]).assignVoices().instruments.first?.key
    }

    @Test func namesInTheWild() {
        let expected: [String: DrumVoice?] = [
            "Kick": .kick, "BassDrum": .kick, "c3 - bass drum 1": .kick, "Kick (Tama Superstar 22\")": .kick,
            "Snare Jazz": .snare, "Pearl Snare Rimshot": .snare, "Snare1": .snare,
            "Stick": .rim, "Pearl Side Stick": .rim, "Rim Click": .rim, "Hand Clap": .clap,
            "Closed HH": .hat, "SabianHatClosed": .hat, "Hi-Hat Closed (Paiste)": .hat, "VariBreaks Hat 1 Cl": .hat,
            "Pedal HH": .pedalHat, "Hi-Hat Pedal": .pedalHat, "VariBreaks Hat 1 Pd": .pedalHat,
            "Open HH": .openHat, "Hi Hat Opened": .openHat, "Hat Op Dirty": .openHat, "Side OHH": .openHat,
            "Hi-Hat Semiopen": .openHat,
            "Tom Low": .lowTom, "Floor Tom": .lowTom, "Pearl Tom Floor": .lowTom, "c4 - middle tom": .midTom,
            "Tom": .midTom, "Tom Hi": .highTom, "tomhi2": .highTom, "Tom High (Tama Superstar 12\")": .highTom,
            "Crash": .crash, "crash16inch": .crash, "Zildjian Splash": .crash, "China (Paiste Alpha 18\")": .crash,
            "Ride Jazz": .ride, "Ride (Custom, Zagrebin 22\")": .ride, "Crash/Ride (Paiste)": .ride,
            "Ride Bell": .rideBell, "Paiste Bell": .rideBell, "ride-cup": .rideBell,
            "Tambourine": .tambourine, "Cowbell": .cowbell, "Clave": .clave, "Maraca": .shaker, "Shaker": .shaker,
            "Conga 1": .highConga, "Conga Low": .lowConga,
            "Djembe1 Slap": nil, "Whistle": nil, "Zap 1": nil, "": nil,
        ]
        for (name, voice) in expected { #expect(self.voice(of: name) == voice, "\(name)") }
    }

    @Test func theBetterNameWinsThenTheKitsOrder() {
        let assignment = kit(["Snare Roll", "Snare Rock", "Snare Jazz", "Sabian Hat Semi-Open", "Sabian Hat Open",
                              "Zildjian Splash", "Sabian Crash", "Hat Swish", "Hat Closed"]).assignVoices()
        #expect(assignment.instruments == [.snare: 1, .openHat: 4, .crash: 6, .hat: 8])
        #expect(assignment.unusedInstruments == ["Snare Roll", "Snare Jazz", "Sabian Hat Semi-Open", "Zildjian Splash", "Hat Swish"])
        #expect(assignment.missingVoices == DrumVoice.allCases.filter { ![.snare, .openHat, .crash, .hat].contains($0) })
    }

    @Test func theGeneralMIDINoteWhenTheNameSaysNothing() {
        let assignment = kit(["Thing", "Other", "Snare 2", "Bob"], notes: [36, 38, 47, 60]).assignVoices()
        // "Snare 2" is a snare by name, which beats "Other", a snare by its note only; the note of "Snare 2" (47, a
        // tom's, as in ForzeeStereo) is not heard. "Bob" is on 60, no drum in General MIDI.
        #expect(assignment.instruments == [.kick: 0, .snare: 2])
        #expect(assignment.unusedInstruments == ["Other", "Bob"])
    }

    @Test func aNoteSharedByInstrumentsMeansNothing() {
        // Hydrogen's default: every instrument on note 60 (here, 36 to show it is not the note's meaning).
        #expect(kit(["A", "B", "C"], notes: [36, 36, 36]).assignVoices().instruments.isEmpty)
        #expect(kit(["A", "B", "C"], notes: [36, 36, 38]).assignVoices().instruments == [.snare: 2])
    }

    @Test func aDescribedVoiceComesFirst() {
        var description = kit(["Kick", "Boom"])
        description.instruments[1].voice = .kick
        #expect(description.assignVoices().instruments == [.kick: 1])
    }

    @Test func overridesByNameCaseAside() {
        let description = kit(["Kick", "Snare", "Big Boom"])
        let assignment = description.assignVoices(overrides: [.kick: "big boom", .ride: "Snare", .crash: "Gong"])
        #expect(assignment.instruments == [.kick: 2, .snare: 1, .ride: 1])
        #expect(assignment.unknownOverrides == [.crash: "Gong"])
        #expect(assignment.unusedInstruments == ["Kick"])
    }

    @Test func excludedInstrumentsGiveTheirVoiceToTheNext() {
        let description = kit(["Snare A", "Snare B", "Kick"])
        let assignment = description.assignVoices(excluding: [0])
        #expect(assignment.instruments == [.snare: 1, .kick: 2])
        #expect(assignment.unusedInstruments.isEmpty)
    }
}
