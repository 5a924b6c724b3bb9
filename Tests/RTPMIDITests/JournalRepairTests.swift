import MIDI
import MIDITestSupport
import Testing
@testable import RTPMIDI

/// Loss repaired from recovery journals: crafted journals into a session, and random
/// histories through a lossy virtual network from a real sender.
@Suite struct JournalRepairTests {
    /// Sessions A and B connected on a virtual network.
    func connected(configure: (inout SessionConfiguration) -> Void = { _ in }) -> (VirtualNetwork, RecordingHost, RecordingHost) {
        let net = VirtualNetwork()
        let a = net.add(1, name: "A", ssrc: 100, configure: configure)
        let b = net.add(2, name: "B", ssrc: 200, configure: configure)
        a.session.invite(b.address, label: "b", now: net.now)
        net.deliver()
        return (net, a, b)
    }

    /// Hands B an RTP packet from A: sequence `sequence`, commands `commands` (complete
    /// messages, no deltas), and `journal` if given.
    func deliver(_ commands: [MIDIMessage], sequence: UInt16, timestamp: UInt32 = 1, journal: RecoveryJournal? = nil,
                 from a: RecordingHost, to b: RecordingHost, now: MonotonicInstant) {
        var list: [UInt8] = []
        var encoder = MIDIEncoder()
        for (index, message) in commands.enumerated() {
            if index > 0 { list.append(0) } // delta time 0
            encoder.encode(message) { list.append($0) }
        }
        var packet: [UInt8] = [0x80, 0x61, UInt8(sequence >> 8), UInt8(sequence & 0xFF)]
        packet += [UInt8(timestamp >> 24), UInt8((timestamp >> 16) & 0xFF), UInt8((timestamp >> 8) & 0xFF), UInt8(timestamp & 0xFF)]
        packet += [0, 0, 0, UInt8(a.session.ssrc)] // SSRC 100
        packet += [0x80 | (journal == nil ? 0 : 0x40) | UInt8(list.count >> 8), UInt8(list.count & 0xFF)] + list
        journal?.encode(into: &packet)
        packet.withUnsafeBytes { b.session.receive($0, on: .data, from: a.address.with(port: 5005), now: now) }
    }

    @Test func aLostNoteOffIsRepairedInPlaceBeforeThePacketsOwnCommands() {
        let (net, a, b) = connected()
        deliver([noteOn(0, 60)], sequence: 1, journal: RecoveryJournal(checkpoint: 0), from: a, to: b, now: net.now)
        // Packet 2 (note-off 60) is lost; packet 3's journal says 60 is off.
        let journal = RecoveryJournal(checkpoint: 1, channels: [
            ChannelJournal(channel: 0, notes: NoteChapter(offNotes: [60])),
        ])
        deliver([noteOn(0, 62)], sequence: 3, journal: journal, from: a, to: b, now: net.now)
        #expect(b.received.map(\.0) == [noteOn(0, 60), noteOff(0, 60, 64), noteOn(0, 62)])
        #expect(b.session.counters.repairs == 1 && b.session.counters.repairMessages == 1)
        #expect(b.session.counters.sequenceGaps == 1)
    }

    @Test func aLostSustainReleaseIsRepaired() {
        let (net, a, b) = connected()
        deliver([cc(0, 64, 127)], sequence: 1, from: a, to: b, now: net.now)
        let journal = RecoveryJournal(checkpoint: 1, channels: [
            ChannelJournal(channel: 0, controllers: [ControllerLog(number: 64, tool: .value(0))]),
        ])
        deliver([], sequence: 3, journal: journal, from: a, to: b, now: net.now)
        #expect(b.received.map(\.0) == [cc(0, 64, 127), cc(0, 64, 0)])
    }

