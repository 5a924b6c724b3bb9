import MIDI
import MIDITestSupport
import Testing
@testable import Jam

/// One instance's conductor driven as the daemon drives it: messages at their arrival, `fire` at every deadline.
/// What it sends is kept with when it was sent.
final class ConductorHarness {
    var conductor: JamConductor
    var outputs: [(output: JamOutput, at: MonotonicInstant)] = []
    var now: MonotonicInstant
    /// How far ahead of their time `fire` hands ticks out (the daemon's `JamPart.lead`).
    var ahead: UInt64 = 0

    init(name: String, ssrc: UInt32, policy: ElectionConfiguration.Policy = .firstStart,
         onMasterLost: ElectionConfiguration.MasterLost = .stop, now: MonotonicInstant) {
        conductor = JamConductor(JamConductor.Configuration(
            election: ElectionConfiguration(ssrc: ssrc, name: name, policy: policy, onMasterLost: onMasterLost)))
        self.now = now
    }

    /// Runs the deadlines up to `time`, then takes `message`.
    @discardableResult
    func receive(_ message: MIDIMessage, from sender: JamSender, at time: MonotonicInstant,
                          senderTime: MonotonicInstant? = nil, roundTrip: UInt64? = nil, songTick: Int? = nil) -> Bool {
        run(until: time)
        var emitted: [JamOutput] = []
        let taken = conductor.receive(message, from: sender, arrival: time, senderTime: senderTime, roundTrip: roundTrip,
                                      songTick: songTick) {
            emitted.append($0)
        }
        outputs += emitted.map { ($0, time) }
        return taken
    }

    func perform(_ command: JamCommand, at time: MonotonicInstant, from channel: CommandChannel = .controlSocket) -> Result<String, JamRefusal> {
        run(until: time)
        var emitted: [JamOutput] = []
        let result = conductor.perform(command, from: channel, now: time) { emitted.append($0) }
        outputs += emitted.map { ($0, time) }
        return result
    }

    /// Calls `fire` at every deadline before `time`, as the clock thread does.
    func run(until time: MonotonicInstant) {
        var calls = 0
        while let deadline = conductor.nextDeadline(ahead: ahead), deadline <= time {
            calls += 1
            guard calls < 100_000 else {
                Issue.record("fire makes no progress at \(deadline)")
                return
            }
            now = max(now, deadline)
            var emitted: [JamOutput] = []
            conductor.fire(now: now, ahead: ahead) { emitted.append($0) }
            outputs += emitted.map { ($0, now) }
        }
        now = max(now, time)
    }

    var deliveries: [JamDelivery] {
        outputs.compactMap { if case .deliver(let delivery) = $0.output { delivery } else { nil } }
    }
    var local: [JamDelivery] { deliveries.filter(\.toLocal) }
    var session: [JamDelivery] { deliveries.filter(\.toSession) }
    var refusals: Int { outputs.filter { if case .refused = $0.output { true } else { false } }.count }
    var changes: [LeadershipChange] { outputs.compactMap { if case .changed(let change) = $0.output { change } else { nil } } }
}

@Suite struct JamConductorTests {
    let start = MonotonicInstant(nanoseconds: 7_000_000_000_000)
    func at(_ seconds: Double) -> MonotonicInstant { MonotonicInstant(seconds * 1e9, after: start) }
    let peer = JamSender.peer(ssrc: 0x5000, name: "rack")
    let drums = JamSender.local(endpoint: "drums", origin: .sequencerPort(client: 20, port: 0))
    let period = MIDIClock.tickPeriod(bpm: 120)

    /// What the outputs play of `harness`'s deliveries: those handed out ahead and then withdrawn are not.
    func played(_ harness: ConductorHarness) -> [JamDelivery] {
        var played: [JamDelivery] = []
        for (output, _) in harness.outputs {
            switch output {
            case .deliver(let delivery): played.append(delivery)
            case .withdraw(let time): played.removeAll { $0.time > time }
            default: break
            }
        }
        return played
    }

    /// Ticks go out 100 ms before their time; a stop takes back those after it, so the Stop comes at the command
    /// and no tick after it; a start while the song runs restarts it the same way, with one Start.
    @Test func ticksHandedOutAheadAreWithdrawnWhenTheSongStopsOrRestarts() throws {
        let jam = ConductorHarness(name: "rack", ssrc: 0x1000, now: start)
        jam.ahead = 100_000_000
        _ = jam.perform(.start, at: at(0))
        jam.run(until: at(0.99))
        let handedAhead = jam.outputs.compactMap { output, at -> Double? in
            guard case .deliver(let delivery) = output, delivery.message == .timingClock else { return nil }
            return delivery.time.nanoseconds(since: at)
        }
        #expect(handedAhead.max() ?? 0 > 90_000_000, "ticks are handed out up to 100 ms ahead")
        _ = jam.perform(.stop, at: at(0.99))
        let stopAt = try #require(jam.outputs.firstIndex { if case .deliver(let d) = $0.output { d.message == .stop } else { false } })
        let withdrawAt = try #require(jam.outputs.firstIndex { if case .withdraw = $0.output { true } else { false } })
        #expect(withdrawAt < stopAt)
        var song = played(jam)
        #expect(song.last?.message == .stop)
        #expect(song.last?.time == at(0.99))
        #expect(song.filter { $0.message == .timingClock }.count == 48, "ticks 0-47, the last at 0.979 s")
        #expect(song.allSatisfy { $0.time <= at(0.99) })

        _ = jam.perform(.start, at: at(2))
        jam.run(until: at(2.51))
        _ = jam.perform(.start, at: at(2.51))
        jam.run(until: at(3))
        song = played(jam)
        let second = song.filter { $0.time >= at(2) }
        #expect(second.filter { $0.message == .start }.map(\.time) == [at(2), at(2.51)])
        let beforeRestart = second.filter { $0.message == .timingClock && $0.time < at(2.51) }
        #expect(beforeRestart.count == 25, "ticks 0-24 of the first start (the last at 2.5 s), none after the restart")
        let ticks = second.filter { $0.message == .timingClock && $0.time >= at(2.51) }.map(\.time)
        #expect(ticks.first == at(2.51))
        #expect(zip(ticks, ticks.dropFirst()).allSatisfy { $1.nanoseconds(since: $0) > 0 }, "each tick once, in order")
    }

