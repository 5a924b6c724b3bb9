import MIDI
import MIDITestSupport
import Testing
import Transport
@testable import RTPMIDI

/// A lane on the virtual clock: what is posted waits until `sendDue` hands it to the host's outbox, as the real
/// lane's thread sends it at its time.
final class VirtualLane: PacketLane {
    let host: RecordingHost
    private var posted: [(bytes: [UInt8], to: NetworkAddress, due: MonotonicInstant, waiting: Bool)] = []
    /// How many may wait at once.
    var capacity = Int.max

    /// The lane's clock: the network's.
    private let clock: () -> MonotonicInstant

    init(_ host: RecordingHost, clock: @escaping () -> MonotonicInstant) {
        self.host = host
        self.clock = clock
    }

    var now: MonotonicInstant { clock() }

    var hasRoom: Bool { waiting + 2 <= capacity }

    func post(_ packet: UnsafeRawBufferPointer, to address: NetworkAddress, at due: MonotonicInstant) -> UInt64 {
        posted.append((Array(packet), address, due, true))
        return UInt64(posted.count - 1)
    }

    /// How many packets were taken back.
    private(set) var takenBack = 0

    func takeBack(_ ticket: UInt64) -> Bool {
        if posted[Int(ticket)].waiting { takenBack += 1 }
        defer { posted[Int(ticket)].waiting = false }
        return posted[Int(ticket)].waiting
    }

    func isDone(_ ticket: UInt64) -> Bool { !posted[Int(ticket)].waiting }

    /// Sends what is due by `time`, in the order posted.
    func sendDue(until time: MonotonicInstant) {
        for index in posted.indices where posted[index].waiting && posted[index].due <= time {
            posted[index].waiting = false
            posted[index].bytes.withUnsafeBytes { host.session(send: $0, from: .data, to: posted[index].to) }
        }
    }

    var waiting: Int { posted.filter(\.waiting).count }
}

@Suite struct AheadTests {
    /// Two hosts in a session, the first with a virtual lane.
    private func connected() -> (VirtualNetwork, a: RecordingHost, b: RecordingHost, lane: VirtualLane) {
        let net = VirtualNetwork()
        let a = net.add(1, name: "A", ssrc: 100)
        let b = net.add(2, name: "B", ssrc: 200)
        a.session.invite(b.address, label: "B", now: net.now)
        net.deliver()
        let lane = VirtualLane(a, clock: { net.now })
        a.session.lane = lane
        return (net, a, b, lane)
    }

    /// The RTP sequence numbers of the MIDI packets `host` sent, in the order they left.
    private func sequences(_ host: RecordingHost) -> [UInt16] {
        host.sent.compactMap { datagram in
            let isSession = datagram.withUnsafeBytes { SessionPacket.isSessionPacket($0) }
            return isSession || datagram.count < 4 ? nil : UInt16(datagram[2]) << 8 | UInt16(datagram[3])
        }
    }

    private func later(_ net: VirtualNetwork, _ milliseconds: UInt64) -> MonotonicInstant {
        net.now.advanced(byNanoseconds: milliseconds * 1_000_000)
    }

    /// Ticks prepared ahead wait in the lane; a note sent before they are due takes them back, leaves first, and
    /// they follow at their time: the peer reads every message once, in order, with no gap or late packet.
    @Test func aNoteSentBeforeTicksPreparedAheadLeavesFirstAndTheSequenceRunsOn() {
        let (net, a, b, lane) = connected()
        let start = net.now
        a.session.sendAhead(.timingClock, at: later(net, 20), owner: 0)
        a.session.sendAhead(.timingClock, at: later(net, 40), owner: 0)
        net.deliver()
        #expect(b.received.isEmpty)
        #expect(lane.waiting == 2)

        lane.sendDue(until: later(net, 20))
        net.deliver()
        #expect(b.received.map(\.0) == [.timingClock])

        net.now = start.advanced(byNanoseconds: 30_000_000)
        a.session.send(noteOn(0, 60), at: net.now)
        a.session.flush()
        net.deliver()
        #expect(b.received.map(\.0) == [.timingClock, noteOn(0, 60)])
        #expect(lane.waiting == 1, "the second tick, taken back and posted again after the note")

        lane.sendDue(until: later(net, 10))
        net.deliver()
        #expect(b.received.map(\.0) == [.timingClock, noteOn(0, 60), .timingClock])
        let sent = sequences(a)
        #expect(sent == (0..<UInt16(sent.count)).map { sent[0] &+ $0 }, "\(sent)")
        #expect(b.session.counters.sequenceGaps == 0)
        #expect(b.session.counters.latePackets == 0)
        #expect(a.session.counters.packetsSent == sent.count)
    }

