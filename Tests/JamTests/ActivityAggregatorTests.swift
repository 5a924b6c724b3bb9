import MIDI
import MIDITestSupport
import Testing
@testable import Jam

@Suite struct ActivityAggregatorTests {
    let start = MonotonicInstant(nanoseconds: 7_000_000_000_000)
    func at(_ seconds: Double) -> MonotonicInstant { MonotonicInstant(seconds * 1e9, after: start) }
    func level(_ value: UInt8) -> UInt7 { UInt7(masking: value) }

    @Test(arguments: [(ActivityConfiguration.Combine.sum, 127, 90), (.mean, 50, 45), (.max, 60, 50)])
    func levelsCombine(combine: ActivityConfiguration.Combine, three: Int, two: Int) {
        var activity = ActivityAggregator<String>(configuration: ActivityConfiguration(combine: combine))
        activity.setLevel(level(40), for: "a", now: at(0))
        activity.setLevel(level(50), for: "b", now: at(0))
        activity.setLevel(level(60), for: "c", now: at(0))
        #expect(activity.total(at: at(1)).value == three)
        activity.remove("c")
        #expect(activity.total(at: at(1)).value == two)
    }

    @Test func theTotalIsSentAtABoundedRateAndOnlyWhenItChanges() {
        var rng = SeededGenerator(seed: 11)
        var activity = ActivityAggregator<Int>()
        activity.lead(now: at(0))
        var sent: [(MonotonicInstant, UInt7)] = []
        for ms in 0..<2000 {
            let now = at(Double(ms) / 1000)
            // A level a millisecond from one of four players, moving slowly, and standing still for the last second.
            if ms < 1000 { activity.setLevel(UInt7(clamping: 10 + ms / 40 + Int.random(in: 0...3, using: &rng)), for: ms % 4, now: now) }
            if let message = activity.tick(now: now), let value = ActivityConfiguration().total.value(in: message) {
                sent.append((now, value))
            }
        }
        #expect(sent.count > 10 && sent.count <= 21)
        for (earlier, later) in zip(sent, sent.dropFirst()) {
            #expect(later.0.nanoseconds(since: earlier.0) >= 50e6)
            #expect(later.1 != earlier.1)
        }
        #expect(sent.last.map { $0.0 < at(1.1) } == true, "nothing is sent while the total stands still")
    }

    @Test func playersJoinGoQuietAndLeave() {
        var activity = ActivityAggregator<String>()
        activity.lead(now: at(0))
        activity.setLevel(level(60), for: "phone", now: at(0))
        let sent1 = activity.tick(now: at(0))
        #expect(sent1 == cc(0, 7, 60))
        activity.setLevel(level(40), for: "keys", now: at(1))
        let sent2 = activity.tick(now: at(1))
        #expect(sent2 == cc(0, 7, 100))
        // The phone keeps sending; the keys go quiet after 2 s: held for 2 s, then halving every second.
        activity.setLevel(level(40), for: "keys", now: at(2))
        for step in 1...8 { activity.setLevel(level(60), for: "phone", now: at(Double(step))) }
        #expect(activity.total(at: at(3.9)).value == 100)
        #expect(activity.total(at: at(5)).value == 80)
        #expect(activity.total(at: at(6)).value == 70)
        // The phone leaves: only the fading keys count.
        activity.remove("phone")
        #expect(activity.total(at: at(8)).value == 3)
        #expect(activity.playerCount == 1)
        // Quiet for 30 s, the keys are forgotten.
        let sent3 = activity.tick(now: at(31.5))
        #expect(sent3 == cc(0, 7, 0))
        #expect(activity.playerCount == 1)
        _ = activity.tick(now: at(32.5))
        #expect(activity.playerCount == 0)
    }

    @Test func aQuietPlayerCountsForTheMeanUntilForgotten() {
        var activity = ActivityAggregator<String>(configuration: ActivityConfiguration(combine: .mean))
        activity.setLevel(level(100), for: "dancer", now: at(0))
        activity.setLevel(level(0), for: "sitter", now: at(0))
        for second in 1...40 { activity.setLevel(level(100), for: "dancer", now: at(Double(second))) }
        #expect(activity.total(at: at(20)).value == 50)
        _ = activity.tick(now: at(40))
        #expect(activity.total(at: at(40)).value == 100)
    }

    @Test func aNewMasterStartsFromTheLastTotalItHeard() {
        var activity = ActivityAggregator<String>()
        // Following: levels are kept, totals heard, nothing sent.
        let heard = activity.receive(cc(0, 7, 100), from: "master", now: at(0))
        let sentWhileFollowing = activity.tick(now: at(0))
        #expect(heard && sentWhileFollowing == nil)
        activity.lead(now: at(0.5))
        activity.setLevel(level(30), for: "phone", now: at(0.5))
        var values: [Int] = [100]
        for ms in stride(from: 500, through: 8000, by: 10) {
            let now = at(Double(ms) / 1000)
            if ms % 500 == 0 { activity.setLevel(level(30), for: "phone", now: now) }
            if let message = activity.tick(now: now), let value = activity.configuration.total.value(in: message) {
                values.append(Int(value.value))
            }
        }
        #expect(values.last == 30)
        #expect(zip(values, values.dropFirst()).allSatisfy { $1 < $0 && $0 - $1 <= 5 }, "\(values)")
    }

    @Test func controllersAreConfigurableAndOtherMessagesPass() {
        let config = ActivityConfiguration(player: ControllerAddress(channel: UInt4(masking: 1), controller: UInt7(masking: 20)),
                                           total: ControllerAddress(channel: UInt4(masking: 1), controller: UInt7(masking: 21)),
                                           combine: .max)
        var activity = ActivityAggregator<Int>(configuration: config)
        let taken = [cc(1, 20, 64), cc(0, 11, 99), noteOn(1, 60)].map { activity.receive($0, from: 1, now: at(0)) }
        #expect(taken == [true, false, false])
        activity.lead(now: at(0))
        let sent7 = activity.tick(now: at(0))
        #expect(sent7 == cc(1, 21, 64))
        #expect(activity.nextDeadline == at(0.05))
    }

    @Test func playersBeyondTheLimitAreCountedAndIgnored() {
        var activity = ActivityAggregator<Int>(configuration: ActivityConfiguration(combine: .max))
        for player in 0..<300 { activity.setLevel(level(UInt8(player % 128)), for: player, now: at(0)) }
        #expect(activity.playerCount == 256)
        #expect(activity.counters.ignoredLevels == 44)
        activity.setLevel(level(127), for: 3, now: at(1))
        #expect(activity.total(at: at(1)).value == 127)
    }
}
