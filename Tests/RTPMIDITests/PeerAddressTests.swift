import MIDI
import MIDITestSupport
import Testing
import Transport
@testable import RTPMIDI

/// Issue 41: a peer is where it joined from, its sequence number cannot be pushed, and its journal's song position
/// is checked before it is followed. Its SSRC is in every packet it sends: anyone who hears one can forge more.
@Suite struct PeerAddressTests {
    /// A (10.0.0.1) invited B (10.0.0.2): connected both ways.
    private func pair() -> (VirtualNetwork, a: RecordingHost, b: RecordingHost) {
        let net = VirtualNetwork()
        let a = net.add(1, name: "A", ssrc: 100)
        let b = net.add(2, name: "B", ssrc: 200)
        a.session.invite(b.address, label: "b", now: net.now)
        net.deliver()
        return (net, a, b)
    }

    /// The RTP packet A sends for `message`, kept from the network.
    private func packet(_ message: MIDIMessage, from a: RecordingHost, _ net: VirtualNetwork) -> [UInt8] {
        a.session.send(message, at: net.now)
        a.session.flush()
        defer { a.outbox.removeAll() }
        return a.outbox.first { $0.port == .data && $0.bytes.first == 0x80 }!.bytes
    }

    private func receive(_ datagram: [UInt8], at b: RecordingHost, on port: SessionPort = .data, from address: NetworkAddress,
                         _ net: VirtualNetwork) {
        datagram.withUnsafeBytes { b.session.receive($0, on: port, from: address, now: net.now) }
    }

    @Test func aPeersRTPFromAnotherHostOrAnotherPortOfItsHostIsDroppedAndCounted() {
        let (net, a, b) = pair()
        let stop = packet(.stop, from: a, net), note = packet(noteOn(0, 60), from: a, net)
        receive(stop, at: b, from: NetworkAddress(ipv4: 10, 0, 0, 9, port: 5005), net)
        receive(note, at: b, from: a.address.with(port: 6000), net)
        #expect(b.received.isEmpty)
        #expect(b.session.counters.wrongAddress == 2)
        #expect(b.session.counters.unknownSender == 0)
        #expect(b.dropped.allSatisfy { $0.contains("did not join from") }, "\(b.dropped)")
        receive(note, at: b, from: a.address.with(port: 5005), net) // from where A joined: its own
        #expect(b.received.map(\.0) == [noteOn(0, 60)])
    }

    @Test func aPeersClockSyncAndReceiverFeedbackCountOnlyFromItsPorts() {
        let (net, a, b) = pair()
        let ck = SessionPacket.clockSync(.init(ssrc: 100, count: 0, timestamps: (1, 0, 0)))
        var bytes: [UInt8] = []
        ck.encode(into: &bytes)
        b.outbox.removeAll()
        receive(bytes, at: b, from: a.address.with(port: 7000), net)
        #expect(b.outbox.isEmpty, "no answer goes to a port the peer did not join from")
        bytes.removeAll()
        SessionPacket.receiverFeedback(ssrc: 100, sequence: 1).encode(into: &bytes)
        receive(bytes, at: b, on: .control, from: a.address.with(port: 5005), net) // its data port, on our control port
        #expect(b.session.counters.wrongAddress == 2)
    }

    @Test func aPeerRemovedForSilenceComesBackOnlyFromItsOwnAddresses() {
        let (net, hub, player) = playerTimedOutAtHub()
        #expect(hub.left.map(\.1) == [.timedOut])
        // Within the return grace, a CK under its SSRC from another port of its host: not the player.
        var bytes: [UInt8] = []
        SessionPacket.clockSync(.init(ssrc: 200, count: 0, timestamps: (1, 0, 0))).encode(into: &bytes)
        hub.outbox.removeAll()
        receive(bytes, at: hub, from: player.address.with(port: 7001), net)
        #expect(hub.returned.isEmpty)
        #expect(hub.outbox.isEmpty)
        #expect(hub.session.counters.wrongAddress == 1)
        net.resume(player)
        net.run(seconds: 3) // its own next CK brings it back
        #expect(hub.returned.map(\.ssrc) == [200])
    }

    @Test func oneForgedPacketFarAheadInSequenceDoesNotMakeTheRealOnesLate() {
        let (net, a, b) = pair()
        receive(packet(noteOn(0, 60), from: a, net), at: b, from: a.address.with(port: 5005), net)
        var forged = packet(noteOn(0, 99), from: a, net)
        a.session.send(noteOff(0, 99), at: net.now) // A's own sequence goes on as if the forged one were never sent:
        a.session.flush()                            // the packet above is taken from A only for its form
        a.outbox.removeAll()
        let sequence = (UInt16(forged[2]) << 8 | UInt16(forged[3])) &+ 30_000
        forged[2] = UInt8(sequence >> 8)
        forged[3] = UInt8(sequence & 0xFF)
        receive(forged, at: b, from: a.address.with(port: 5005), net) // spoofed: from A's own address
        #expect(b.session.counters.outOfWindow == 1)
        for note in UInt8(61)..<64 { receive(packet(noteOn(0, note), from: a, net), at: b, from: a.address.with(port: 5005), net) }
        #expect(b.received.map(\.0).filter { $0 != noteOff(0, 99) }.suffix(3) == [noteOn(0, 61), noteOn(0, 62), noteOn(0, 63)])
        #expect(b.session.counters.latePackets == 0)
    }