    /// A tick waits in the lane while notes gather in the packet being built; it is taken back only as that packet
    /// leaves, and posted again at once after it: out of the lane only while a packet is sent.
    @Test func aTickIsTakenBackOnlyAsAPacketLeaves() {
        let (net, a, b, lane) = connected()
        a.session.sendAhead(.timingClock, at: later(net, 10), owner: 0)
        a.session.send(noteOn(0, 60), at: net.now)
        a.session.send(noteOn(0, 64), at: net.now)
        #expect(lane.takenBack == 0 && lane.waiting == 1)
        a.session.flush()
        #expect(lane.takenBack == 1 && lane.waiting == 1)
        lane.sendDue(until: later(net, 10))
        net.deliver()
        #expect(b.received.map(\.0) == [noteOn(0, 60), noteOn(0, 64), .timingClock])
        let sent = sequences(a)
        #expect(sent == (0..<UInt16(sent.count)).map { sent[0] &+ $0 }, "\(sent)")
    }

    /// A note sent while a tick is due within a millisecond does not take the tick out of the lane (this thread might
    /// be held while the note leaves, and the tick late): the note goes into the lane right behind it, and leaves
    /// with it; the ticks after are taken back and follow. One sequence, no gap, nothing late; the next note, with
    /// no tick that close, leaves at once.
    @Test func aNoteWhileATickIsImminentGoesBehindItWithoutTakingItBack() {
        let (net, a, b, lane) = connected()
        let start = net.now
        a.session.sendAhead(.timingClock, at: later(net, 10), owner: 0)
        a.session.sendAhead(.timingClock, at: later(net, 30), owner: 0)
        net.now = start.advanced(byNanoseconds: 9_400_000)
        a.session.send(noteOn(0, 60), at: net.now)
        a.session.flush()
        net.deliver()
        #expect(b.received.isEmpty, "the note waits for the tick")
        #expect(lane.takenBack == 1, "the second tick only")
        #expect(a.session.counters.settledBehindAhead == 1)

        lane.sendDue(until: start.advanced(byNanoseconds: 10_000_000))
        net.deliver()
        #expect(b.received.map(\.0) == [.timingClock, noteOn(0, 60)])

        net.now = start.advanced(byNanoseconds: 15_000_000)
        a.session.send(noteOff(0, 60), at: net.now)
        a.session.flush()
        net.deliver()
        #expect(b.received.map(\.0) == [.timingClock, noteOn(0, 60), noteOff(0, 60)], "at once: the tick is 15 ms away")
        lane.sendDue(until: start.advanced(byNanoseconds: 30_000_000))
        net.deliver()
        #expect(b.received.map(\.0).last == .timingClock)
        let sent = sequences(a)
        #expect(sent == (0..<UInt16(sent.count)).map { sent[0] &+ $0 }, "\(sent)")
        #expect(b.session.counters.sequenceGaps == 0 && b.session.counters.latePackets == 0)
        #expect(a.session.counters.packetsSent == sent.count)
    }

    /// The song stops right after a note settled behind an imminent tick: the tick and the note stay in the lane (a
    /// settled packet is never taken back), the Stop goes behind them, and the later ticks never leave.
    @Test func aStopAfterASettledNoteGoesBehindItInOrder() {
        let (net, a, b, lane) = connected()
        let start = net.now
        for ms: UInt64 in [10, 30, 50] { a.session.sendAhead(.timingClock, at: later(net, ms), owner: 0) }
        net.now = start.advanced(byNanoseconds: 9_500_000)
        a.session.send(noteOn(0, 60), at: net.now)
        a.session.flush()
        a.session.withdrawAhead(after: net.now, owner: 0)
        a.session.sendAhead(.stop, at: net.now, owner: 0)
        #expect(lane.waiting == 3, "the tick, the note and the Stop")
        lane.sendDue(until: start.advanced(byNanoseconds: 100_000_000))
        net.deliver()
        #expect(b.received.map(\.0) == [.timingClock, noteOn(0, 60), .stop])
        let sent = sequences(a)
        #expect(sent == (0..<UInt16(sent.count)).map { sent[0] &+ $0 }, "\(sent)")
        #expect(b.session.counters.sequenceGaps == 0 && b.session.counters.latePackets == 0)
    }

