import MIDI
import MIDITestSupport
import Testing
@testable import RTPMIDI

/// The CK offset estimate on simulated exchanges: the initiator's clock is the responder's plus `trueOffset` ticks,
/// and each leg of an exchange takes the delay given.
@Suite struct ClockOffsetEstimateTests {
    static let trueOffset: Int64 = 123_456

    /// The result of an exchange started at `second` seconds whose legs take `out` and `back` ticks.
    func exchange(at second: Double, out: UInt64, back: UInt64) -> ClockSyncResult {
        let ts1 = UInt64(second * 10_000) + 1_000_000
        let ts2 = UInt64(Int64(ts1 + out) - Self.trueOffset)
        return ClockSyncResult(ts1: ts1, ts2: ts2, ts3: ts1 + out + back)
    }

    func instant(_ second: Double) -> MonotonicInstant { MonotonicInstant(nanoseconds: UInt64(second * 1e9)) }

    /// Every leg 0-10 ms (0-100 ticks) at random, one exchange every 250 ms: once the window has filled, the estimate
    /// stays within 0.7 ms of the truth (0.25 ms on average), where single exchanges stray up to 5 ms and the shortest
    /// round trip of the last 4 s (what the session used before) is off by more than 1 ms at times.
    @Test func symmetricJitterIsFilteredOut() {
        var random = SeededGenerator(seed: 3)
        var estimate = ClockOffsetEstimate()
        var errors: [Int64] = [], worstSingle: Int64 = 0, worstShortest: Int64 = 0
        var recent: [(Double, ClockSyncResult)] = []
        for step in 0..<480 {
            let second = Double(step) * 0.25
            let result = exchange(at: second, out: .random(in: 0...100, using: &random), back: .random(in: 0...100, using: &random))
            let estimated = estimate.record(result, now: instant(second))
            recent = recent.filter { second - $0.0 < 4 } + [(second, result)]
            guard second >= 16 else { continue }
            errors.append(abs(estimated.offset - Self.trueOffset))
            worstSingle = max(worstSingle, abs(result.offset - Self.trueOffset))
            let shortest = recent.min { $0.1.roundTrip < $1.1.roundTrip }!.1
            worstShortest = max(worstShortest, abs(shortest.offset - Self.trueOffset))
        }
        #expect(errors.max()! <= 7)
        #expect(errors.reduce(0, +) <= 5 * Int64(errors.count) / 2)
        #expect(worstSingle > 30)
        #expect(worstShortest > 10)
    }

    /// A queue on the way back only (an upload saturated: 0-50 ms more on every answer) moves the average offset of
    /// the exchanges by about 12 ms; the quickest leg each way is not moved by it.
    @Test func delayAddedOneWayDoesNotMoveTheEstimate() {
        var random = SeededGenerator(seed: 4)
        var estimate = ClockOffsetEstimate()
        var estimated = ClockSyncResult(roundTrip: 0, offset: 0)
        var offsets: [Int64] = []
        for step in 0..<64 {
            let result = exchange(at: Double(step) * 0.25, out: .random(in: 0...20, using: &random),
                                  back: .random(in: 0...20, using: &random) + .random(in: 0...500, using: &random))
            offsets.append(result.offset)
            estimated = estimate.record(result, now: instant(Double(step) * 0.25))
        }
        #expect(abs(estimated.offset - Self.trueOffset) <= 5)
        let median = offsets.sorted()[offsets.count / 2]
        #expect(abs(median - Self.trueOffset) > 50)
    }

    /// Exchanges older than the window (16 s) no longer count: after the peer's clock jumps by 50 ticks, the new
    /// exchanges' shorter leg moves the estimate half-way at once, and the old ones' leaving it the rest of the way.
    @Test func theWindowForgetsOldExchanges() {
        var estimate = ClockOffsetEstimate()
        for step in 0..<64 { _ = estimate.record(ClockSyncResult(roundTrip: 10, offset: 0), now: instant(Double(step) * 0.25)) }
        var afterJump: [Int64] = []
        for step in 64..<160 {
            afterJump.append(estimate.record(ClockSyncResult(roundTrip: 10, offset: 50), now: instant(Double(step) * 0.25)).offset)
        }
        #expect(afterJump.first == 25)
        #expect(afterJump.firstIndex(of: 50) == 64)
        #expect(afterJump.last == 50)
    }

    /// A first exchange is its own estimate.
    @Test func oneExchangeIsTheEstimate() {
        var estimate = ClockOffsetEstimate()
        let result = exchange(at: 0, out: 30, back: 10)
        #expect(estimate.record(result, now: instant(0)) == result)
    }
}
