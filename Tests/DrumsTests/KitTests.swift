import Testing
@testable import Drums

@Suite struct KitTests {
    @Test func everyVoiceComesBackFromItsGeneralMIDINote() {
        for voice in DrumVoice.allCases { #expect(DrumVoice(generalMIDINote: voice.generalMIDINote) == voice) }
        #expect(DrumVoice(generalMIDINote: 60) == nil)
    }

    @Test func aHitTakesTheLayerOfItsVelocityOrTheNearest() {
        let soft = KitLayer(velocities: 0...0.4, sample: Sample(left: [0.1]))
        let loud = KitLayer(velocities: 0.6...1, sample: Sample(left: [0.9]))
        let snare = KitInstrument(name: "Snare", voice: .snare, layers: [soft, loud])
        #expect(snare.layer(for: 0.2) == soft)
        #expect(snare.layer(for: 0.8) == loud)
        #expect(snare.layer(for: 0.45) == soft)
        #expect(snare.layer(for: 0.58) == loud)
    }
}
