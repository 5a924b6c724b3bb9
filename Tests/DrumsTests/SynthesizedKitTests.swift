import Glibc
import Testing
@testable import Drums

@Suite struct SynthesizedKitTests {
    /// Made once for the suite: a debug build takes about a second.
    static let kit = Kit.synthesized()
    var kit: Kit { Self.kit }

    private func sample(_ voice: DrumVoice) -> Sample { kit.instruments[voice]!.layer(for: 1).sample }
    private func seconds(_ voice: DrumVoice) -> Double { Double(sample(voice).frameCount) / Double(Kit.sampleRate) }

    @Test func everyVoiceIsThereAndSoundsWithinFullScale() throws {
        #expect(kit.name == "built-in")
        for voice in DrumVoice.allCases {
            let instrument = try #require(kit.instruments[voice], "\(voice)")
            #expect(instrument.voice == voice)
            for layer in instrument.layers {
                let all = layer.sample.left + layer.sample.right
                #expect(!all.contains { $0.isNaN }, "\(voice)")
                #expect(peak(all) <= 1, "\(voice)")
                #expect(peak(all) > 0.1, "\(voice)")
            }
        }
    }

    @Test func everySampleDiesAwayToSilenceAtItsEnd() {
        for instrument in kit.instruments.values {
            for layer in instrument.layers {
                let lastMillisecond = Kit.sampleRate / 1000
                let tail = layer.sample.left.suffix(lastMillisecond) + layer.sample.right.suffix(lastMillisecond)
                #expect(peak(tail) < 0.001, "\(instrument.voice)")
                #expect(layer.sample.left.last == 0 && layer.sample.right.last == 0, "\(instrument.voice)")
            }
        }
    }

    @Test func lengthsSuitEachVoice() {
        for voice in DrumVoice.allCases { #expect((0.05...3).contains(seconds(voice)), "\(voice)") }
        #expect(seconds(.hat) < seconds(.pedalHat))
        #expect(seconds(.pedalHat) < seconds(.openHat))
        #expect(seconds(.rim) < seconds(.snare))
        #expect(seconds(.kick) >= 0.4)
        for voice in DrumVoice.allCases where voice != .crash { #expect(seconds(voice) < seconds(.crash), "\(voice)") }
    }

    @Test func theKitIsTheSameEveryTime() {
        #expect(Kit.synthesized() == kit)
    }

    @Test func kickAndTomsSitLowHatsAndCymbalsHigh() {
        for voice in [DrumVoice.kick, .lowTom, .midTom, .highTom] { #expect(lowShare(sample(voice)) > 0.95, "\(voice)") }
        for voice in [DrumVoice.hat, .pedalHat, .openHat, .crash, .shaker] {
            #expect(lowShare(sample(voice)) < 0.05, "\(voice)")
        }
        #expect(crossingRate(sample(.lowTom)) < crossingRate(sample(.midTom)))
        #expect(crossingRate(sample(.midTom)) < crossingRate(sample(.highTom)))
        #expect(crossingRate(sample(.lowConga)) < crossingRate(sample(.highConga)))
    }

    @Test func theGhostSnareIsSofterAndDarker() {
        let snare = kit.instruments[.snare]!
        let ghost = snare.layer(for: 0.3).sample, full = snare.layer(for: 0.9).sample
        #expect(ghost != full)
        #expect(peak(ghost.left) < peak(full.left))
        #expect(lowShare(ghost) > lowShare(full))
    }

    @Test func kickAndSnareAreLoudestAndCentredHatsALittleRight() {
        for voice in [DrumVoice.kick, .snare] {
            #expect(abs(20 * log10(peak(sample(voice).left)) + 3) < 0.1, "\(voice)")
            #expect(sample(voice).left == sample(voice).right, "\(voice)")
        }
        for voice in DrumVoice.allCases where voice != .kick && voice != .snare {
            #expect(peak(sample(voice).left + sample(voice).right) < peak(sample(.kick).left), "\(voice)")
        }
        for voice in [DrumVoice.hat, .pedalHat, .openHat] {
            let (left, right) = (peak(sample(voice).left), peak(sample(voice).right))
            #expect(left < right && right < 2 * left, "\(voice)")
        }
    }

    @Test func theHatsAndNothingElseShareAChokeGroup() {
        let choked = kit.instruments.values.filter { $0.chokeGroup != nil }
        #expect(Set(choked.map(\.voice)) == [.hat, .pedalHat, .openHat])
        #expect(Set(choked.map(\.chokeGroup)).count == 1)
    }
}

private func peak(_ samples: some Sequence<Float>) -> Float {
    samples.reduce(0) { max($0, abs($1)) }
}

/// The share of the sample's energy (left and right summed) under a one-pole low-pass at 1 kHz.
private func lowShare(_ sample: Sample) -> Double {
    let a = 1 - exp(-2 * Double.pi * 1000 / Double(Kit.sampleRate))
    var low = 0.0, lowEnergy = 0.0, energy = 0.0
    for (l, r) in zip(sample.left, sample.right) {
        let x = Double(l + r)
        low += a * (x - low)
        lowEnergy += low * low
        energy += x * x
    }
    return lowEnergy / energy
}

/// Sign changes per frame of the left and right channels summed: twice the pitch over the sample rate, for a tone.
private func crossingRate(_ sample: Sample) -> Double {
    let mono = zip(sample.left, sample.right).map { $0 + $1 }
    let changes = zip(mono, mono.dropFirst()).filter { ($0 < 0) != ($1 < 0) }.count
    return Double(changes) / Double(mono.count)
}
