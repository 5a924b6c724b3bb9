import MIDI
import Testing
@testable import Drums

@Suite struct DrumMixerTests {
    let click = Sample(left: [1, 0.5, 0.25])
    var kit: Kit {
        Kit(name: "test", instruments: [
            .kick: KitInstrument(name: "kick", voice: .kick, layers: [KitLayer(sample: click)]),
            .hat: KitInstrument(name: "hat", voice: .hat, layers: [KitLayer(sample: Sample(left: [1, 1, 1, 1]))], chokeGroup: 1),
            .openHat: KitInstrument(name: "open hat", voice: .openHat, layers: [KitLayer(sample: Sample(left: [Float](repeating: 1, count: 2000)))], chokeGroup: 1),
        ])
    }

    func render(_ mixer: inout DrumMixer, frames: Int, from start: Int64) -> [Float] {
        var buffer = [Float](repeating: 9, count: 2 * frames)
        buffer.withUnsafeMutableBufferPointer { mixer.render(into: $0, startingAt: start) }
        return buffer
    }

    @Test func aHitStartsAtItsExactFrameAcrossBuffers() {
        var mixer = DrumMixer(kit: kit)
        mixer.add(.kick, velocity: 1, at: 1000)
        let first = render(&mixer, frames: 512, from: 0)
        let second = render(&mixer, frames: 512, from: 512)
        #expect(first.allSatisfy { $0 == 0 })
        let g = DrumMixer.masterGain
        #expect(Array(second[(2 * 488)..<(2 * 491)]) == [g, g, 0.5 * g, 0.5 * g, 0.25 * g, 0.25 * g])
        #expect(second.enumerated().filter { $0.element != 0 }.count == 6)
        #expect(mixer.isIdle)
    }

    @Test func velocityScalesTheHit() {
        var mixer = DrumMixer(kit: kit)
        mixer.add(.kick, velocity: 0.5, at: 0)
        #expect(render(&mixer, frames: 4, from: 0)[0] == 0.5 * DrumMixer.masterGain)
    }

    @Test func aClosedHatChokesTheOpenOne() {
        var mixer = DrumMixer(kit: kit)
        mixer.add(.openHat, velocity: 1, at: 0)
        mixer.add(.hat, velocity: 1, at: 100)
        let frames = render(&mixer, frames: 1024, from: 0)
        // Before the closed hat the open one sounds alone; after the fade only the closed hat's 4 frames are left.
        #expect(frames[2 * 99] == DrumMixer.masterGain)
        #expect(frames[2 * (100 + DrumMixer.fadeFrames + 10)] == 0)
        #expect(frames[2 * 101] > DrumMixer.masterGain)
    }

    @Test func lateAndSilentHitsAreCounted() {
        var mixer = DrumMixer(kit: kit)
        mixer.add(.kick, velocity: 1, at: 10)
        mixer.add(.cowbell, velocity: 1, at: 600)
        _ = render(&mixer, frames: 512, from: 512)
        #expect(mixer.counters == DrumMixer.Counters(hits: 2, lateHits: 1, silentHits: 1, stolen: 0))
    }

    @Test func pastThePolyphonyTheOldestSoundStops() {
        var mixer = DrumMixer(kit: kit)
        for frame in 0..<(DrumMixer.polyphony + 3) { mixer.add(.openHat, velocity: 0.01, at: Int64(frame)) }
        _ = render(&mixer, frames: 256, from: 0)
        #expect(mixer.counters.stolen == 3)
    }
}

@Suite struct DrumStreamTests {
    let kit = Kit(name: "test", instruments: [.clave: KitInstrument(name: "clave", voice: .clave, layers: [KitLayer(sample: Sample(left: [1]))])])

    /// The frames of the first non-zero sample in each of `buffers` buffers of 256 frames, the first heard at 1 s
    /// and each 256 frames after the one before, with `hits` handed in before the buffer of the same index.
    func play(_ hits: [[Double]], stream: DrumStream) -> [Int] {
        var found: [Int] = []
        for (index, due) in hits.enumerated() {
            for milliseconds in due {
                stream.schedule(DrumHit(voice: .clave, velocity: 1, time: MonotonicInstant(nanoseconds: UInt64(1e9 + milliseconds * 1e6)), bar: 0, step: 0, level: 1))
            }
            var buffer = [Float](repeating: 0, count: 512)
            let first = MonotonicInstant(nanoseconds: 1_000_000_000 + UInt64(index) * 256 * 1_000_000_000 / 48_000)
            buffer.withUnsafeMutableBufferPointer { stream.render(into: $0, firstFrame: first) }
            found += buffer.enumerated().filter { $0.offset % 2 == 0 && $0.element != 0 }.map { index * 256 + $0.offset / 2 }
        }
        return found
    }

    @Test func hitsLandOnTheFrameTheirTimeImpliesWhicheverBufferTheyFallIn() {
        let stream = DrumStream(kit: kit)
        // 1 ms = 48 frames; 10 ms falls in the second buffer (frame 480), 5.4 ms in the first (259: the second).
        #expect(play([[1, 10, 5.4], [], []], stream: stream) == [48, 259, 480])
        #expect(stream.counters.lateHits == 0)
    }

    @Test func aHitHandedInAfterItsFrameStartsAtOnceAndIsCounted() {
        let stream = DrumStream(kit: kit)
        #expect(play([[], [1]], stream: stream) == [256])
        #expect(stream.counters.lateHits == 1)
    }

    @Test func cancellingForgetsWhatHasNotStarted() {
        let stream = DrumStream(kit: kit)
        stream.schedule(DrumHit(voice: .clave, velocity: 1, time: MonotonicInstant(nanoseconds: 1_002_000_000), bar: 0, step: 0, level: 1))
        stream.cancel()
        #expect(play([[]], stream: stream).isEmpty)
    }
}