    /// Issue 43: the engine held 600 ms while this instance leads (29 ticks overdue): the outputs are moved to the
    /// song's place (Stop, then Song Position and Continue on the coming sixteenth) rather than sent 29 ticks at once;
    /// held 330 ms (16 ticks, within a beat: what a loaded VM did in CI), they get them at once, as a device following
    /// a clock catches up, and the song is not broken off.
    @Test(arguments: [(0.6, true), (0.33, false)]) func overdueTicksBeyondABeatAreAReposition(hold: Double, moves: Bool) throws {
        let jam = ConductorHarness(name: "rack", ssrc: 0x1000, now: start)
        jam.ahead = 100_000_000
        _ = jam.perform(.start, at: at(0))
        jam.run(until: at(1))
        // Nothing fires from 1 s (ticks handed out to 1.1 s) until 1.1 s + `hold`.
        let late = at(1.1 + hold)
        var emitted: [JamOutput] = []
        jam.conductor.fire(now: late, ahead: jam.ahead) { emitted.append($0) }
        jam.outputs += emitted.map { ($0, late) }
        jam.now = late
        jam.run(until: at(3))
        let song = played(jam)
        let transport = song.filter { $0.message.isClockOrTransport && $0.message != .timingClock }.map(\.message)
        let ticks = song.filter { $0.message == .timingClock }.map(\.time)
        // Ticks handed out after their time: what an output sends at once.
        let overdue = jam.outputs.filter { if case .deliver(let tick) = $0.output { tick.message == .timingClock && tick.time < $0.at } else { false } }
        #expect(jam.conductor.counters.repositions == (moves ? 1 : 0))
        if moves {
            let sixteenth = MIDIClock.sixteenth(atOrAfter: Int(((1.1 + hold + 0.002) / period * 1e9).rounded(.up)))
            #expect(transport == [.start, .stop, .songPosition(UInt14(masking: UInt16(sixteenth))), .continue])
            #expect(overdue.isEmpty, "\(overdue.count) ticks sent at once")
            let resumed = try #require(song.first { $0.message == .continue }).time
            #expect(resumed == MonotonicInstant(Double(sixteenth * MIDIClock.ticksPerSixteenth) * period, after: at(0)))
        } else {
            #expect(transport == [.start] && overdue.count == Int(((1.1 + hold) / period * 1e9).rounded(.down)) - Int((1.1 / period * 1e9).rounded(.down)))
            #expect(ticks.filter { $0 <= at(3) }.count == Int((3 / period * 1e9).rounded()) + 1 && Set(ticks).count == ticks.count,
                    "every tick once")
        }
    }

    /// A peer leads: its Start reaches the clock outputs, and their ticks are made from its timeline, each within
    /// a millisecond of when the master meant it although the packets came 0-10 ms late; nothing goes back to the session.
    @Test func aPeersClockIsMadeAfreshForTheClockOutputs() {
        var rng = SeededGenerator(seed: 13)
        let follower = ConductorHarness(name: "phone", ssrc: 0x9000, now: start)
        follower.receive(.start, from: peer, at: at(0.003), senderTime: at(0))
        let ticks = 24 * 8
        for k in 0..<ticks {
            let intended = MonotonicInstant(Double(k) * period, after: at(0))
            let arrival = MonotonicInstant(Double.random(in: 0...10e6, using: &rng), after: intended)
            // Read through a CK offset that is 0.3 ms off, and quantised to the 100 µs session clock.
            let senderTime = MonotonicInstant(((Double(k) * period + 0.3e6) / 1e5).rounded(.down) * 1e5 + 5e4, after: at(0))
            #expect(follower.receive(.timingClock, from: peer, at: arrival, senderTime: senderTime))
        }
        // The Stop is meant 10 ms after the last tick and comes before the next would be due.
        let end = MonotonicInstant(Double(ticks - 1) * period + 10e6, after: at(0))
        follower.receive(.stop, from: peer, at: end.advanced(byNanoseconds: 5_000_000), senderTime: end)
        follower.run(until: at(4.2))
        #expect(follower.changes.map(\.master) == [peer.clockSource, nil])
        #expect(follower.session.isEmpty)
        #expect(follower.local.first?.message == .start && follower.local.last?.message == .stop)
        let made = follower.local.filter { $0.message == .timingClock }
        #expect(made.count == ticks)
        let offsets = made.enumerated().dropFirst(24).map { k, tick in
            abs(tick.time.nanoseconds(since: MonotonicInstant(Double(k) * period, after: at(0))))
        }
        #expect(offsets.max()! < 1e6)
        #expect(zip(made, made.dropFirst()).allSatisfy { $0.time <= $1.time })
    }

    /// The song's timeline the drums play along: none while idle, the generator's when this instance leads (beat 0
    /// on its start), the follower's when a peer leads (its beats within a millisecond of the master's, through
    /// 0-10 ms of jitter), none again once the master stops.
    @Test func theTimelineIsTheGeneratorsWhenLeadingAndTheFollowersWhenFollowing() throws {
        let leader = ConductorHarness(name: "rack", ssrc: 0x1000, now: start)
        #expect(leader.conductor.timeline == nil)
        _ = leader.perform(.start, at: at(1))
        let beat4 = try #require(leader.conductor.timeline?.beatTime(of: 4))
        #expect(abs(beat4.nanoseconds(since: at(3))) < 1_000)
        _ = leader.perform(.stop, at: at(4))
        #expect(leader.conductor.timeline == nil)

        var rng = SeededGenerator(seed: 5)
        let follower = ConductorHarness(name: "phone", ssrc: 0x9000, now: start)
        follower.receive(.start, from: peer, at: at(0.003), senderTime: at(0))
        for k in 0..<(24 * 4) {
            let intended = MonotonicInstant(Double(k) * period, after: at(0))
            follower.receive(.timingClock, from: peer, at: MonotonicInstant(Double.random(in: 0...10e6, using: &rng), after: intended),
                             senderTime: intended)
        }
        let timeline = try #require(follower.conductor.timeline)
        for beat in [2.0, 4, 5] {
            let time = try #require(timeline.beatTime(of: beat))
            #expect(abs(time.nanoseconds(since: at(beat * 0.5))) < 1e6, "beat \(beat)")
        }
        follower.receive(.stop, from: peer, at: at(2.01), senderTime: at(2))
        #expect(follower.conductor.timeline == nil)
    }

    /// A local drum machine that starts leads: its transport and clock go to the session and the other outputs,
    /// a peer's start is refused while it leads, and its Stop lets anyone start again.
    @Test func aLocalSourceLeadsAndOthersAreRefused() {
        let jam = ConductorHarness(name: "rack", ssrc: 0x9000, now: start)
        #expect(jam.receive(.start, from: drums, at: at(0)))
        for k in 0..<48 { jam.receive(.timingClock, from: drums, at: MonotonicInstant(Double(k) * period, after: at(0))) }
        #expect(jam.conductor.election.master == .local("drums"))
        #expect(jam.receive(.start, from: peer, at: at(0.5), senderTime: at(0.5)))
        #expect(jam.refusals == 1)
        #expect(jam.receive(.timingClock, from: peer, at: at(0.51)))
        #expect(jam.conductor.counters.foreignTicks == 1)
        #expect(jam.receive(.stop, from: drums, at: at(1.1)))
        #expect(jam.conductor.election.master == nil)
        // The master sends the total too (no players: 0).
        let relayed = jam.deliveries.filter { if case .controlChange = $0.message { false } else { true } }
        #expect(relayed.count == 50)
        #expect(relayed.allSatisfy { $0.toSession && $0.toLocal && $0.except == "drums" })
        #expect(relayed.first?.message == .start && relayed.last?.message == .stop)
        #expect(jam.receive(.start, from: peer, at: at(1.2), senderTime: at(1.2)))
        #expect(jam.conductor.election.master == peer.clockSource)
    }

    /// `jambridge start`, `tempo` and `stop`: the generator's clock goes to the session and the outputs; absurd
    /// tempos are refused, saying the range; while a peer leads, this instance's commands are refused.
    @Test func commands() {
        let jam = ConductorHarness(name: "rack", ssrc: 0x9000, now: start)
        guard case .success = jam.perform(.start, at: at(0)) else { Issue.record("start refused"); return }
        jam.run(until: at(1))
        let ticks = jam.session.filter { $0.message == .timingClock }
        #expect(jam.session.first?.message == .start && ticks.count == 49)
        #expect(ticks.enumerated().allSatisfy { k, tick in tick.time == MonotonicInstant(Double(k) * period, after: at(0)) })
        let outside = JamRefusal(reason: "refused: the tempo must be 20 to 300 beats a minute")
        for bpm in [0, 10_000, 1e308, 5e-324] { #expect(jam.perform(.tempo(bpm), at: at(1)) == .failure(outside)) }
        #expect(jam.conductor.generator.counters.refusedTempos == 4)
        #expect(jam.perform(.tempo(300), at: at(1)) == .success("tempo 300 BPM from the next beat"))
        #expect(jam.perform(.stop, at: at(2)) == .success("stopped"))
        #expect(jam.session.last?.message == .stop)
        #expect(jam.perform(.stop, at: at(2.1)) == .success("nothing to stop"))
        jam.receive(.start, from: peer, at: at(3), senderTime: at(3))
        #expect(jam.perform(.start, at: at(3.5)) == .failure(JamRefusal(reason: "refused: rack (peer 5000) leads")))
        #expect(jam.perform(.tempo(90), at: at(3.5)) == .failure(JamRefusal(reason: "refused: rack (peer 5000) leads")))
    }

    /// Two and three instances racing to start within 0-20 ms, over a network delaying each packet 0-10 ms and
    /// CK offsets off by up to 0.5 ms: every instance ends with the same master, whose generator alone runs. With
    /// `stall`, one packet in four of the first 100 ms comes up to that much later, holding back those behind it (an
    /// emulated VM under load), beyond the 2 ms round trip the clock sync measured: a Start that keeps a peer's
    /// downbeat, stamped at that peer's Start, then says it was sent well before it came, and both instances must still
    /// read it alike. Three with a stall (seed 5): a follower whose loop took the winner's first ticks as the loser's
    /// continuation ran 41 ticks behind until its Start reseeded it (issue 43).
    @Test(arguments: [(2, 0.0), (3, 0.0), (2, 0.2), (3, 0.2)]) func racingStartsAgree(instances count: Int, stall: Double) {
        for seed in 1...12 {
            var rng = SeededGenerator(seed: UInt64(seed * 7 + count) + UInt64(stall * 1000))
            let jams = (0..<count).map { ConductorHarness(name: "j\($0)", ssrc: UInt32(0x100 * ($0 + 1)), now: start) }
            var pending: [(time: MonotonicInstant, to: Int, delivery: JamDelivery, from: Int)] = []
            var forwarded = Array(repeating: 0, count: count)
            var latest = Array(repeating: Array(repeating: at(0), count: count), count: count)
            let pressAt = (0..<count).map { _ in MonotonicInstant(Double.random(in: 0...20e6, using: &rng), after: at(0)) }
            var pressed = Array(repeating: false, count: count)
            var time = at(0)
            while time < at(2) {
                pending.sort { $0.time < $1.time } // stable: one packet's messages stay in order
                while let first = pending.first, first.time <= time {
                    pending.removeFirst()
                    let sender = jams[first.from].conductor.election.configuration
                    jams[first.to].receive(first.delivery.message, from: .peer(ssrc: sender.ssrc, name: sender.name),
                                           at: first.time, senderTime: first.delivery.time, roundTrip: 2_000_000)
                }
                for i in 0..<count where !pressed[i] && pressAt[i] <= time {
                    pressed[i] = true
                    _ = jams[i].perform(.start, at: time)
                }
                for i in 0..<count {
                    jams[i].run(until: time)
                    // What is sent at one instant leaves in one packet (a Start and its first tick): one delay each.
                    var delays: [Int: MonotonicInstant] = [:]
                    for case (.deliver(let delivery), _) in jams[i].outputs[forwarded[i]...] where delivery.toSession {
                        for j in 0..<count where j != i {
                            let key = j << 50 | Int(delivery.time.nanoseconds >> 14)
                            let stalls = delivery.time < at(0.1) && Int.random(in: 0..<4, using: &rng) == 0
                            let stalled = stalls ? Double.random(in: 0...stall * 1e9, using: &rng) : 0
                            var arrival = delays[key] ?? MonotonicInstant(Double.random(in: 0...10e6, using: &rng) + stalled, after: delivery.time)
                            // A stall holds back what follows it: each way keeps its order, as the session's receiver does.
                            if stall > 0 { arrival = max(arrival, latest[i][j]) }
                            latest[i][j] = arrival
                            delays[key] = arrival
                            pending.append((arrival, j, delivery, i))
                        }
                    }
                    forwarded[i] = jams[i].outputs.count
                }
                time = time.advanced(byNanoseconds: 500_000)
            }
            let masters = jams.map { jam -> String? in
                switch jam.conductor.election.master {
                case .local(let name)?: name
                case .peer(_, let name)?: name
                case nil: nil
                }
            }
            #expect(Set(masters).count == 1 && masters[0] != nil, "seed \(seed): \(masters)")
            #expect(jams.filter(\.conductor.generator.isRunning).count == 1, "seed \(seed)")
            let followers = jams.filter { !$0.conductor.generator.isRunning }
            #expect(followers.allSatisfy { $0.conductor.follower.isRunning }, "seed \(seed)")
            // One downbeat per device: each instance's clock outputs got one Start, and then a tick every period (a
            // loser's once shifted by the gap between the starts), each in its place in the winner's song.
            let winner = jams.first(where: \.conductor.generator.isRunning)!
            let winnerTicks = played(winner).filter { $0.toLocal && $0.message == .timingClock }.map(\.time)
            for (i, jam) in jams.enumerated() {
                let local = played(jam).filter(\.toLocal)
                let messages = local.map(\.message)
                #expect(messages.filter { $0 == .start }.count == 1 && !messages.contains(.stop), "seed \(seed), j\(i): \(messages.filter { $0 != .timingClock })")
                let ticks = local.filter { $0.message == .timingClock }.map(\.time)
                #expect(abs(ticks.count - winnerTicks.count) <= 2, "seed \(seed), j\(i): \(ticks.count) ticks, the winner's \(winnerTicks.count)")
                if let last = ticks.last, let index = winnerTicks.firstIndex(where: { abs($0.nanoseconds(since: last)) < 2e6 }) {
                    #expect(abs(index - (ticks.count - 1)) <= 0, "seed \(seed), j\(i): its last tick is the winner's \(index), its own \(ticks.count - 1)")
                } else {
                    Issue.record("seed \(seed), j\(i): its last tick is none of the winner's")
                }
            }
        }
    }

    /// Issue 43: two or three instances 300-400 ms apart each way (peers across the internet) started within 5 ms,
    /// each Start read when it came (no clock-sync offset yet): each refused the others' starts as later than its
    /// own, and each led a song of its own for good. Now each, hearing another's clock run for a beat, judges the
    /// starts again, as simultaneous within the trip's bound: all pick the lowest SSRC, within two bars; a loser's
    /// clock outputs move into the winner's song with a reposition (Stop, Song Position, Continue), in phase with it
    /// tick for tick, and never get a second Start; the winner's outputs keep their one Start. 20 rounds. (With three,
    /// a follower of a loser judges again when it hears the winner's clock run: the loser's song ends silently.)
    @Test(arguments: [2, 3]) func mastersFarApartBecomeOne(instances count: Int) throws {
        for seed in 1...20 {
            var rng = SeededGenerator(seed: UInt64(seed * 31))
            let jams = (0..<count).map { ConductorHarness(name: "j\($0)", ssrc: UInt32(0x100 * ($0 + 1)), now: start) }
            var pending: [(time: MonotonicInstant, to: Int, delivery: JamDelivery, from: Int, songTick: Int?)] = []
            var forwarded = Array(repeating: 0, count: count), counted = Array(repeating: 0, count: count)
            var latest = [[MonotonicInstant]](repeating: Array(repeating: at(0), count: count), count: count)
            let pressAt = [at(0)] + (1..<count).map { _ in MonotonicInstant(Double.random(in: 0...5e6, using: &rng), after: at(0)) }
            var pressed = Array(repeating: false, count: count)
            var time = at(0)
            while time < at(5) {
                pending.sort { $0.time < $1.time }
                while let first = pending.first, first.time <= time {
                    pending.removeFirst()
                    let sender = jams[first.from].conductor.election.configuration
                    let message = first.delivery.message
                    // Ticks carry their sender time and count (the journal's chapter Q); transport is read as it came.
                    jams[first.to].receive(message, from: .peer(ssrc: sender.ssrc, name: sender.name), at: first.time,
                                           senderTime: message == .timingClock ? first.delivery.time : nil,
                                           roundTrip: 700_000_000, songTick: first.songTick)
                }
                for i in 0..<count where !pressed[i] && pressAt[i] <= time {
                    pressed[i] = true
                    _ = jams[i].perform(.start, at: time)
                }
                for i in 0..<count {
                    jams[i].run(until: time)
                    for case (.deliver(let delivery), _) in jams[i].outputs[forwarded[i]...] where delivery.toSession {
                        var songTick: Int?
                        switch delivery.message {
                        case .start: counted[i] = 0
                        case .songPosition(let sixteenths): counted[i] = Int(sixteenths.value) * MIDIClock.ticksPerSixteenth
                        case .timingClock:
                            songTick = counted[i]
                            counted[i] += 1
                        default: break
                        }
                        for j in 0..<count where j != i {
                            let delay = Double.random(in: 300e6...400e6, using: &rng)
                            let arrival = max(MonotonicInstant(delay, after: delivery.time), latest[i][j])
                            latest[i][j] = arrival
                            pending.append((arrival, j, delivery, i, songTick))
                        }
                    }
                    forwarded[i] = jams[i].outputs.count
                }
                time = time.advanced(byNanoseconds: 1_000_000)
            }
            let masters = jams.map { $0.conductor.election.master?.name }
            #expect(masters == Array(repeating: "j0", count: count), "seed \(seed): \(masters)")
            let winner = jams[0]
            #expect(winner.conductor.generator.isRunning && jams.dropFirst().allSatisfy { !$0.conductor.generator.isRunning }, "seed \(seed)")
            let winnerLocal = winner.local
            #expect(winnerLocal.filter { $0.message != .timingClock }.map(\.message) == [.start], "seed \(seed)")
            let winnerTicks = winnerLocal.filter { $0.message == .timingClock }.map(\.time)
            #expect(winner.conductor.election.counters.healed == 0, "seed \(seed)")
            for (n, loser) in jams.enumerated().dropFirst() {
                let loserLocal = loser.local
                let transport = loserLocal.filter { $0.message != .timingClock }
                // One Start, then repositions (Stop, Song Position, Continue), the last one within two bars.
                let moves = transport.dropFirst().map(\.message)
                guard transport.first?.message == .start, moves.count >= 3, moves.count % 3 == 0,
                      case .songPosition(let position) = moves[moves.count - 2] else {
                    Issue.record("seed \(seed): j\(n)'s outputs got \(transport.map(\.message))")
                    continue
                }
                func isPosition(_ message: MIDIMessage) -> Bool { if case .songPosition = message { true } else { false } }
                #expect(stride(from: 0, to: moves.count, by: 3).allSatisfy { k in
                    moves[k] == .stop && isPosition(moves[k + 1]) && moves[k + 2] == .continue
                }, "seed \(seed): j\(n)'s outputs got \(transport.map(\.message))")
                // The last Stop within two bars (the Song Position and Continue after it may be stamped with the winner's
                // time for them, which came a trip earlier).
                #expect(transport[transport.count - 3].time.nanoseconds(since: transport[0].time) < 4e9, "seed \(seed): j\(n) healed within two bars")
                // From the last Continue, the loser's ticks are the winner's song's, tick for tick.
                let continued = try #require(loserLocal.lastIndex { $0.message == .continue })
                let joined = loserLocal[continued...].filter { $0.message == .timingClock }.map(\.time)
                let first = Int(position.value) * MIDIClock.ticksPerSixteenth
                let offsets = joined.enumerated().compactMap { k, time in
                    winnerTicks.indices.contains(first + k) ? time.nanoseconds(since: winnerTicks[first + k]) / 1e6 : nil
                }
                #expect(offsets.count > 48 && offsets.allSatisfy { abs($0) < 2 }, "seed \(seed): j\(n) \(offsets.prefix(8)) ms off")
                #expect(loser.conductor.election.counters.healed >= 1, "seed \(seed)")
                #expect(moves.count == 3, "seed \(seed): j\(n) took \(moves.count / 3) repositions")
            }
        }
    }

    /// Levels from this instance's players go on to the session; only the master sends the total, at most every
    /// 50 ms and only when it changes; a peer that leaves stops counting.
    @Test func activity() {
        let jam = ConductorHarness(name: "rack", ssrc: 0x9000, now: start)
        let level = { (value: UInt8) in MIDIMessage.controlChange(channel: UInt4(masking: 0), controller: UInt7(masking: 11), value: UInt7(masking: value)) }
        let keys = JamSender.local(endpoint: "keys", origin: .none)
        #expect(!jam.receive(level(40), from: keys, at: at(0)))
        #expect(jam.session.map(\.message) == [level(40)])
        #expect(!jam.receive(level(30), from: peer, at: at(0.01)))
        #expect(jam.session.count == 1)
        _ = jam.perform(.start, at: at(0.02))
        jam.run(until: at(0.5))
        let totals = jam.session.filter { if case .controlChange(_, let c, _) = $0.message { c.value == 7 } else { false } }
        #expect(totals.map(\.message) == [.controlChange(channel: UInt4(masking: 0), controller: UInt7(masking: 7), value: UInt7(masking: 70))])
        jam.conductor.peerLeft(ssrc: 0x5000, name: "rack", now: at(0.6)) { _ in }
        jam.run(until: at(0.7))
        let lastTotal = jam.session.last { if case .controlChange = $0.message { true } else { false } }
        #expect(lastTotal?.message == .controlChange(channel: UInt4(masking: 0), controller: UInt7(masking: 7), value: UInt7(masking: 40)))
    }

    /// This instance leaving while it leads: its own outputs get Stop at once, the session nothing (its peers hear
    /// the goodbye), and no tick handed out ahead plays after it.
    @Test func leavingStopsTheOwnOutputsAndTellsTheSessionNothing() {
        let jam = ConductorHarness(name: "rack", ssrc: 0x1000, now: start)
        jam.ahead = 100_000_000
        _ = jam.perform(.start, at: at(0))
        jam.run(until: at(1))
        let sessionBefore = jam.session.count
        jam.conductor.leave(now: at(1)) { jam.outputs.append(($0, at(1))) }
        #expect(jam.session.count == sessionBefore)
        #expect(jam.local.last?.message == .stop && jam.local.last?.time == at(1))
        #expect(played(jam).allSatisfy { $0.time <= at(1) })
        #expect(!jam.conductor.generator.isRunning)
    }

    /// The master leaving: with `stop` the outputs get a Stop; with `next` this instance continues the song from
    /// where the follower had it (song position, Continue, ticks) in the session.
    @Test(arguments: [ElectionConfiguration.MasterLost.stop, .next]) func masterLeaves(_ policy: ElectionConfiguration.MasterLost) {
        let jam = ConductorHarness(name: "rack", ssrc: 0x9000, onMasterLost: policy, now: start)
        jam.receive(.start, from: peer, at: at(0.001), senderTime: at(0))
        for k in 0..<(24 * 9) {
            let intended = MonotonicInstant(Double(k) * period, after: at(0))
            jam.receive(.timingClock, from: peer, at: intended.advanced(byNanoseconds: 1_000_000), senderTime: intended)
        }
        jam.conductor.peerLeft(ssrc: 0x5000, name: "rack", now: at(4.51)) { jam.outputs.append(($0, at(4.51))) }
        if policy == .stop {
            #expect(jam.conductor.election.master == nil)
            #expect(jam.local.last?.message == .stop)
            #expect(jam.session.isEmpty)
        } else {
            jam.run(until: at(5))
            #expect(jam.conductor.election.role == .master && jam.conductor.generator.isRunning)
            // 4.51 s at 120 BPM is tick 216.5: the song goes on from the next sixteenth, 37 (tick 222), at once.
            let clock = jam.session.filter { if case .controlChange = $0.message { false } else { true } }
            #expect(clock.prefix(2).map(\.message) == [.songPosition(UInt14(masking: 37)), .continue])
            #expect(clock.dropFirst(2).allSatisfy { $0.message == .timingClock } && clock.count > 10)
        }
    }

    /// A peer joins a running song 8 s in: the master tells it alone where the song is (Song Position and Continue on
    /// a coming sixteenth, before that sixteenth's tick). A jambridge that joins so, fed what the master sends it
    /// 1 ms late, names the master, refuses its own start, and its clock outputs get the Song Position, the Continue
    /// and ticks in phase with the master's.
    @Test func aPeerThatJoinsARunningSongIsToldWhereItIs() throws {
        let leader = ConductorHarness(name: "rack", ssrc: 0x1000, now: start)
        leader.ahead = 100_000_000
        _ = leader.perform(.start, at: at(0))
        leader.run(until: at(8))
        let joinedAt = leader.outputs.count
        leader.conductor.peerJoined(ssrc: 0x7000)
        leader.run(until: at(9))
        let greeting = leader.deliveries.filter { $0.toPeer != nil }
        #expect(greeting.allSatisfy { $0.toPeer == 0x7000 && $0.toSession && !$0.toLocal })
        let position = try #require(greeting.first?.message)
        guard case .songPosition(let sixteenths) = position else { Issue.record("\(position) first"); return }
        let tick = Int(sixteenths.value) * MIDIClock.ticksPerSixteenth
        let due = MonotonicInstant(Double(tick) * period, after: at(0))
        #expect(greeting.map(\.message) == [position, .continue])
        #expect(greeting.allSatisfy { $0.time == due })
        #expect(due > at(8.1) && due < at(8.1 + 0.13), "the first sixteenth past what was handed out ahead")
        // The tick at that sixteenth comes after them, to the whole session.
        let after = leader.outputs.dropFirst(joinedAt).compactMap { if case .deliver(let d) = $0.output { d } else { nil } }
        let continueAt = try #require(after.firstIndex { $0.message == .continue })
        #expect(after[continueAt + 1].message == .timingClock && after[continueAt + 1].time == due && after[continueAt + 1].toSession)

        // The joiner hears the session's ticks from its joining on, and what was meant for it.
        let joiner = ConductorHarness(name: "phone", ssrc: 0x7000, now: at(8))
        let master = JamSender.peer(ssrc: 0x1000, name: "rack")
        let heard = after.filter { $0.toSession || $0.toPeer == 0x7000 }
        for delivery in heard where delivery.time >= at(8) {
            joiner.receive(delivery.message, from: master, at: delivery.time.advanced(byNanoseconds: 1_000_000), senderTime: delivery.time)
        }
        joiner.run(until: at(9))
        #expect(joiner.conductor.election.master == master.clockSource)
        #expect(joiner.changes.count == 1)
        let clock = joiner.local.filter { $0.message != .timingClock || $0.time >= due.advanced(byNanoseconds: 2_000_000) }
        #expect(clock.prefix(2).map(\.message) == [position, .continue])
        let ticks = joiner.local.filter { $0.message == .timingClock }
        #expect(ticks.count > 20)
        for (k, made) in ticks.enumerated() {
            let meant = MonotonicInstant(Double(tick + k) * period, after: at(0))
            #expect(abs(made.time.nanoseconds(since: meant)) < 2e6, "tick \(k) of the joined song")
        }
        guard case .failure(let refusal) = joiner.perform(.start, at: at(9)) else { Issue.record("the joiner started"); return }
        #expect(refusal.reason.contains("rack"))
    }

    /// A peer's clock that runs a beat, its Start never seen (a master that is not jambridge, or one that told
    /// nobody): it leads. This instance's own start is refused naming it; its outputs wait for a song position or a
    /// Start (none is known); when the clock falls silent for a second, the master is lost.
    @Test func aRunningClockWhoseStartWasNotSeenLeads() {
        let jam = ConductorHarness(name: "phone", ssrc: 0x9000, now: start)
        for k in 0..<30 {
            let intended = MonotonicInstant(Double(k) * period, after: at(0))
            jam.receive(.timingClock, from: peer, at: intended.advanced(byNanoseconds: 1_000_000), senderTime: intended)
            #expect((jam.conductor.election.master == peer.clockSource) == (k >= JamConductor.runningClockTicks - 1), "tick \(k)")
        }
        guard case .failure(let refusal) = jam.perform(.start, at: at(0.7)) else { Issue.record("it started"); return }
        #expect(refusal.reason.contains("rack"))
        #expect(jam.local.isEmpty)
        jam.run(until: at(3))
        #expect(jam.conductor.election.master == nil)
        #expect(jam.changes.map(\.reason) == [.started, .left])
        // A Stop between ticks breaks their run: a device that sends clock while stopped said it is stopped.
        for k in 0..<40 {
            if k == 20 { jam.receive(.stop, from: peer, at: MonotonicInstant(Double(k) * period - 1e6, after: at(4))) }
            jam.receive(.timingClock, from: peer, at: MonotonicInstant(Double(k) * period, after: at(4)))
        }
        #expect(jam.conductor.election.master == nil)
    }

    /// The same running clock, its ticks counted by the peer's journal (chapter Q: the master is a jambridge whose
    /// greeting was lost, or a peer that keeps the count): it leads, and the outputs join its song just before the
    /// first sixteenth after that, with a Song Position and a Continue, then ticks in phase with the master's.
    @Test func aRunningClockThatCountsItsSongIsJoinedOnASixteenth() throws {
        let jam = ConductorHarness(name: "phone", ssrc: 0x9000, now: start)
        let first = 1_001 // the master's count of the first tick heard: 166 sixteenths and 5 ticks into its song
        for k in 0..<72 {
            let intended = MonotonicInstant(Double(k) * period, after: at(0))
            jam.receive(.timingClock, from: peer, at: intended.advanced(byNanoseconds: 1_000_000), senderTime: intended,
                        songTick: first + k)
        }
        let local = jam.local
        let joined = try #require(local.firstIndex { $0.message != .timingClock }, "\(local.prefix(4).map(\.message))")
        #expect(joined == 0, "ticks went out before the outputs joined: \(local.prefix(4).map(\.message))")
        // The sixteenth after the tick the follower first counted (the 25th heard, 1,025) is 171: tick 1,026.
        #expect(local.prefix(3).map(\.message) == [.songPosition(UInt14(masking: 171)), .continue, .timingClock])
        #expect(local.filter { $0.message != .timingClock }.count == 2)
        for (n, delivery) in local.dropFirst(2).enumerated() {
            let meant = MonotonicInstant(Double(171 * 6 + n - first) * period, after: at(0))
            #expect(abs(delivery.time.nanoseconds(since: meant)) < 1e6, "tick \(171 * 6 + n)")
        }
        #expect(local.count > 40)
    }

    /// Issue 43: the leading peer's song moves more than a beat from what the clock outputs played, ahead (its
    /// journal's count jumps 48 ticks: its song was moved) or back (it stalled 0.8 s and went on where it stopped,
    /// while the outputs had gone on along its tempo): the outputs get one reposition, Stop at once and the master's
    /// own place on a sixteenth (Song Position, Continue), then its ticks on its times; no tick twice, none skipped
    /// silently, no gap waiting for the song to come back. (Before: ahead, 48 ticks were skipped and the devices
    /// stayed that far behind the master; back, they fell silent 0.8 s.)
    @Test(arguments: [48, -38]) func aMasterWhoseSongMovesMoreThanABeatIsFollowedWithOneReposition(moved: Int) throws {
        let jam = ConductorHarness(name: "phone", ssrc: 0x9000, now: start)
        jam.ahead = 100_000_000
        jam.receive(.start, from: peer, at: at(0.001), senderTime: at(0))
        // The master's tick k is its song's tick `count(k)`, meant at `meant(k)`.
        let stall = moved < 0 ? -Double(moved) * period : 0
        func meant(_ k: Int) -> MonotonicInstant { MonotonicInstant(Double(k) * period + (k >= 96 ? stall : 0), after: at(0)) }
        func count(_ k: Int) -> Int { k + (k >= 96 && moved > 0 ? moved : 0) }
        for k in 0..<192 {
            jam.receive(.timingClock, from: peer, at: meant(k).advanced(byNanoseconds: 1_000_000), senderTime: meant(k), songTick: count(k))
        }
        jam.run(until: meant(191))
        let song = played(jam)
        let transport = song.filter { $0.message != .timingClock }
        #expect(jam.conductor.counters.repositions == 1)
        let position = try #require(transport.first { if case .songPosition = $0.message { true } else { false } })
        guard case .songPosition(let sixteenth) = position.message else { return }
        #expect(transport.map(\.message) == [.start, .stop, .songPosition(sixteenth), .continue], "\(transport.map(\.message))")
        let stop = transport[1].time, resumed = transport[3].time
        let ticks = song.filter { $0.message == .timingClock }
        let before = ticks.filter { $0.time <= stop }, after = ticks.filter { $0.time >= resumed }
        #expect(before.count + after.count == ticks.count, "no tick between the Stop and the Continue")
        // Before the Stop, the song as it went; from the Continue, the master's song from its Song Position's tick.
        for (k, tick) in before.enumerated() {
            #expect(abs(tick.time.nanoseconds(since: MonotonicInstant(Double(k) * period, after: at(0)))) < 1e6, "tick \(k)")
        }
        let first = Int(sixteenth.value) * MIDIClock.ticksPerSixteenth
        let k0 = first - (moved > 0 ? moved : 0)
        #expect(k0 >= 96 && k0 < 96 + MIDIClock.ticksPerBeat, "the master's place when it moved: its tick \(k0)")
        for (n, tick) in after.enumerated() {
            #expect(abs(tick.time.nanoseconds(since: meant(k0 + n))) < 1e6, "its tick \(k0 + n)")
        }
        #expect(abs(resumed.nanoseconds(since: meant(k0))) < 1e6)
        // No more than the reposition's own wait between the last tick played and the Stop, or the Continue's tick.
        #expect(stop.nanoseconds(since: before.last!.time) < 2 * period)
        #expect(after.count >= 191 - k0 - 1)
    }

    /// Hostile input: the master's first tick says it was meant 10 hours from now (a forged RTP timestamp, or one
    /// read through a wrong offset): the outputs get it when it came, as the follower takes it, not 10 hours later;
    /// one meant a few milliseconds before it came goes at that time.
    @Test(arguments: [(36_000.0, false), (-0.005, true)]) func aFirstTicksSenderTimeIsBelievedOnlyAsFarAsTheFollowers(offset: Double, believed: Bool) throws {
        let jam = ConductorHarness(name: "phone", ssrc: 0x9000, now: start)
        jam.receive(.start, from: peer, at: at(0.001), senderTime: at(0))
        let arrival = at(0.02)
        jam.receive(.timingClock, from: peer, at: arrival, senderTime: MonotonicInstant(offset * 1e9, after: arrival))
        let first = try #require(jam.local.first { $0.message == .timingClock })
        #expect(first.time == (believed ? MonotonicInstant(offset * 1e9, after: arrival) : arrival))
        #expect(jam.conductor.follower.counters.implausibleSenderTimes == (believed ? 0 : 1))
    }

    /// A master's Start lost with its first tick, repaired from the next packet's journal as a Continue (chapter Q says
    /// only that the song runs, and where): the outputs join the song just before the first sixteenth, with the Song
    /// Position of that sixteenth and a Continue, then its ticks on the master's times. (Passed on as it came, the
    /// Continue without a position put a device a tick behind the song: found by the acceptance scenario in CI.)
    @Test func aStartRepairedAsAContinueJoinsTheOutputsOnTheSongsSixteenth() throws {
        let jam = ConductorHarness(name: "phone", ssrc: 0x9000, now: start)
        jam.receive(.continue, from: peer, at: at(0.03))
        for k in 1..<48 {
            let intended = MonotonicInstant(Double(k) * period, after: at(0))
            jam.receive(.timingClock, from: peer, at: intended.advanced(byNanoseconds: 1_000_000), senderTime: intended, songTick: k)
        }
        let local = jam.local
        #expect(local.prefix(3).map(\.message) == [.songPosition(UInt14(masking: 1)), .continue, .timingClock], "\(local.prefix(4).map(\.message))")
        for (n, delivery) in local.dropFirst(2).enumerated() {
            #expect(abs(delivery.time.nanoseconds(since: MonotonicInstant(Double(6 + n) * period, after: at(0)))) < 1e6, "tick \(6 + n)")
        }
        #expect(local.count > 30)
    }

    /// Hostile input: a clock storm from the master, Start/Stop flapping, song positions past the end and ticks
    /// from everyone else are bounded and counted.
    /// A peer's Start stamped 30 s before it came (RTP timestamps are the sender's word) takes nothing from the
    /// master that started since: it counts as sent as early as the trip allows, and is refused; one within the trip
    /// is believed.
    @Test func aBackDatedStartCountsAsSentAsEarlyAsTheTripAllows() {
        let jam = ConductorHarness(name: "rack", ssrc: 0x9000, now: start)
        _ = jam.perform(.start, at: at(31))
        jam.receive(.start, from: peer, at: at(40), senderTime: at(10), roundTrip: 2_000_000)
        #expect(jam.conductor.election.master == jam.conductor.instance)
        #expect(jam.conductor.counters.backdated == 1)
        #expect(jam.outputs.contains { if case .backdated(.start, _, let seconds) = $0.output { abs(seconds - 30) < 1e-6 } else { false } })
        #expect(jam.refusals == 1)
        // Without a clock sync (no round trip known) the session gives no sender time at all; a Start late by less
        // than the round trip and the margin keeps its time.
        let other = ConductorHarness(name: "phone", ssrc: 0x9001, now: start)
        other.receive(.start, from: peer, at: at(1.2), senderTime: at(1), roundTrip: 2_000_000)
        #expect(other.conductor.counters.backdated == 0)
        #expect(other.conductor.election.master == peer.clockSource)
        // A Start that keeps this instance's own downbeat (the peer heard it and pressed within the simultaneity), 0.3 s
        // on the way: taken as sent 0.252 s before it came, it still races this instance's start, and the lower SSRC wins.
        let raced = ConductorHarness(name: "phone", ssrc: 0x9001, now: start)
        _ = raced.perform(.start, at: at(50))
        raced.receive(.start, from: peer, at: at(50.3), senderTime: at(50), roundTrip: 2_000_000)
        #expect(raced.conductor.counters.backdated == 1)
        #expect(raced.conductor.election.master == peer.clockSource)
    }

    /// This instance's own commands (the control socket, OSC, the status page) are held to the same rate.
    @Test func commandsBeyondAFewASecondAreRefused() {
        let jam = ConductorHarness(name: "rack", ssrc: 0x9000, now: start)
        let results = (0..<100).map { k in jam.perform(k % 2 == 0 ? .start : .stop, at: MonotonicInstant(Double(k) * 1e7, after: at(1))) }
        let refused = results.filter { if case .failure(let refusal) = $0 { refusal.reason.contains("a second") } else { false } }
        #expect(refused.count >= 100 - (JamConductor.transportRate.burst + Int(JamConductor.transportRate.perSecond) + 1))
        if case .failure = jam.perform(.tempo(90), at: at(5)) { Issue.record("a tempo after a quiet while is refused") }
    }

    /// Issue 41: one bucket held every channel of this instance's commands, and a Link session's flood of starts and
    /// stops refused every `jambridge stop`. Each channel has its own: the operator's commands all pass while Link
    /// and an OSC controller flood theirs, and are refused beyond the rate only for a flood of their own.
    @Test func aFloodThroughLinkOrOSCNeverRefusesTheOperatorsCommands() {
        let jam = ConductorHarness(name: "rack", ssrc: 0x9000, now: start)
        var operators: [Result<String, JamRefusal>] = []
        for k in 0..<1000 {
            let time = MonotonicInstant(Double(k) * 1e7, after: at(1))
            _ = jam.perform(k % 2 == 0 ? .start : .stop, at: time, from: .link)
            _ = jam.perform(k % 2 == 0 ? .stop : .start, at: time.advanced(byNanoseconds: 1_000_000), from: .osc("phone"))
            if k % 100 == 50 {
                operators.append(jam.perform(.stop, at: time.advanced(byNanoseconds: 2_000_000), from: .controlSocket))
                operators.append(jam.perform(.tempo(100), at: time.advanced(byNanoseconds: 3_000_000), from: .statusPage))
            }
        }
        #expect(operators.allSatisfy { if case .success = $0 { true } else { false } }, "\(operators)")
        #expect(jam.conductor.counters.transportOverRate > 1900)
        let own = (0..<20).map { k in jam.perform(.stop, at: MonotonicInstant(Double(k) * 1e6, after: at(20)), from: .controlSocket) }
        #expect(own.last == .failure(JamRefusal(reason: "refused: more than 4 starts, stops and tempos a second from the control socket")))
    }

    @Test func hostileInput() {
        let jam = ConductorHarness(name: "rack", ssrc: 0x9000, now: start)
        jam.receive(.start, from: peer, at: at(0), senderTime: at(0))
        for k in 0..<100_000 { jam.receive(.timingClock, from: peer, at: MonotonicInstant(Double(k) * 1e4, after: at(0))) }
        jam.run(until: at(1))
        #expect(jam.conductor.follower.counters.excessTicks > 99_000)
        #expect(jam.local.filter { $0.message == .timingClock }.count < 400)
        let changesBefore = jam.changes.count, deliveredBefore = jam.local.count
        for k in 0..<1000 {
            jam.receive(k % 2 == 0 ? .stop : .start, from: peer, at: MonotonicInstant(Double(k) * 1e6, after: at(1)))
            jam.receive(.start, from: drums, at: MonotonicInstant(Double(k) * 1e6 + 5e5, after: at(1)))
        }
        // A thousand starts and stops a second from each of two sources: 8 at once and then 4 a second pass, the
        // rest are refused and counted, so the master changes a few dozen times at most, not two thousand, and the
        // clock outputs get as few Start and Stop.
        let passed = 2 * (JamConductor.transportRate.burst + Int(JamConductor.transportRate.perSecond) + 1)
        #expect(jam.conductor.counters.transportOverRate >= 2000 - passed)
        #expect(jam.outputs.filter { if case .overRate = $0.output { true } else { false } }.count >= 2000 - passed)
        #expect(jam.changes.count - changesBefore <= passed)
        #expect(jam.local.dropFirst(deliveredBefore).filter { $0.message != .timingClock }.count <= passed)
        jam.receive(.stop, from: drums, at: at(2.5)) // whoever leads after the flood stops
        jam.receive(.stop, from: peer, at: at(2.6))
        jam.receive(.songPosition(UInt14(masking: 0x3FFF)), from: peer, at: at(3))
        jam.receive(.continue, from: peer, at: at(3.001))
        jam.receive(.timingClock, from: peer, at: at(3.002))
        #expect(jam.conductor.follower.isRunning)
    }
}

@Suite struct TokenBucketTests {
    @Test func aBurstThenTheRateThenFullAgainAfterAQuietWhile() {
        let start = MonotonicInstant(nanoseconds: 1_000_000_000_000)
        var bucket = TokenBucket(burst: 8, perSecond: 4)
        #expect((0..<20).filter { _ in bucket.take(now: start) }.count == 8)
        // 4 a second: one every 250 ms.
        let passed = (1...40).filter { k in bucket.take(now: start.advanced(byNanoseconds: UInt64(k) * 25_000_000)) }
        #expect(passed.count == 4)
        #expect(!bucket.isFull(at: start.advanced(byNanoseconds: 2_000_000_000)))
        #expect(bucket.isFull(at: start.advanced(byNanoseconds: 3_000_000_000)))
        // A time earlier than the last taking (clocks of two threads) finds the bucket as that left it.
        let tookEarlier = bucket.take(now: start.advanced(byNanoseconds: 500_000_000))
        #expect(!tookEarlier)
    }
}