    /// Messages prepared ahead for one instant (a late joiner's Song Position, Continue and tick) leave in one
    /// packet, after the ticks before them: the network cannot reorder or lose one without the others.
    @Test func messagesForOneInstantLeaveInOnePacket() {
        let (net, a, b, lane) = connected()
        a.session.sendAhead(.timingClock, at: later(net, 10), owner: 0)
        for message: MIDIMessage in [.songPosition(UInt14(masking: 88)), .continue, .timingClock] {
            a.session.sendAhead(message, at: later(net, 30), owner: 0)
        }
        #expect(lane.waiting == 2)
        lane.sendDue(until: later(net, 40))
        net.deliver()
        #expect(b.received.map(\.0) == [.timingClock, .songPosition(UInt14(masking: 88)), .continue, .timingClock])
        let sent = sequences(a)
        #expect(sent.count == 2 && sent[1] == sent[0] &+ 1, "\(sent)")
        #expect(b.session.counters.sequenceGaps == 0 && b.session.counters.latePackets == 0)
    }

    /// Issue 41: a flood of starts and stops before a bar line hands out a Start, a Stop and a Start again for it: one
    /// packet, with the last of them only.
    @Test func oneStartOrStopAtAnInstantTheLast() {
        let (net, a, b, lane) = connected()
        for message: MIDIMessage in [.start, .stop, .start] { a.session.sendAhead(message, at: later(net, 30), owner: 0) }
        a.session.sendAhead(.timingClock, at: later(net, 30), owner: 0)
        lane.sendDue(until: later(net, 40))
        net.deliver()
        #expect(b.received.map(\.0) == [.start, .timingClock])
        #expect(sequences(a).count == 1)
    }

    /// Withdrawn after an instant (the song stopped), the ticks due later never leave, those due by then do, and
    /// the next packet carries the sequence number after the last that left.
    @Test func withdrawnTicksNeverLeaveAndTheNextPacketFollowsTheLastSent() {
        let (net, a, b, lane) = connected()
        for ms: UInt64 in [10, 20, 30, 40] { a.session.sendAhead(.timingClock, at: later(net, ms), owner: 0) }
        a.session.withdrawAhead(after: later(net, 20), owner: 0)
        lane.sendDue(until: later(net, 100))
        a.session.send(.stop, at: later(net, 25))
        a.session.flush()
        net.deliver()
        #expect(b.received.map(\.0) == [.timingClock, .timingClock, .stop])
        let sent = sequences(a)
        #expect(sent == (0..<UInt16(sent.count)).map { sent[0] &+ $0 }, "\(sent)")
        #expect(b.session.counters.sequenceGaps == 0)
    }

    /// A full lane: the packet goes when prepared, after what waited for the peer, counted; nothing out of order,
    /// no sequence number twice.
    @Test func aPacketTheLaneHasNoRoomForLeavesAtOnceAfterWhatWaitedForThePeer() {
        let (net, a, b, lane) = connected()
        lane.capacity = 2
        a.session.sendAhead(.timingClock, at: later(net, 10), owner: 0)
        a.session.sendAhead(.timingClock, at: later(net, 20), owner: 0)
        #expect(a.session.counters.aheadSentEarly == 2, "the first, taken back, and the second")
        a.session.send(noteOn(0, 60), at: net.now)
        a.session.flush()
        lane.sendDue(until: later(net, 30))
        net.deliver()
        #expect(b.received.map(\.0).filter { $0 == .timingClock }.count == 2)
        #expect(b.received.map(\.0).contains(noteOn(0, 60)))
        #expect(b.session.counters.latePackets == 0)
        let sent = sequences(a)
        #expect(Set(sent).count == sent.count, "no sequence number twice: \(sent)")
    }

    /// A peer that leaves gets none of what waited for it.
    @Test func aPeerThatLeavesGetsNothingPreparedForIt() {
        let (net, a, b, lane) = connected()
        a.session.sendAhead(.timingClock, at: later(net, 10), owner: 0)
        b.session.close(now: net.now)
        net.deliver()
        #expect(a.left.count == 1)
        #expect(lane.waiting == 0)
    }

