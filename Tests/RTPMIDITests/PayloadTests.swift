import MIDI
import MIDITestSupport
import Testing
@testable import RTPMIDI

/// Decodes whole RTP packets with one receiver, as a session does for one peer.
struct PacketDecoder {
    var receiver = RTPMIDIReceiver(sysExLimit: 1 << 20)

    mutating func decode(_ packet: [UInt8]) throws(RTPMIDIError) -> [(MIDIMessage, UInt32)] {
        var out: [(MIDIMessage, UInt32)] = []
        var receiver = self.receiver
        let result = packet.withUnsafeBytes { bytes in
            Result { () throws(RTPMIDIError) in
                let (_, payload) = try RTPHeader.parse(bytes)
                try receiver.receive(UnsafeRawBufferPointer(rebasing: bytes[payload])) { out.append(($0, $1)) }
            }
        }
        self.receiver = receiver
        try result.get()
        return out
    }

    mutating func messages(_ packet: [UInt8]) throws(RTPMIDIError) -> [MIDIMessage] {
        try decode(packet).map(\.0)
    }
}

/// The RTP header of `packet`.
func header(_ packet: [UInt8]) throws(RTPMIDIError) -> RTPHeader {
    try packet.withUnsafeBytes { bytes in Result { () throws(RTPMIDIError) in try RTPHeader.parse(bytes).0 } }.get()
}

let rtpHeader: [UInt8] = [0x80, 0x61, 0x00, 0x01, 0, 0, 0x10, 0, 0, 0, 0, 42]

@Suite struct PayloadTests {
    @Test func macOSPacketWithJournalDecodesToExactlyItsNoteOn() throws {
        let packet: [UInt8] = [0x80, 0x61, 0x42, 0x7a, 0x4b, 0x9f, 0x30, 0x36, 0x47, 0xd8, 0x10, 0x96,
                               0x43, 0x90, 0x30, 0x26, 0x20, 0x42, 0x76, 0x00, 0x06, 0x08, 0x00, 0x66, 0x85]
        let header = try header(packet)
        #expect(header.sequence == 17018)
        #expect(header.timestamp == 1268723766)
        #expect(header.ssrc == 0x47d81096)
        #expect(header.payloadType == 97)
        #expect(!header.marker)
        var decoder = PacketDecoder()
        #expect(try decoder.messages(packet) == [noteOn(0, 48, 38)])
    }

    @Test func markerBitOneIsAccepted() throws {
        var decoder = PacketDecoder()
        var packet = rtpHeader + [0x03, 0x90, 60, 100]
        packet[1] |= 0x80
        #expect(try decoder.messages(packet) == [noteOn(0, 60, 100)])
    }

    @Test func runningStatusAndDeltaTimesAreApplied() throws {
        // Z=1: the first command has a delta (2), then 0x83 0x00 = 384 ticks, then 5.
        let list: [UInt8] = [0x02, 0x90, 60, 100, 0x83, 0x00, 62, 90, 0x05, 0x80, 60, 0]
        var decoder = PacketDecoder()
        let decoded = try decoder.decode(rtpHeader + [0x20 | UInt8(list.count)] + list)
        let expected = [noteOn(0, 60, 100), noteOn(0, 62, 90), noteOff(0, 60, 0)]
        #expect(decoded.map(\.0) == expected)
        #expect(decoded.map(\.1) == [2, 386, 391])
    }

