import MIDI
import MIDITestSupport
import Testing
@testable import Jam

@Suite struct ClockElectionTests {
    /// Instances pressing Start within 0-20 ms of each other, on many seeds: every instance ends with the same
    /// master, exactly one instance leads, and it is the lowest SSRC of those whose press was not already refused.
    @Test(arguments: [2, 3])
    func instancesRacingToStartAllEndWithTheSameMaster(count: Int) {
        for seed in UInt64(1)...200 {
            let jam = VirtualJam(seed: seed)
            let names = ["A", "B", "C"].prefix(count)
            for name in names { jam.add(name, ssrc: UInt32.random(in: 1...UInt32.max, using: &jam.rng)) }
            let start = jam.later(1)
            for instance in jam.instances {
                jam.press(.start, on: instance, at: MonotonicInstant(Double.random(in: 0...20e6, using: &jam.rng), after: start))
            }
            jam.run(seconds: 2)
            let pressed = jam.instances.filter { $0.refusedPresses == 0 }
            let winner = pressed.min { $0.ssrc < $1.ssrc }!
            #expect(jam.masters == Array(repeating: winner.name, count: count), "seed \(seed)")
            #expect(jam.leaders == 1, "seed \(seed)")
            for loser in pressed where loser !== winner {
                // With three, a loser may follow the second-best for a moment before the best's start arrives.
                #expect(loser.changes.first?.reason == .started && loser.changes.dropFirst().allSatisfy { $0.reason == .wonStart })
                #expect(loser.changes.last?.role == .follower)
            }
        }
    }

    @Test func theMasterStopsAndAnyoneMayStartAgainEvenWhenTheStartOvertakesTheStop() {
        var overtaken = 0
        for seed in UInt64(1)...100 {
            let jam = VirtualJam(seed: seed)
            let a = jam.add("A", ssrc: 300), b = jam.add("B", ssrc: 200), c = jam.add("C", ssrc: 100)
            // B starts as soon as it hears A stop; C may hear B's start before A's stop.
            b.onChange = { change in if change.reason == .stopped { jam.press(.start, on: b, at: jam.later(0.0001)) } }
            jam.press(.start, on: a, at: jam.later(1))
            jam.run(seconds: 2)
            #expect(jam.masters == ["A", "A", "A"])
            jam.press(.stop, on: a, at: jam.later(1))
            jam.run(seconds: 2)
            #expect(jam.masters == ["B", "B", "B"], "seed \(seed)")
            #expect(jam.leaders == 1)
            if c.changes.map(\.reason) == [.started, .started] { overtaken += 1 }
            #expect(a.changes.map(\.reason) == [.started, .stopped, .started])
        }
        #expect(overtaken > 0, "no seed had B's start overtake A's stop")
    }

    @Test(arguments: [ElectionConfiguration.MasterLost.stop, .next])
    func theMasterVanishes(policy: ElectionConfiguration.MasterLost) {
        for seed in UInt64(1)...100 {
            let jam = VirtualJam(seed: seed)
            let a = jam.add("A", ssrc: 50, onMasterLost: policy)
            jam.add("B", ssrc: UInt32.random(in: 100...1000, using: &jam.rng), onMasterLost: policy)
            jam.add("C", ssrc: UInt32.random(in: 100...1000, using: &jam.rng), onMasterLost: policy)
            jam.press(.start, on: a, at: jam.later(1))
            jam.run(seconds: 2)
            if seed % 2 == 0 { jam.vanish(a, at: jam.later(1)) } else { jam.bye(a, at: jam.later(1)) }
            jam.run(seconds: 3)
            switch policy {
            case .stop:
                #expect(jam.masters == [nil, nil], "seed \(seed)")
                #expect(jam.instances.dropFirst().allSatisfy { $0.changes.last?.reason == .left })
            case .next:
                // Whoever noticed first continues the song (or, noticing within the same 100 ms, the lower SSRC).
                let heir = jam.instances.first { !$0.gone && $0.election.role == .master }
                #expect(jam.leaders == 1, "seed \(seed)")
                #expect(jam.masters == [heir?.name, heir?.name], "seed \(seed)")
                #expect(heir?.changes.last?.reason == .tookOver)
            }
        }
    }

    @Test func aFixedMasterAloneMayStart() {
        let jam = VirtualJam(seed: 1)
        let a = jam.add("A", ssrc: 900, policy: .fixed(NameGlob("A")))
        let b = jam.add("B", ssrc: 100, policy: .fixed(NameGlob("A")))
        let c = jam.add("C", ssrc: 200, policy: .fixed(NameGlob("A")))
        jam.press(.start, on: b, at: jam.later(1))
        jam.run(seconds: 2)
        #expect(jam.masters == [nil, nil, nil])
        #expect(b.refusedPresses == 1)
        jam.press(.start, on: a, at: jam.later(1))
        jam.press(.start, on: c, at: jam.later(1.005))
        jam.run(seconds: 2)
        #expect(jam.masters == ["A", "A", "A"])
        #expect(c.refusedPresses == 1)
        jam.press(.stop, on: a, at: jam.later(1))
        jam.run(seconds: 2)
        #expect(jam.masters == [nil, nil, nil])
    }