    /// Without a lane, `sendAhead` is `send`.
    @Test func withoutALaneSendAheadSendsAtOnce() {
        let (net, a, b, lane) = connected()
        a.session.lane = nil
        a.session.sendAhead(.timingClock, at: later(net, 10), owner: 0)
        a.session.flush()
        net.deliver()
        #expect(b.received.map(\.0) == [.timingClock])
        #expect(lane.waiting == 0)
    }

    /// Issue 42: the drums' notes prepared ahead between the jam's ticks leave in the order of their time, and the
    /// drums withdrawing take back only theirs, never the note-off of a note that left: the sequence runs on.
    @Test func notesPreparedAheadBetweenTicksLeaveInTimeOrderAndTheirOwnerTakesBackOnlyItsOwn() {
        let (net, a, b, lane) = connected()
        let (jam, drums) = (1, 2)
        for ms: UInt64 in [10, 30, 50] { a.session.sendAhead(.timingClock, at: later(net, ms), owner: jam) }
        a.session.sendAhead(noteOn(9, 36), at: later(net, 20), owner: drums)
        a.session.sendAhead(noteOff(9, 36), at: later(net, 45), owner: drums)
        a.session.sendAhead(noteOn(9, 38), at: later(net, 40), owner: drums)
        a.session.sendAhead(noteOff(9, 38), at: later(net, 60), owner: drums)
        #expect(lane.waiting == 7)
        lane.sendDue(until: later(net, 25))
        a.session.withdrawAhead(after: later(net, 25), owner: drums)
        #expect(lane.waiting == 3, "the jam's two ticks and the first note's note-off")
        lane.sendDue(until: later(net, 100))
        net.deliver()
        #expect(b.received.map(\.0) == [.timingClock, noteOn(9, 36), .timingClock, noteOff(9, 36), .timingClock])
        let sent = sequences(a)
        #expect(sent == (0..<UInt16(sent.count)).map { sent[0] &+ $0 }, "\(sent)")
        #expect(b.session.counters.sequenceGaps == 0 && b.session.counters.latePackets == 0)
    }
}

extension AheadTests {
    /// A clock prepared 100 ms ahead for seconds, with the session's own packets (clock sync, receiver feedback,
    /// and journal-only guard packets while the peer's feedback is lost) between its ticks: the peer reads every
    /// tick once, in order, none late or lost, and no guard packet goes while ticks carry the journal.
    @Test(arguments: [false, true])
    func aClockPreparedAheadForSecondsArrivesWholeBetweenTheSessionsOwnPackets(feedbackLost: Bool) {
        let (net, a, b, lane) = connected()
        if feedbackLost { net.lose = { bytes, _ in bytes.starts(with: [0xFF, 0xFF, 0x52, 0x53]) } } // RS
        a.session.send(.start, at: net.now)
        a.session.flush()
        let period: UInt64 = 25_000_000
        var nextTick = net.now.advanced(byNanoseconds: period)
        let end = net.now.advanced(byNanoseconds: 5_000_000_000)
        while net.now < end {
            net.now = net.now.advanced(byNanoseconds: 1_000_000)
            while nextTick <= net.now.advanced(byNanoseconds: 100_000_000) {
                a.session.sendAhead(.timingClock, at: nextTick, owner: 0)
                nextTick = nextTick.advanced(byNanoseconds: period)
            }
            a.session.flush()
            for host in [a, b] where host.session.nextDeadline.map({ $0 <= net.now }) ?? false { host.session.tick(now: net.now) }
            lane.sendDue(until: net.now)
            net.deliver()
        }
        #expect(b.received.first?.0 == .start)
        let ticks = b.received.filter { $0.0 == .timingClock }.count
        #expect(ticks >= 199 && ticks <= 200, "\(ticks)")
        #expect(b.session.counters.sequenceGaps == 0)
        #expect(b.session.counters.latePackets == 0)
        let sent = sequences(a)
        #expect(sent == (0..<UInt16(sent.count)).map { sent[0] &+ $0 }, "\(sent.prefix(40))")
        #expect(a.session.counters.guardPackets == 0)
    }
}