    @Test func aSenderWhoseSequenceJumpedIsFollowedFromItsThirdPacketInARow() {
        let (net, a, b) = pair()
        receive(packet(noteOn(0, 60), from: a, net), at: b, from: a.address.with(port: 5005), net)
        var packets = (UInt8(61)..<64).map { packet(noteOn(0, $0), from: a, net) }
        for index in packets.indices { // as if A's count had jumped 10,000 on
            let sequence = (UInt16(packets[index][2]) << 8 | UInt16(packets[index][3])) &+ 10_000
            packets[index][2] = UInt8(sequence >> 8)
            packets[index][3] = UInt8(sequence & 0xFF)
            receive(packets[index], at: b, from: a.address.with(port: 5005), net)
        }
        // The first two are held back; the third is taken, and its journal brings back what they played.
        #expect(b.session.counters.outOfWindow == 2)
        #expect(Set(b.received.map(\.0)) == Set((UInt8(60)..<64).map { noteOn(0, $0) }))
    }

    @Test func packetsOvertakenByJitterAreDroppedAsLateAndTheSequenceStays() {
        let (net, a, b) = pair()
        let from = a.address.with(port: 5005)
        let packets = (UInt8(60)..<66).map { packet(noteOn(0, $0), from: a, net) }
        for index in [0, 4, 1, 2, 3, 5] { receive(packets[index], at: b, from: from, net) } // 4 overtook 1, 2 and 3
        #expect(b.session.counters.latePackets == 3)
        #expect(b.received.map(\.0) == [60, 61, 62, 63, 64, 65].map { noteOn(0, $0) }) // 61-63 from 64's journal
    }

    @Test func realPacketsBehindAForgedJumpWithinTheWindowAreTheSequenceAgainFromTheEighth() {
        let (net, a, b) = pair()
        let from = a.address.with(port: 5005)
        receive(packet(noteOn(0, 40), from: a, net), at: b, from: from, net)
        var forged = packet(noteOn(0, 99), from: a, net)
        let sequence = (UInt16(forged[2]) << 8 | UInt16(forged[3])) &+ 1000
        forged[2] = UInt8(sequence >> 8)
        forged[3] = UInt8(sequence & 0xFF)
        receive(forged, at: b, from: from, net) // within the 3000 ahead a long loss may take: taken
        for note in UInt8(41)..<50 { receive(packet(noteOn(0, note), from: a, net), at: b, from: from, net) }
        #expect(b.session.counters.latePackets == 7)
        #expect(b.received.map(\.0).suffix(2) == [noteOn(0, 48), noteOn(0, 49)], "\(b.received.map(\.0))")
    }

    @Test func aJournalThatPutsTheRunningSongFarOnIsNotFollowedAndTheSongGoesOn() {
        let (net, a, b) = pair()
        let from = a.address.with(port: 5005)
        receive(packet(.start, from: a, net), at: b, from: from, net)
        for _ in 0..<6 {
            net.now = net.now.advanced(byNanoseconds: 20_000_000)
            receive(packet(.timingClock, from: a, net), at: b, from: from, net)
        }
        // Lost on the way: a jump of 5,000 sixteenths (30,000 ticks) in 20 ms, which no tempo makes.
        _ = packet(.stop, from: a, net)
        _ = packet(.songPosition(UInt14(masking: 5000)), from: a, net)
        _ = packet(.continue, from: a, net)
        net.now = net.now.advanced(byNanoseconds: 20_000_000)
        receive(packet(.timingClock, from: a, net), at: b, from: from, net)
        #expect(b.session.counters.implausibleSongPositions == 1)
        #expect(b.received.map(\.0) == [.start] + Array(repeating: .timingClock, count: 7))
        #expect(b.songTicks.last == 6, "\(b.songTicks)") // its own count goes on
    }

    @Test func aJournalThatCountsTheTicksLostInTheirTimeIsFollowed() {
        let (net, a, b) = pair()
        let from = a.address.with(port: 5005)
        receive(packet(.start, from: a, net), at: b, from: from, net)
        for tick in 0..<10 {
            net.now = net.now.advanced(byNanoseconds: 20_000_000)
            let datagram = packet(.timingClock, from: a, net)
            if !(3..<6).contains(tick) { receive(datagram, at: b, from: from, net) } // three lost
        }
        #expect(b.session.counters.implausibleSongPositions == 0)
        #expect(b.songTicks.last == 9, "\(b.songTicks)")
    }
}