    @Test func aPriorityMasterTakesOverAndWinsRaces() {
        for seed in UInt64(1)...50 {
            let jam = VirtualJam(seed: seed)
            let priority = ElectionConfiguration.Policy.priority([NameGlob("T*")])
            let b = jam.add("B", ssrc: 100, policy: priority)
            let teacher = jam.add("Teacher", ssrc: 900, policy: priority)
            jam.add("C", ssrc: 200, policy: priority)
            jam.press(.start, on: b, at: jam.later(1))
            jam.run(seconds: 2)
            #expect(jam.masters == ["B", "B", "B"])
            jam.press(.start, on: teacher, at: jam.later(1))
            jam.run(seconds: 2)
            #expect(jam.masters == ["Teacher", "Teacher", "Teacher"], "seed \(seed)")
            #expect(b.changes.last == LeadershipChange(master: teacher.asPeer, previous: .local("B"), role: .follower, reason: .outranks))
            jam.press(.stop, on: teacher, at: jam.later(1))
            jam.run(seconds: 1)
            // A race: the teacher's start wins whatever the order and the SSRCs.
            jam.press(.start, on: b, at: jam.later(1))
            jam.press(.start, on: teacher, at: jam.later(1 + Double.random(in: 0...0.02, using: &jam.rng)))
            jam.run(seconds: 2)
            #expect(jam.masters == ["Teacher", "Teacher", "Teacher"], "seed \(seed)")
        }
    }

    @Test func aThirdPartyPeerTakesPartLikeAnyPlayer() {
        let jam = VirtualJam(seed: 3)
        let a = jam.add("A", ssrc: 100)
        let b = jam.add("B", ssrc: 200)
        jam.thirdParty(.start, name: "Mac", ssrc: 0xFFFF_0000, at: jam.later(1))
        jam.run(seconds: 2)
        #expect(jam.masters == ["Mac", "Mac"])
        #expect(a.election.role == .follower && b.election.role == .follower)
        // A follower's own transport is refused while the Mac leads.
        for command in [TransportCommand.start, .stop, .continue, .songPosition, .tempo] { jam.press(command, on: a, at: jam.later(0.5)) }
        jam.run(seconds: 1)
        #expect(a.refusedPresses == 5)
        #expect(jam.masters == ["Mac", "Mac"])
        jam.thirdParty(.stop, name: "Mac", ssrc: 0xFFFF_0000, at: jam.later(1))
        jam.press(.start, on: b, at: jam.later(2))
        jam.run(seconds: 3)
        #expect(jam.masters == ["B", "B"])
        // Now the Mac's start comes long after B's: refused everywhere, counted.
        jam.thirdParty(.start, name: "Mac", ssrc: 1, at: jam.later(1))
        jam.run(seconds: 2)
        #expect(jam.masters == ["B", "B"])
        #expect(a.election.counters.refused == 6 && b.election.counters.refused == 1)
    }

    @Test func flappingIsCountedAndEndsConsistently() {
        var election = ClockElection(configuration: ElectionConfiguration(ssrc: 1, name: "us"))
        var time = MonotonicInstant(nanoseconds: 1_000_000_000)
        let drums = ClockSource.local("drums")
        for _ in 0..<10_000 {
            time = time.advanced(byNanoseconds: 50_000)
            _ = election.receive(.start, from: drums, senderTime: time, now: time)
            _ = election.receive(.stop, from: drums, senderTime: time, now: time)
        }
        #expect(election.role == .idle)
        #expect(election.counters.flaps == 19_999)
        let verdict = election.receive(.start, from: .peer(ssrc: 7, name: "Mac"), senderTime: time, now: time)
        #expect(verdict.change?.description == "clock master: Mac (peer 7) (started the rhythm); this instance is follower")
    }

    @Test func transportMessagesAreCommandsAndClockIsNot() {
        let messages: [MIDIMessage] = [.start, .stop, .continue, .songPosition(UInt14(masking: 9)), .timingClock, noteOn(0, 60)]
        #expect(messages.map(TransportCommand.init) == [.start, .stop, .continue, .songPosition, nil, nil])
    }

    @Test func everyChangeIsOneLogLine() {
        let a = ClockSource.local("drums"), b = ClockSource.peer(ssrc: 0xC0FFEE, name: "Mike’s Mac")
        let lines = [
            LeadershipChange(master: a, previous: nil, role: .master, reason: .started),
            LeadershipChange(master: b, previous: a, role: .follower, reason: .wonStart),
            LeadershipChange(master: b, previous: a, role: .follower, reason: .outranks),
            LeadershipChange(master: .local("Studio"), previous: b, role: .master, reason: .tookOver),
            LeadershipChange(master: nil, previous: b, role: .idle, reason: .stopped),
            LeadershipChange(master: nil, previous: b, role: .idle, reason: .left),
        ].map(\.description)
        #expect(lines[0] == "clock master: drums (started the rhythm); this instance is the master")
        #expect(lines[1] == "clock master: Mike’s Mac (peer C0FFEE) (won the start over drums); this instance is follower")
        #expect(lines[3] == "clock master: Studio (continues the song Mike’s Mac (peer C0FFEE) left); this instance is the master")
        #expect(lines[5] == "no clock master (Mike’s Mac (peer C0FFEE) left); this instance is idle")
        #expect(lines.allSatisfy { !$0.contains("\n") })
    }
}
