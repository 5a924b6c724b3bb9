import Foundation
import MIDI
import MIDITestSupport
import Testing
@testable import ALSA

/// When each period of audio is heard (`PCMFrameClock`), from readings that are late by a driver's pointer tick
/// and a thread's wake-up, never early.
@Suite struct PCMFrameClockTests {
    @Test func theFrameClockIsExactForExactReadingsAndNeverOverflows() {
        var clock = PCMFrameClock(rate: 48_000)
        clock.advance(by: 960) // the silence a restart writes (20 ms)
        // At 10 s, 480 of those frames were still queued: frame 0 was heard at 10 s - 10 ms.
        clock.observe(timestamp: MonotonicInstant(nanoseconds: 10_000_000_000), delay: 480)
        #expect(clock.firstFrame.nanoseconds == 10_010_000_000)
        clock.advance(by: 240)
        #expect(clock.firstFrame.nanoseconds == 10_015_000_000)
        // Later readings: a late one changes nothing, an earlier one moves the estimate back.
        clock.observe(timestamp: MonotonicInstant(nanoseconds: 10_010_000_000), delay: 720)
        #expect(clock.firstFrame.nanoseconds == 10_015_000_000)
        clock.observe(timestamp: MonotonicInstant(nanoseconds: 10_010_000_000), delay: 192)
        #expect(clock.firstFrame.nanoseconds == 10_014_000_000)
        #expect(clock.duration(of: 48_000 * 86_400 * 365) == 365 * 86_400 * 1_000_000_000)
        #expect(clock.duration(of: 48_000 * 86_400 * 365 + 1) == 365 * 86_400 * 1_000_000_000 + 20_833)
        clock.restart()
        #expect(clock.written == 0)
        clock.observe(timestamp: MonotonicInstant(nanoseconds: 20_000_000_000), delay: 0)
        #expect(clock.firstFrame.nanoseconds == 20_000_000_000)
    }

    /// A device whose pointer moves by whole 4 ms jiffies (snd-aloop: 192 frames at 48 kHz), running at
    /// `ppm` off the monotonic clock, its status read 10 µs plus an exponential 30 µs on average after
    /// each period, and one time in 20 anywhere up to 2 ms late: where the clock puts each buffer
    /// against where it is heard, in nanoseconds.
    private func frameClockErrors(ppm: Double, seconds: Int) -> [Int64] {
        var random = SeededGenerator(seed: UInt64(ppm.magnitude) + 1)
        let rate = 48_000.0 * (1 + ppm / 1e6) // frames a second on the monotonic clock
        let origin = 5_000_000_000.0 // when frame 0 is heard
        var clock = PCMFrameClock(rate: 48_000)
        var errors: [Int64] = []
        clock.advance(by: 768)
        for period in 0..<(seconds * 48_000 / 256) {
            let wake = origin + Double(period * 256) / rate * 1e9
            let heard = Double(Int(Double(period * 256) / 192)) * 192 // the pointer, a jiffy at a time
            let late = Int.random(in: 0..<20, using: &random) == 0
                ? Double.random(in: 0...2_000_000, using: &random)
                : 10_000 - 30_000 * log(Double.random(in: Double.ulpOfOne...1, using: &random))
            let read = wake + late
            clock.observe(timestamp: MonotonicInstant(nanoseconds: UInt64(read)), delay: clock.written - Int(heard))
            let truth = origin + Double(clock.written) / rate * 1e9
            errors.append(Int64(clock.firstFrame.nanoseconds) - Int64(truth))
            clock.advance(by: 256)
        }
        return errors
    }

    @Test func theFrameClockFindsTheTruthUnderAJiffyPointerAndFollowsADriftingCard() {
        // Taken one by one, the readings would put buffers up to 4 ms late (a jiffy), a period's wake-up
        // apart. After the first second: within a frame (21 µs) of the truth on a card that keeps time
        // (the readings are never less than 10 µs late here), within 3 frames on one 100 ppm off; from
        // one buffer to the next the estimate moves by at most a frame and a half.
        for (ppm, bounds) in [(0.0, 0...20_833), (100, -62_500...62_500), (-100, -62_500...62_500)] {
            let errors = frameClockErrors(ppm: ppm, seconds: 60)
            let settled = errors.dropFirst(48_000 / 256)
            #expect(settled.allSatisfy { bounds.contains(Int($0)) }, "\(ppm) ppm: \(settled.min()!)...\(settled.max()!) ns")
            let steps = zip(settled, settled.dropFirst()).map { abs($1 - $0) }
            #expect(steps.allSatisfy { $0 <= 31_250 }, "\(ppm) ppm: steps up to \(steps.max()!) ns")
        }
    }
}