    @Test func realTimeDoesNotCancelRunningStatusButSystemCommonDoes() throws {
        var decoder = PacketDecoder()
        let list: [UInt8] = [0xB0, 7, 100, 0, 0xF8, 0, 7, 90]
        #expect(try decoder.messages(rtpHeader + [UInt8(list.count)] + list)
            == [cc(0, 7, 100), .timingClock,
                cc(0, 7, 90)])
        let cancelled: [UInt8] = [0xB0, 7, 100, 0, 0xF6, 0, 7, 90]
        #expect(throws: RTPMIDIError.dataWithoutStatus(7)) { try decoder.messages(rtpHeader + [UInt8(cancelled.count)] + cancelled) }
    }

    @Test func sysExSegmentsAcrossPacketsAreReassembled() throws {
        var decoder = PacketDecoder()
        #expect(try decoder.messages(rtpHeader + [0x04, 0xF0, 1, 2, 0xF0]).isEmpty)
        #expect(try decoder.messages(rtpHeader + [0x05, 0xF7, 3, 0xF8, 4, 0xF0]) == [.timingClock])
        #expect(try decoder.messages(rtpHeader + [0x03, 0xF7, 5, 0xF7]) == [.sysEx(data: [1, 2, 3, 4, 5])])
        #expect(try decoder.messages(rtpHeader + [0x03, 0xF0, 9, 0xF7]) == [.sysEx(data: [9])])
    }

    @Test func cancelledAndOrphanSegmentsAreDroppedAndCounted() throws {
        var decoder = PacketDecoder()
        #expect(try decoder.messages(rtpHeader + [0x03, 0xF0, 1, 0xF0]).isEmpty)
        #expect(try decoder.messages(rtpHeader + [0x03, 0xF7, 2, 0xF4]).isEmpty)
        #expect(decoder.receiver.sysExIncomplete == 1)
        // A last segment whose first was lost delivers nothing.
        #expect(try decoder.messages(rtpHeader + [0x03, 0xF7, 3, 0xF7]).isEmpty)
        #expect(decoder.receiver.sysExIncomplete == 2)
        #expect(try decoder.messages(rtpHeader + [0x03, 0xF0, 4, 0xF7]) == [.sysEx(data: [4])])
    }

    @Test func aNewSysExAfterADiscardedOneThatLostItsEndIsDelivered() throws {
        var decoder = PacketDecoder(receiver: RTPMIDIReceiver(sysExLimit: 2))
        #expect(try decoder.messages(rtpHeader + [0x05, 0xF0, 1, 2, 3, 0xF0]).isEmpty) // too long, more to come
        // Its last segment is lost; a new SysEx starts.
        #expect(try decoder.messages(rtpHeader + [0x03, 0xF0, 7, 0xF7]) == [.sysEx(data: [7])])
    }

    @Test func sysExOverTheLimitIsDroppedAndCounted() throws {
        var decoder = PacketDecoder(receiver: RTPMIDIReceiver(sysExLimit: 4))
        #expect(try decoder.messages(rtpHeader + [0x07, 0xF0, 1, 2, 3, 4, 5, 0xF7]).isEmpty)
        #expect(decoder.receiver.sysExTooLong == 1)
        #expect(try decoder.messages(rtpHeader + [0x06, 0xF0, 1, 2, 3, 4, 0xF7]) == [.sysEx(data: [1, 2, 3, 4])])
    }

    @Test(arguments: [
        (Array(rtpHeader.prefix(11)), RTPMIDIError.truncatedRTPHeader),
        ([0x40] + Array(rtpHeader.dropFirst()) + [0x00], RTPMIDIError.wrongRTPVersion(1)),
        (rtpHeader, RTPMIDIError.truncatedCommandHeader),
        (rtpHeader + [0x80], RTPMIDIError.truncatedCommandHeader),
        (rtpHeader + [0x05, 0x90, 60, 100], RTPMIDIError.lengthPastEnd(length: 5, available: 3)),
        (rtpHeader + [0x80, 0x09, 0x90], RTPMIDIError.lengthPastEnd(length: 9, available: 1)),
        (rtpHeader + [0x43, 0x90, 60, 100], RTPMIDIError.truncatedJournal),
        (rtpHeader + [0x43, 0x90, 60, 100, 0x20, 0x00], RTPMIDIError.truncatedJournal),
        (rtpHeader + [0x43, 0x90, 60, 100, 0x20, 0x42, 0x76, 0x00, 0x09, 0x08, 0x00, 0x66, 0x85], RTPMIDIError.truncatedJournal),
        (rtpHeader + [0x43, 0x90, 60, 100, 0x20, 0x42, 0x76, 0x00, 0x05, 0x08, 0x00, 0x66, 0x85], RTPMIDIError.malformedJournal),
        (rtpHeader + [0x02, 0x90, 60], RTPMIDIError.truncatedCommand(status: 0x90)),
        (rtpHeader + [0x01, 0x3C], RTPMIDIError.dataWithoutStatus(0x3C)),
        (rtpHeader + [0x25, 0x81, 0x82, 0x83, 0x84, 0x00], RTPMIDIError.badDeltaTime),
        (rtpHeader + [0x01, 0xF4], RTPMIDIError.undefinedStatus(0xF4)),
        (rtpHeader + [0x04, 0xF0, 1, 0x90, 0xF7], RTPMIDIError.statusInsideSysEx(0x90)),
        (rtpHeader + [0x03, 0xF0, 1, 2], RTPMIDIError.truncatedCommand(status: 0xF0)),
    ])
    func malformedPacketsThrowAndDeliverNothing(packet: [UInt8], error: RTPMIDIError) {
        var decoder = PacketDecoder()
        var delivered: [(MIDIMessage, UInt32)] = []
        #expect(throws: error) { delivered = try decoder.decode(packet) }
        #expect(delivered.isEmpty)
    }

    @Test func aBadCommandLateInTheListDeliversNothingFromEarlierOnes() {
        var decoder = PacketDecoder()
        #expect(throws: RTPMIDIError.undefinedStatus(0xFD)) {
            _ = try decoder.decode(rtpHeader + [0x05, 0x90, 60, 100, 0x00, 0xFD])
        }
    }

    @Test func paddingIsRemovedBeforeTheCommandSection() throws {
        var decoder = PacketDecoder()
        var packet = rtpHeader + [0x03, 0x90, 60, 100, 0, 0, 3]
        packet[0] |= 0x20
        #expect(try decoder.messages(packet) == [noteOn(0, 60, 100)])
    }

    @Test(arguments: [false, true])
    func senderAndReceiverRoundTripRandomHistories(runningStatus: Bool) throws {
        var random = SeededGenerator(seed: runningStatus ? 11 : 12)
        for _ in 0..<200 {
            var sender = RTPMIDISender(ssrc: 1, sequence: 65530, maxDatagram: 200, runningStatus: runningStatus)
            var packets: [[UInt8]] = []
            var sent: [(MIDIMessage, UInt32)] = []
            var tick = UInt32.random(in: 0...UInt32.max, using: &random)
            for _ in 0..<Int.random(in: 1...40, using: &random) {
                let message = random.message(maxSysEx: 700)
                tick &+= UInt32.random(in: 0...20_000, using: &random)
                sent.append((message, tick))
                sender.append(message, tick: tick) { packets.append(Array($0)) }
            }
            sender.flush { packets.append(Array($0)) }
            var decoder = PacketDecoder()
            var received: [(MIDIMessage, UInt32)] = []
            var expectedSequence: UInt16 = 65530
            for packet in packets {
                #expect(packet.count <= 200)
                let header = try header(packet)
                #expect(header.sequence == expectedSequence)
                #expect(!header.marker)
                expectedSequence &+= 1
                received += try decoder.decode(packet).map { ($0.0, header.timestamp &+ $0.1) }
            }
            #expect(received.map(\.0) == sent.map(\.0))
            // SysEx segments after the first carry the time they were handed over at.
            #expect(received.map(\.1) == sent.map(\.1))
        }
    }

    @Test func a64KiBSysExIsSegmentedIntoDatagramsOfAtMost1400Bytes() throws {
        let data = (0..<65536).map { UInt8($0 % 128) }
        var sender = RTPMIDISender(ssrc: 1, sequence: 0)
        var packets: [[UInt8]] = []
        sender.append(.sysEx(data: data), tick: 5) { packets.append(Array($0)) }
        sender.flush { packets.append(Array($0)) }
        #expect(packets.count > 46)
        #expect(packets.allSatisfy { $0.count <= 1400 })
        var decoder = PacketDecoder()
        var received: [MIDIMessage] = []
        for packet in packets { received += try decoder.messages(packet) }
        #expect(received == [.sysEx(data: data)])
    }
}
