import Testing
@testable import RTPMIDI

@Suite struct SessionPacketTests {
    func parse(_ bytes: [UInt8]) throws(SessionPacketError) -> SessionPacket {
        let result = bytes.withUnsafeBytes { buffer in Result { () throws(SessionPacketError) in try SessionPacket(parsing: buffer) } }
        return try result.get()
    }

    func encoded(_ packet: SessionPacket) -> [UInt8] {
        var bytes: [UInt8] = []
        packet.encode(into: &bytes)
        return bytes
    }

    @Test func invitationWithNonASCIINameRoundTrips() throws {
        let packet = SessionPacket.invitation(.init(token: 0xDEADBEEF, ssrc: 0x01020304, name: "Mike’s Mac"))
        let bytes = encoded(packet)
        #expect(bytes.prefix(4) == [0xFF, 0xFF, 0x49, 0x4E])
        #expect(bytes.last == 0)
        #expect(try parse(bytes) == packet)
    }

    @Test func everyHandshakeKindRoundTrips() throws {
        let h = SessionPacket.Handshake(token: 7, ssrc: 9, name: "Jam")
        for packet in [SessionPacket.accepted(h), .rejected(h), .bye(.init(token: 0, ssrc: 9))] {
            #expect(try parse(encoded(packet)) == packet)
        }
    }

    @Test func clockSyncIs36BytesAndRoundTrips() throws {
        let packet = SessionPacket.clockSync(.init(ssrc: 5, count: 1, timestamps: (1000, 50000, 0)))
        let bytes = encoded(packet)
        #expect(bytes.count == 36)
        #expect(try parse(bytes) == packet)
    }

    @Test func receiverFeedbackCarriesSequenceInUpperHalf() throws {
        let bytes = encoded(.receiverFeedback(ssrc: 1, sequence: 0x1234))
        #expect(bytes == [0xFF, 0xFF, 0x52, 0x53, 0, 0, 0, 1, 0x12, 0x34, 0, 0])
        #expect(try parse(bytes) == .receiverFeedback(ssrc: 1, sequence: 0x1234))
    }

    @Test func bitrateLimitAndUnknownCommandsAreIgnored() throws {
        #expect(try parse([0xFF, 0xFF, 0x52, 0x4C, 0, 0, 0, 1, 0, 0, 0x10, 0]) == .ignored(command: 0x524C))
        #expect(try parse([0xFF, 0xFF, 0x5A, 0x5A]) == .ignored(command: 0x5A5A))
    }

    @Test func malformedSessionPacketsThrowTypedErrors() {
        #expect(throws: SessionPacketError.badSignature) { try parse([0xFF, 0xFE, 0x49, 0x4E]) }
        #expect(throws: SessionPacketError.badSignature) { try parse([0xFF, 0xFF, 0x49]) }
        #expect(throws: SessionPacketError.truncated(command: 0x494E)) { try parse([0xFF, 0xFF, 0x49, 0x4E, 0, 0, 0, 2]) }
        #expect(throws: SessionPacketError.truncated(command: 0x434B)) { try parse(Array(encoded(.clockSync(.init(ssrc: 1, count: 0, timestamps: (1, 0, 0)))).dropLast())) }
        var badCount = encoded(.clockSync(.init(ssrc: 1, count: 0, timestamps: (1, 0, 0))))
        badCount[8] = 3
        #expect(throws: SessionPacketError.badClockSyncCount(3)) { try parse(badCount) }
        var badName = encoded(.invitation(.init(token: 1, ssrc: 2, name: "ab")))
        badName[16] = 0xC3
        badName[17] = 0x28
        #expect(throws: SessionPacketError.nameNotUTF8) { try parse(badName) }
    }

    @Test func clockSyncMathsFromTheIssue() {
        let result = ClockSyncResult(ts1: 1000, ts2: 50000, ts3: 1010)
        #expect(result.roundTrip == 10)
        #expect(result.offset == -48995)
    }

    @Test func clockSyncMathsDoesNotOverflowNearTheTop() {
        let result = ClockSyncResult(ts1: UInt64.max - 10, ts2: 5, ts3: UInt64.max)
        #expect(result.roundTrip == 10)
        #expect(result.offset == Int64(bitPattern: UInt64.max - 5 &- 5))
    }
}