    @Test func aLostProgramChangeIsRepairedWithItsBank() {
        let (net, a, b) = connected()
        deliver([.programChange(channel: UInt4(masking: 2), program: UInt7(masking: 5))], sequence: 1, from: a, to: b, now: net.now)
        let journal = RecoveryJournal(checkpoint: 1, channels: [
            ChannelJournal(channel: 2, program: ProgramChapter(program: 9, bankMSB: 1, bankLSB: 3)),
        ])
        deliver([noteOn(2, 40)], sequence: 5, journal: journal, from: a, to: b, now: net.now)
        #expect(b.received.map(\.0) == [
            .programChange(channel: UInt4(masking: 2), program: UInt7(masking: 5)),
            cc(2, 0, 1), cc(2, 32, 3), .programChange(channel: UInt4(masking: 2), program: UInt7(masking: 9)),
            noteOn(2, 40),
        ])
    }

    @Test func aLostStopIsRepaired() {
        let (net, a, b) = connected()
        deliver([.start, .timingClock, .timingClock], sequence: 1, from: a, to: b, now: net.now)
        let journal = RecoveryJournal(checkpoint: 1, system: SystemJournal(
            sequencer: SequencerChapter(running: false, downbeat: false, clock: 2)))
        deliver([], sequence: 3, journal: journal, from: a, to: b, now: net.now)
        #expect(b.received.map(\.0) == [.start, .timingClock, .timingClock, .stop])
    }

    /// Issue 31: a master's clock through 5 % loss, its Start's packet lost too. Each tick that arrives carries the
    /// master's count of it in its song: the ticks lost are counted from the journals' chapter Q, and the lost Start
    /// comes back as a Continue whose ticks count from where the master's song is.
    @Test func eachTickCarriesTheMastersCountThroughLoss() {
        var random = SeededGenerator(seed: 31)
        let (net, a, b) = connected()
        net.run(seconds: 2, step: 0.05) // clock sync: ticks carry sender times, and counts, once it has run
        var startLost = true
        net.lose = { bytes, port in
            port == .data && bytes.first == 0x80 && (startLost || Double.random(in: 0..<1, using: &random) < 0.05)
        }
        let period: UInt64 = 20_000_000, downbeat = net.now
        for k in 0..<500 {
            if k == 0 { a.session.send(.start, at: net.now) }
            a.session.send(.timingClock, at: net.now)
            a.session.flush()
            net.deliver()
            startLost = false
            net.run(seconds: 0.02, step: 0.02)
        }
        let clock = zip(b.received, zip(b.senderTimes, b.songTicks)).filter { $0.0.0.isClockOrTransport }
        #expect(clock.first?.0.0 == .continue)
        let ticks = clock.filter { $0.0.0 == .timingClock }
        #expect(ticks.count > 400 && ticks.count < 490 && b.session.counters.repairs > 10, "\(ticks.count) ticks")
        for (_, (sent, count)) in ticks {
            let index = sent.map { Int((Double(Int64(bitPattern: $0.nanoseconds &- downbeat.nanoseconds)) / Double(period)).rounded()) }
            #expect(count != nil && count == index, "count \(String(describing: count)), sent as tick \(String(describing: index))")
        }
    }

    @Test func nothingIsRepairedWithoutLossAndNothingIsPlayedTwice() {
        let (net, a, b) = connected()
        // The macOS packet's journal lists 48 as off while the packet turns it on: nothing is played twice. (Being
        // the first packet, whose journal's history begins three packets before it, its journal is read; it
        // holds nothing we lack.)
        let macOS: [UInt8] = [0x80, 0x61, 0x42, 0x7a, 0x4b, 0x9f, 0x30, 0x36, 0, 0, 0, 100,
                              0x43, 0x90, 0x30, 0x26, 0x20, 0x42, 0x76, 0x00, 0x06, 0x08, 0x00, 0x66, 0x85]
        macOS.withUnsafeBytes { b.session.receive($0, on: .data, from: a.address.with(port: 5005), now: net.now) }
        #expect(b.received.map(\.0) == [noteOn(0, 48, 38)])
        #expect(b.session.counters.repairMessages == 0)
        // After a loss, notes the journal lists as on that we already have are not played again.
        let journal = RecoveryJournal(checkpoint: 17018, channels: [
            ChannelJournal(channel: 0, notes: NoteChapter(logs: [NoteLog(note: 48, velocity: 38, play: true),
                                                                 NoteLog(note: 50, velocity: 90, play: true),
                                                                 NoteLog(note: 52, velocity: 90, play: false)])),
        ])
        deliver([], sequence: 17021, journal: journal, from: a, to: b, now: net.now)
        #expect(b.received.map(\.0) == [noteOn(0, 48, 38), noteOn(0, 50, 90)])
        #expect(b.session.counters.repairMessages == 1)
    }

    @Test func lateAndDuplicatePacketsAreDroppedAndCounted() {
        let (net, a, b) = connected()
        deliver([noteOn(0, 60)], sequence: 10, from: a, to: b, now: net.now)
        deliver([noteOn(0, 62)], sequence: 12, from: a, to: b, now: net.now)
        deliver([noteOn(0, 61)], sequence: 11, from: a, to: b, now: net.now) // overtaken
        deliver([noteOn(0, 62)], sequence: 12, from: a, to: b, now: net.now) // duplicate
        #expect(b.received.map(\.0) == [noteOn(0, 60), noteOn(0, 62)])
        #expect(b.session.counters.latePackets == 2)
    }

    @Test(arguments: [true, false])
    func aRepairDoesNotReplayWhatWaitsForItsTimeOrWasPlayed(timestampPlayout: Bool) {
        let (net, a, b) = connected { $0.playout = [(NameGlob("*"), timestampPlayout)] }
        let t0 = net.now
        func at(_ milliseconds: UInt64) -> MonotonicInstant { t0.advanced(byNanoseconds: milliseconds * 1_000_000) }
        var clock = t0
        func run(until end: MonotonicInstant) { // B's timer, 1 ms steps
            while clock < end {
                clock = min(end, clock.advanced(byNanoseconds: 1_000_000))
                if let deadline = b.session.nextDeadline, deadline <= clock { b.session.tick(now: clock) }
            }
        }
        let journal = RecoveryJournal(checkpoint: 0, channels: [ChannelJournal(channel: 0, controllers: [
            ControllerLog(number: 20, tool: .value(1)), ControllerLog(number: 21, tool: .value(2)),
            ControllerLog(number: 27, tool: .value(0)),
        ])])
        // Controller changes 20 ms apart (RTP timestamps in 0.1 ms). Packet 1 was held up 40 ms (a
        // loaded machine), so the playout delay is 40 ms and packet 2's event waits until 60 ms.
        deliver([cc(0, 27, 0)], sequence: 1, timestamp: 0, from: a, to: b, now: at(40))
        run(until: at(41))
        deliver([cc(0, 20, 1)], sequence: 2, timestamp: 200, journal: RecoveryJournal(checkpoint: 0), from: a, to: b, now: at(41))
        run(until: at(45))
        // The guard packet 10 ms after packet 3 overtakes it: its journal repairs packet 3's
        // change only; packet 2's is waiting for its time, not lost.
        deliver([], sequence: 4, timestamp: 400, journal: journal, from: a, to: b, now: at(45))
        run(until: at(46))
        deliver([cc(0, 21, 2)], sequence: 3, timestamp: 300, from: a, to: b, now: at(46)) // late: dropped
        run(until: at(200))
        #expect(b.received.map(\.0) == [cc(0, 27, 0), cc(0, 20, 1), cc(0, 21, 2)])
        #expect(b.session.counters.repairs == 1 && b.session.counters.repairMessages == 1)
        #expect(b.session.counters.latePackets == 1)
    }

    @Test func lossIsSeenAcrossTheSequenceNumberWrap() {
        let (net, a, b) = connected()
        deliver([noteOn(0, 60)], sequence: 65534, from: a, to: b, now: net.now)
        // 65535 (the note-off) is lost; 0 carries the journal.
        let journal = RecoveryJournal(checkpoint: 65534, channels: [ChannelJournal(channel: 0, notes: NoteChapter(offNotes: [60]))])
        deliver([noteOn(0, 61)], sequence: 0, journal: journal, from: a, to: b, now: net.now)
        deliver([noteOn(0, 62)], sequence: 1, from: a, to: b, now: net.now)
        #expect(b.received.map(\.0) == [noteOn(0, 60), noteOff(0, 60, 64), noteOn(0, 61), noteOn(0, 62)])
        #expect(b.session.counters.sequenceGaps == 1 && b.session.counters.latePackets == 0)
    }

    @Test func aLossWithoutAJournalIsRepairedByTheNextJournal() {
        let (net, a, b) = connected()
        deliver([noteOn(0, 60)], sequence: 1, from: a, to: b, now: net.now)
        deliver([noteOn(0, 70)], sequence: 3, from: a, to: b, now: net.now) // gap, J=0
        let journal = RecoveryJournal(checkpoint: 1, channels: [ChannelJournal(channel: 0, notes: NoteChapter(offNotes: [60]))])
        deliver([], sequence: 4, journal: journal, from: a, to: b, now: net.now)
        #expect(b.received.map(\.0) == [noteOn(0, 60), noteOn(0, 70), noteOff(0, 60, 64)])
    }

    /// The state `messages` leave, as the journal sees it.
    func state(after messages: [MIDIMessage]) -> MIDIState {
        var state = MIDIState()
        var changes: [MIDIState.Change] = []
        for message in messages { state.apply(message, changes: &changes) }
        return state
    }

    /// A random message the journal protects (every channel voice kind, transport, clock).
    func journalledMessage(_ random: inout SeededGenerator) -> MIDIMessage {
        let channel = UInt4(masking: UInt8.random(in: 0...3, using: &random))
        let note = UInt7(masking: UInt8.random(in: 36...60, using: &random))
        switch Int.random(in: 0..<20, using: &random) {
        case 0..<6: return .noteOn(channel: channel, note: note, velocity: UInt7(masking: UInt8.random(in: 1...127, using: &random)))
        case 6..<11: return .noteOff(channel: channel, note: note, velocity: random.seven())
        case 11..<14: return .controlChange(channel: channel, controller: UInt7(masking: [1, 7, 11, 64, 74, 0, 32].randomElement(using: &random)!),
                                            value: random.seven())
        case 14: return .programChange(channel: channel, program: random.seven())
        case 15: return .pitchBend(channel: channel, value: random.fourteen())
        case 16: return .channelPressure(channel: channel, pressure: random.seven())
        case 17: return .polyPressure(channel: channel, note: note, pressure: random.seven())
        case 18: return [MIDIMessage.start, .stop, .continue, .timingClock].randomElement(using: &random)!
        default: return .controlChange(channel: channel, controller: UInt7(masking: 123), value: .zero) // all notes off
        }
    }

    @Test(arguments: [0.01, 0.05, 0.2])
    func randomHistoriesThroughLossArriveWhole(lossRate: Double) {
        var random = SeededGenerator(seed: UInt64(lossRate * 1000))
        let (net, a, b) = connected()
        var lossy = true
        net.lose = { bytes, port in
            port == .data && bytes.first == 0x80 && lossy && Double.random(in: 0..<1, using: &random) < lossRate
        }
        var sent: [MIDIMessage] = []
        var messageRandom = SeededGenerator(seed: 7)
        for packet in 0..<600 {
            if packet == 590 { lossy = false } // the last packets (and their journals) arrive
            for _ in 0..<Int.random(in: 1...4, using: &messageRandom) {
                let message = journalledMessage(&messageRandom)
                sent.append(message)
                a.session.send(message, at: net.now)
            }
            a.session.flush()
            net.deliver()
            if packet % 50 == 0 { net.run(seconds: 0.05, step: 0.01) } // RS moves the checkpoint now and then
        }
        let expected = state(after: sent), played = state(after: b.received.map(\.0))
        for c in 0..<4 {
            #expect(played.channels[c].velocity == expected.channels[c].velocity, "notes of channel \(c + 1)")
            #expect(played.channels[c].controllers == expected.channels[c].controllers, "controllers of channel \(c + 1)")
            #expect(played.channels[c].program?.program == expected.channels[c].program?.program)
            #expect(played.channels[c].pitchWheel == expected.channels[c].pitchWheel)
            #expect(played.channels[c].pressure == expected.channels[c].pressure)
            #expect(played.channels[c].polyPressure == expected.channels[c].polyPressure)
        }
        #expect(played.running == expected.running)
        #expect(b.session.counters.sequenceGaps > 0 && b.session.counters.repairs > 0)
    }

    @Test func theJournalOfARandomHistoryDecodesAndEncodesBackToTheSameBytes() throws {
        // JournalHistory writes journals without building the model; the model's decoder and
        // encoder must read them and write them back byte for byte.
        var random = SeededGenerator(seed: 11)
        var history = JournalHistory(firstSequence: 1000)
        var channelsSeen = 0
        for sequence in UInt16(1000)..<1400 {
            for _ in 0..<3 { history.record(journalledMessage(&random), sequence: sequence, tick: 0) }
            if sequence % 97 == 0 { history.confirm(sequence &- 20, lastSent: sequence) }
            var bytes: [UInt8] = []
            history.encodeJournal(at: 10, into: &bytes)
            let journal = try bytes.withUnsafeBytes { raw in
                Result { () throws(RTPMIDIError) in try RecoveryJournal(parsing: raw) }
            }.get()
            var again: [UInt8] = []
            journal.encode(into: &again)
            #expect(again == bytes)
            #expect(journal.checkpoint == history.checkpoint)
            channelsSeen = max(channelsSeen, journal.channels.count)
        }
        #expect(channelsSeen == 4)
    }
}
