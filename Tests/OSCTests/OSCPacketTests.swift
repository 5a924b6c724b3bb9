#if canImport(Glibc)
import Glibc
#endif
import CLiblo
import OSC
import Testing

/// Every message and time tag `bytes` decode to, or the error.
private func decoded(_ bytes: [UInt8]) -> Result<[OSCMessage], OSCDecodeError> {
    var messages: [OSCMessage] = []
    do {
        try OSCPacket.decode(bytes) { message, _ in messages.append(message) }
        return .success(messages)
    } catch {
        return .failure(error)
    }
}

private func encoded(_ message: OSCMessage) throws -> [UInt8] {
    var bytes: [UInt8] = []
    try OSCPacket.encode(message, into: &bytes)
    return bytes
}

/// An OSC string: the UTF-8 bytes, a NUL, padded with NULs to a multiple of 4.
private func oscString(_ text: String) -> [UInt8] {
    let bytes = Array(text.utf8) + [0]
    return bytes + Array(repeating: 0, count: (4 - bytes.count % 4) % 4)
}

private func bigEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] { withUnsafeBytes(of: value.bigEndian, Array.init) }

/// `#bundle`, the time tag, then each element with its size.
private func bundle(_ timeTag: UInt64 = 1, _ elements: [[UInt8]]) -> [UInt8] {
    oscString("#bundle") + bigEndian(timeTag) + elements.flatMap { bigEndian(Int32($0.count)) + $0 }
}

/// Bytes of a message with arguments exactly as given (for malformed ones).
private func rawMessage(_ address: String, _ tags: String, _ arguments: [UInt8] = []) -> [UInt8] {
    oscString(address) + oscString(tags) + arguments
}

@Suite struct OSCPacketTests {
    static let everyType: [OSCArgument] = [
        .int32(-123_456), .float(0.5), .string("fader ünïcode"), .blob([1, 2, 3, 4, 5]), .int64(-9_000_000_000),
        .double(3.25), .bool(true), .bool(false), .nil_, .impulse, .midi([0, 0x90, 60, 100]), .char(UInt8(ascii: "x")),
        .timetag(0x1122_3344_5566_7788),
    ]

    @Test(arguments: everyType)
    func everyArgumentTypeSurvivesEncodeAndDecode(argument: OSCArgument) throws {
        let message = OSCMessage("/type/\(argument.typeTag)", [argument, .int32(7)])
        #expect(try decoded(encoded(message)).get() == [message])
    }

    @Test func allTypesInOneMessageAndEmptyValues() throws {
        for message in [OSCMessage("/all", Self.everyType), OSCMessage("/"), OSCMessage("/e", [.string(""), .blob([])])] {
            #expect(try decoded(encoded(message)).get() == [message])
        }
    }

    @Test func theWireFormatIsOSC10() throws {
        #expect(try encoded(OSCMessage("/e", [.blob([]), .int32(2)])) == oscString("/e") + oscString(",bi") + [0, 0, 0, 0, 0, 0, 0, 2])
        #expect(try encoded(OSCMessage("/1/fader1", [.float(0.5)]))
            == oscString("/1/fader1") + oscString(",f") + [0x3F, 0, 0, 0])
        #expect(try encoded(OSCMessage("/t", [.timetag(0x0102_0304_0506_0708), .char(0x41), .blob([9])]))
            == oscString("/t") + oscString(",tcb") + [1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0x41, 0, 0, 0, 1, 9, 0, 0, 0])
    }

    @Test func bytesLibloMadeDecodeIncludingSymbols() throws {
        let lo = try #require(lo_message_new())
        defer { lo_message_free(lo) }
        lo_message_add_float(lo, 0.25)
        lo_message_add_int32(lo, 42)
        lo_message_add_symbol(lo, "sym")
        lo_message_add_true(lo)
        lo_message_add_double(lo, -1.5)
        var size = 0
        let raw = try #require(lo_message_serialise(lo, "/3/xy", nil, &size))
        defer { free(raw) }
        let bytes = Array(UnsafeRawBufferPointer(start: raw, count: size))
        #expect(try decoded(bytes).get() == [OSCMessage("/3/xy", [.float(0.25), .int32(42), .string("sym"), .bool(true), .double(-1.5)])])
    }

    @Test func bundlesLibloMadeDecodeWithTheirTimeTags() throws {
        let inner = try #require(lo_bundle_new(lo_timetag(sec: 5, frac: 6)))
        let outer = try #require(lo_bundle_new(lo_timetag(sec: 1, frac: 2)))
        defer { lo_bundle_free_recursive(outer) }
        let (a, b) = (try #require(lo_message_new()), try #require(lo_message_new()))
        lo_message_add_int32(a, 1)
        lo_message_add_string(b, "two")
        lo_bundle_add_message(outer, "/a", a)
        lo_bundle_add_message(inner, "/b", b)
        lo_bundle_add_bundle(outer, inner)
        var size = 0
        let raw = try #require(lo_bundle_serialise(outer, nil, &size))
        defer { free(raw) }
        var seen: [(OSCMessage, UInt64)] = []
        try OSCPacket.decode(UnsafeRawBufferPointer(start: raw, count: size)) { seen.append(($0, $1)) }
        #expect(seen.map(\.0) == [OSCMessage("/a", [.int32(1)]), OSCMessage("/b", [.string("two")])])
        #expect(seen.map(\.1) == [1 << 32 | 2, 5 << 32 | 6])
    }

    @Test func nestedBundlesDeliverInOrderUpToEightDeep() throws {
        let one = try encoded(OSCMessage("/one", [.int32(1)]))
        let two = try encoded(OSCMessage("/two", [.float(2)]))
        var packet = bundle(9, [two])
        for _ in 1..<OSCPacket.maxBundleDepth { packet = bundle(9, [one, packet]) }
        let messages = try decoded(packet).get()
        #expect(messages.count == OSCPacket.maxBundleDepth)
        #expect(messages.last == OSCMessage("/two", [.float(2)]))
        #expect(try decoded(bundle(3, [])).get().isEmpty)
    }

    @Test func bundlesNestedTooDeepAreRefused() throws {
        var packet = bundle(1, [try encoded(OSCMessage("/deep"))])
        for _ in 1..<100 { packet = bundle(1, [packet]) }
        #expect(decoded(packet) == .failure(.bundleTooDeep))
        var nine = bundle(1, [try encoded(OSCMessage("/deep"))])
        for _ in 1...OSCPacket.maxBundleDepth { nine = bundle(1, [nine]) }
        #expect(decoded(nine) == .failure(.bundleTooDeep))
    }

    @Test func aBadPartDeliversNothingOfItsPacket() throws {
        let good = try encoded(OSCMessage("/good", [.int32(1)]))
        let packet = bundle(1, [good, good, rawMessage("/bad", ",f")])
        var delivered = 0
        #expect(throws: OSCDecodeError.liblo(code: LO_EINVALIDARG)) {
            try OSCPacket.decode(packet) { _, _ in delivered += 1 }
        }
        #expect(delivered == 0)
    }

    @Test func everyTruncationIsAnErrorOrAShorterValidBundle() throws {
        let message = try encoded(OSCMessage("/1/fader1", Self.everyType))
        for length in 0..<message.count {
            guard case .failure = decoded(Array(message.prefix(length))) else {
                Issue.record("a message cut to \(length) of \(message.count) bytes decoded")
                continue
            }
        }
        let elements = [message, try encoded(OSCMessage("/x", [.string("y")]))]
        let packet = bundle(1, [elements[0], bundle(2, [elements[1]])])
        let boundaries = [16, 16 + 4 + message.count] // after the header, after the first element
        for length in 0..<packet.count {
            switch decoded(Array(packet.prefix(length))) {
            case .failure: break
            case .success(let messages):
                #expect(boundaries.contains(length), "a bundle cut to \(length) bytes decoded to \(messages)")
            }
        }
        #expect(decoded(packet).map(\.count) == .success(2))
    }

    @Test func malformedTypeTagsAreNamed() throws {
        #expect(decoded(rawMessage("/x", ",fz", [0, 0, 0, 0])) == .failure(.badTypeTag(UInt8(ascii: "z"), address: "/x")))
        #expect(decoded(rawMessage("/x", ",[i]", [0, 0, 0, 1])) == .failure(.badTypeTag(UInt8(ascii: "["), address: "/x")))
        #expect(decoded(rawMessage("/x", "f", [0, 0, 0, 0])) == .failure(.liblo(code: LO_EBADTYPE)))
        #expect(decoded(oscString("/x")) == .failure(.liblo(code: LO_ENOTYPE)))
        #expect(decoded(rawMessage("/x", ",i")) == .failure(.liblo(code: LO_EINVALIDARG)))
        #expect(decoded(rawMessage("/x", ",s", [0x41, 0x41, 0x41, 0x41])) == .failure(.liblo(code: LO_EINVALIDARG)))
        #expect(decoded(rawMessage("/x", ",i", [0, 0, 0, 1, 0, 0, 0, 0])) == .failure(.liblo(code: LO_ESIZE)))
        #expect(decoded(rawMessage("/x", ",b", bigEndian(Int32.max) + [0, 0, 0, 0])) == .failure(.liblo(code: LO_EINVALIDARG)))
    }

    @Test func notOSCAndEmptyPacketsAreRefused() {
        #expect(decoded(Array("hello, world".utf8)) == .failure(.notOSC(firstByte: UInt8(ascii: "h"))))
        #expect(decoded(Array("#bandle\0".utf8) + Array(repeating: 0, count: 8)) == .failure(.notOSC(firstByte: UInt8(ascii: "#"))))
        #expect(decoded([]) == .failure(.truncated(needed: 1, available: 0)))
        #expect(decoded(Array("#bun".utf8)) == .failure(.truncated(needed: 16, available: 4)))
        #expect(decoded(bundle(1, [[0, 0, 0, 0]])) == .failure(.notOSC(firstByte: 0)))
    }

    @Test func hostileElementSizesAreRefused() throws {
        let message = try encoded(OSCMessage("/m"))
        let header = oscString("#bundle") + bigEndian(UInt64(1))
        for size: Int32 in [Int32.max, -1, Int32.min, 0, 6, Int32(message.count + 4)] {
            let packet = header + bigEndian(size) + message
            #expect(decoded(packet) == .failure(.badElementSize(size, available: message.count)), "size \(size)")
        }
        #expect(decoded(header + [0, 0]) == .failure(.truncated(needed: 4, available: 2)))
        #expect(decoded(bundle(1, [Array("nope".utf8)])) == .failure(.notOSC(firstByte: UInt8(ascii: "n"))))
    }

    @Test func elementCountIsBounded() throws {
        let message = try encoded(OSCMessage("/m"))
        #expect(try decoded(bundle(1, Array(repeating: message, count: OSCPacket.maxElements))).get().count == OSCPacket.maxElements)
        #expect(decoded(bundle(1, Array(repeating: message, count: OSCPacket.maxElements + 1))) == .failure(.tooManyElements))
    }

    @Test func hugeStringsDecodeWhenWellFormedAndFailWhenNot() throws {
        let text = String(repeating: "a", count: 60_000)
        let message = OSCMessage("/text", [.string(text)])
        #expect(try decoded(encoded(message)).get() == [message])
        let unterminated = rawMessage("/text", ",s", Array(repeating: UInt8(ascii: "a"), count: 60_000))
        #expect(decoded(unterminated) == .failure(.liblo(code: LO_EINVALIDARG)))
        let longAddress = Array(repeating: UInt8(ascii: "/"), count: 60_000)
        #expect(decoded(longAddress) == .failure(.liblo(code: LO_EINVALIDPATH)))
    }

    @Test func nanAndInfinityDecodeAsTheyAre() throws {
        let messages = try decoded(rawMessage("/f", ",fdf", [0x7F, 0xC0, 0, 0, 0x7F, 0xF8, 0, 0, 0, 0, 0, 1, 0x7F, 0x80, 0, 0])).get()
        guard case .float(let f) = messages.first?.arguments[0], case .double(let d) = messages.first?.arguments[1],
              case .float(let infinity) = messages.first?.arguments[2] else {
            Issue.record("decoded \(messages)")
            return
        }
        #expect(f.isNaN && d.isNaN && infinity == .infinity)
    }

    @Test func mutatedPacketsNeverCrash() throws {
        let valid = bundle(7, [try encoded(OSCMessage("/a/b", Self.everyType)), bundle(8, [try encoded(OSCMessage("/c", [.float(1)]))])])
        var state: UInt64 = 0x5EED
        func next() -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(truncatingIfNeeded: state >> 33)
        }
        var failures = 0
        for _ in 0..<5000 {
            var packet = valid
            for _ in 0...(next() % 4) {
                switch next() % 3 {
                case 0: packet[next() % packet.count] = UInt8(truncatingIfNeeded: next())
                case 1: packet.removeLast(min(packet.count - 1, next() % 8))
                default: packet.insert(UInt8(truncatingIfNeeded: next()), at: next() % packet.count)
                }
            }
            if case .failure(let error) = decoded(packet) {
                failures += 1
                #expect(!error.description.isEmpty)
            }
        }
        #expect(failures > 0)
    }

    @Test func anAddressIsCheckedByItsBytes() throws {
        // "/" then U+0597 (a combining mark) is one Character, not starting with the Character "/".
        let address = String(decoding: [0x2F, 0xD6, 0x97, 0xFF], as: UTF8.self)
        #expect(try decoded(rawMessage("/\u{0597}", ",")).get() == [OSCMessage("/\u{0597}")])
        #expect(try decoded(encoded(OSCMessage(address))).get() == [OSCMessage(address)])
    }

    @Test func encodingRefusesWhatOSCCannotCarry() {
        var bytes: [UInt8] = []
        #expect(throws: OSCEncodeError.addressWithoutSlash("fader")) { try OSCPacket.encode(OSCMessage("fader"), into: &bytes) }
        #expect(throws: OSCEncodeError.addressWithoutSlash("")) { try OSCPacket.encode(OSCMessage(""), into: &bytes) }
        #expect(throws: OSCEncodeError.nulInString("a\0b")) { try OSCPacket.encode(OSCMessage("/s", [.string("a\0b")]), into: &bytes) }
        #expect(throws: OSCEncodeError.midiNotFourBytes(3)) { try OSCPacket.encode(OSCMessage("/m", [.midi([1, 2, 3])]), into: &bytes) }
    }

    @Test func errorsSayWhatIsWrong() {
        #expect(OSCDecodeError.truncated(needed: 16, available: 4).description == "truncated OSC packet: needs 16 bytes, has 4")
        #expect(OSCDecodeError.notOSC(firstByte: 0x68).description
            == "not OSC: a packet starts with '/' (a message) or '#bundle', this one with byte 104")
        #expect(OSCDecodeError.badTypeTag(UInt8(ascii: "z"), address: "/x").description == "OSC message /x has an unknown type tag 'z'")
        #expect(OSCDecodeError.bundleTooDeep.description == "OSC bundles nested more than 8 deep")
        #expect(OSCDecodeError.badElementSize(-1, available: 8).description
            == "OSC bundle element size -1 is not a positive multiple of 4 within the 8 bytes left")
        #expect(OSCDecodeError.liblo(code: LO_ESIZE).description
            == "malformed OSC message: the arguments do not fill the message exactly (liblo error 9911)")
        #expect(OSCEncodeError.nulInString("a\0b").description == "OSC string 'a\\0b' contains a NUL character")
    }

    @Test func theEncodeBufferIsReused() throws {
        var bytes: [UInt8] = []
        try OSCPacket.encode(OSCMessage("/long/address/here", [.string(String(repeating: "x", count: 100))]), into: &bytes)
        let capacity = bytes.capacity
        try OSCPacket.encode(OSCMessage("/s", [.int32(1)]), into: &bytes)
        #expect(bytes == oscString("/s") + oscString(",i") + [0, 0, 0, 1])
        #expect(bytes.capacity == capacity)
    }
}
