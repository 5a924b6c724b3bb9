import CLiblo

/// Why a datagram is not a well-formed OSC packet.
public enum OSCDecodeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The packet (or a bundle element) ends before a part that must be there.
    case truncated(needed: Int, available: Int)
    /// The bytes start with neither `/` (a message) nor `#bundle` (a bundle).
    case notOSC(firstByte: UInt8)
    /// A message's type tag string holds a tag OSC 1.0 and liblo do not know.
    case badTypeTag(UInt8, address: String)
    /// Bundles nested more than `OSCPacket.maxBundleDepth` deep.
    case bundleTooDeep
    /// A bundle element's size is not a positive multiple of 4 within the bytes left.
    case badElementSize(Int32, available: Int)
    /// More than `OSCPacket.maxElements` bundle elements in one packet.
    case tooManyElements
    /// liblo refused a message (`LO_E*` in lo_errors.h).
    case liblo(code: Int32)

    /// What is wrong, for the log: e.g. "OSC message /x has an unknown type tag 'z'".
    public var description: String {
        switch self {
        case .truncated(let needed, let available):
            "truncated OSC packet: needs \(needed) bytes, has \(available)"
        case .notOSC(let byte):
            "not OSC: a packet starts with '/' (a message) or '#bundle', this one with byte \(byte)"
        case .badTypeTag(let tag, let address):
            "OSC message \(address) has an unknown type tag " + (0x21...0x7E ~= tag ? "'\(Character(Unicode.Scalar(tag)))'" : "byte \(tag)")
        case .bundleTooDeep:
            "OSC bundles nested more than \(OSCPacket.maxBundleDepth) deep"
        case .badElementSize(let size, let available):
            "OSC bundle element size \(size) is not a positive multiple of 4 within the \(available) bytes left"
        case .tooManyElements:
            "more than \(OSCPacket.maxElements) elements in one OSC packet"
        case .liblo(let code):
            "malformed OSC message: \(Self.reason(code)) (liblo error \(code))"
        }
    }

    /// What liblo's error codes mean for a received message.
    private static func reason(_ code: Int32) -> String {
        switch code {
        case LO_EINVALIDPATH: "the address is not a NUL-terminated string padded to 4 bytes"
        case LO_ENOTYPE: "no type tag string"
        case LO_EINVALIDTYPE: "the type tag string is not NUL-terminated and padded to 4 bytes"
        case LO_EBADTYPE: "the type tag string does not start with ','"
        case LO_EINVALIDARG: "an argument is cut short or badly padded"
        case LO_ESIZE: "the arguments do not fill the message exactly"
        case LO_EALLOC: "out of memory"
        default: "unknown reason"
        }
    }
}

/// Why a message cannot be encoded.
public enum OSCEncodeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The address does not start with `/`.
    case addressWithoutSlash(String)
    /// The address or a string argument contains a NUL character, which ends an OSC string.
    case nulInString(String)
    /// A MIDI argument (`m`) that is not exactly 4 bytes.
    case midiNotFourBytes(Int)
    /// liblo could not allocate the message.
    case outOfMemory

    /// What cannot be encoded, for the log.
    public var description: String {
        switch self {
        case .addressWithoutSlash(let address): "OSC address '\(address)' does not start with '/'"
        case .nulInString(let text): "OSC string '\(text.replacingNULs)' contains a NUL character"
        case .midiNotFourBytes(let count): "an OSC MIDI argument is 4 bytes (port, status, data 1, data 2), not \(count)"
        case .outOfMemory: "out of memory encoding an OSC message"
        }
    }
}

/// OSC 1.0 packets <-> messages: messages through liblo's codec, bundles parsed here.
public enum OSCPacket {
    /// Deepest bundle nesting accepted: a bundle directly in the packet is depth 1.
    public static let maxBundleDepth = 8
    /// Most bundle elements (messages and bundles, at every depth) accepted in one packet.
    public static let maxElements = 1024
    /// The time tag of a message outside any bundle: OSC's "immediately".
    public static let immediately: UInt64 = 1

    /// Decodes a datagram. The packet is checked whole first: if any part is malformed this
    /// throws for the first bad part and `handler` sees nothing, not even the bundle's good
    /// messages (a bundle is applied atomically). Otherwise `handler` gets each message in
    /// order with the time tag of its innermost bundle (`immediately` outside bundles).
    public static func decode(_ bytes: UnsafeRawBufferPointer,
                              _ handler: (OSCMessage, _ timeTag: UInt64) -> Void) throws(OSCDecodeError) {
        var messages: [(OSCMessage, UInt64)] = []
        var elements = 0
        try decodeElement(bytes, depth: 0, timeTag: immediately, elements: &elements) { messages.append(($0, $1)) }
        for (message, timeTag) in messages { handler(message, timeTag) }
    }

    /// Decodes a datagram held in an array; see `decode(_:_:)` for an `UnsafeRawBufferPointer`.
    public static func decode(_ bytes: [UInt8], _ handler: (OSCMessage, _ timeTag: UInt64) -> Void) throws(OSCDecodeError) {
        try bytes.withUnsafeBytes { raw in Result { () throws(OSCDecodeError) in try decode(raw, handler) } }.get()
    }

    private static func decodeElement(_ bytes: UnsafeRawBufferPointer, depth: Int, timeTag: UInt64, elements: inout Int,
                                      _ found: (OSCMessage, UInt64) -> Void) throws(OSCDecodeError) {
        guard let first = bytes.first else { throw .truncated(needed: 1, available: 0) }
        switch first {
        case UInt8(ascii: "/"): found(try decodeMessage(bytes), timeTag)
        case UInt8(ascii: "#"): try decodeBundle(bytes, depth: depth + 1, elements: &elements, found)
        default: throw .notOSC(firstByte: first)
        }
    }

    /// `#bundle\0`, an 8-byte time tag, then elements, each a big-endian int32 size and that many bytes.
    private static func decodeBundle(_ bytes: UnsafeRawBufferPointer, depth: Int, elements: inout Int,
                                     _ found: (OSCMessage, UInt64) -> Void) throws(OSCDecodeError) {
        let header = "#bundle\0".utf8
        guard bytes.count >= header.count else {
            guard bytes.elementsEqual(header.prefix(bytes.count)) else { throw .notOSC(firstByte: bytes[0]) }
            throw .truncated(needed: 16, available: bytes.count)
        }
        guard bytes.prefix(header.count).elementsEqual(header) else { throw .notOSC(firstByte: bytes[0]) }
        guard depth <= maxBundleDepth else { throw .bundleTooDeep }
        guard bytes.count >= 16 else { throw .truncated(needed: 16, available: bytes.count) }
        let timeTag = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        var offset = 16
        while offset < bytes.count {
            let left = bytes.count - offset
            guard left >= 4 else { throw .truncated(needed: 4, available: left) }
            let size = Int32(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: Int32.self))
            guard size > 0, size % 4 == 0, Int(size) <= left - 4 else { throw .badElementSize(size, available: left - 4) }
            elements += 1
            guard elements <= maxElements else { throw .tooManyElements }
            let element = UnsafeRawBufferPointer(rebasing: bytes[(offset + 4)..<(offset + 4 + Int(size))])
            try decodeElement(element, depth: depth, timeTag: timeTag, elements: &elements, found)
            offset += 4 + Int(size)
        }
    }

    /// One message through lo_message_deserialise (which copies the bytes it keeps).
    private static func decodeMessage(_ bytes: UnsafeRawBufferPointer) throws(OSCDecodeError) -> OSCMessage {
        var result: Int32 = 0
        // liblo only reads `data` (it copies it before converting byte order).
        guard let message = lo_message_deserialise(UnsafeMutableRawPointer(mutating: bytes.baseAddress), bytes.count, &result) else {
            if result == LO_EINVALIDARG, let tag = unknownTypeTag(bytes) { throw .badTypeTag(tag, address: address(bytes)) }
            throw .liblo(code: result)
        }
        defer { lo_message_free(message) }
        let count = Int(lo_message_get_argc(message))
        var arguments: [OSCArgument] = []
        if count > 0, let types = lo_message_get_types(message), let argv = lo_message_get_argv(message) {
            arguments.reserveCapacity(count)
            for index in 0..<count {
                arguments.append(argument(UInt8(bitPattern: types[index]), UnsafeRawPointer(argv[index])))
            }
        }
        return OSCMessage(address(bytes), arguments)
    }

    /// The argument with type tag `tag` whose host-order value liblo left at `value` (nil for tags without data).
    private static func argument(_ tag: UInt8, _ value: UnsafeRawPointer?) -> OSCArgument {
        func load<T>(_ type: T.Type) -> T { value!.loadUnaligned(as: T.self) }
        switch tag {
        case UInt8(ascii: "i"): return .int32(load(Int32.self))
        case UInt8(ascii: "f"): return .float(load(Float.self))
        case UInt8(ascii: "s"), UInt8(ascii: "S"): return .string(String(cString: value!.assumingMemoryBound(to: CChar.self)))
        case UInt8(ascii: "b"):
            let size = Int(load(Int32.self))
            return .blob(Array(UnsafeRawBufferPointer(start: value! + 4, count: size)))
        case UInt8(ascii: "h"): return .int64(load(Int64.self))
        case UInt8(ascii: "d"): return .double(load(Double.self))
        case UInt8(ascii: "T"): return .bool(true)
        case UInt8(ascii: "F"): return .bool(false)
        case UInt8(ascii: "N"): return .nil_
        case UInt8(ascii: "I"): return .impulse
        case UInt8(ascii: "m"): return .midi(Array(UnsafeRawBufferPointer(start: value!, count: 4)))
        case UInt8(ascii: "c"): return .char(UInt8(truncatingIfNeeded: load(Int32.self)))
        default: // "t": liblo keeps seconds and fraction as two host-order words
            return .timetag(UInt64(load(UInt32.self)) << 32 | UInt64(value!.loadUnaligned(fromByteOffset: 4, as: UInt32.self)))
        }
    }

    /// The address at the start of a message liblo has seen (up to its NUL or the end).
    private static func address(_ bytes: UnsafeRawBufferPointer) -> String {
        String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
    }

    /// The first type tag liblo does not know in a message whose address and tag string are well formed.
    private static func unknownTypeTag(_ bytes: UnsafeRawBufferPointer) -> UInt8? {
        guard let end = bytes.firstIndex(of: 0), (end / 4 + 1) * 4 < bytes.count else { return nil }
        let tags = bytes[((end / 4 + 1) * 4)...].dropFirst().prefix { $0 != 0 } // after the ','
        return tags.first { !knownTypeTags.contains($0) }
    }

    private static let knownTypeTags = Set("ifsSbhdTFNImct".utf8)

    /// Encodes `message` into `buffer`, replacing what it held (its capacity is reused).
    public static func encode(_ message: OSCMessage, into buffer: inout [UInt8]) throws(OSCEncodeError) {
        // The byte, not the Character: "/" and a combining mark after it are one Character.
        guard message.address.utf8.first == UInt8(ascii: "/") else { throw .addressWithoutSlash(message.address) }
        guard !message.address.utf8.contains(0) else { throw .nulInString(message.address) }
        guard let lo = lo_message_new() else { throw .outOfMemory }
        defer { lo_message_free(lo) }
        var emptyBlobs: [Int] = []
        for (index, argument) in message.arguments.enumerated() {
            if case .blob(let bytes) = argument, bytes.isEmpty {
                // lo_blob_new refuses size 0; an empty blob is 4 zero bytes, as int32 0 is: its tag is patched below.
                emptyBlobs.append(index)
                guard lo_message_add_int32(lo, 0) >= 0 else { throw .outOfMemory }
            } else {
                guard try add(argument, to: lo) >= 0 else { throw .outOfMemory }
            }
        }
        let size = lo_message_length(lo, message.address)
        buffer.removeAll(keepingCapacity: true)
        buffer.append(contentsOf: repeatElement(0, count: size))
        buffer.withUnsafeMutableBytes { _ = lo_message_serialise(lo, message.address, $0.baseAddress, nil) }
        let tags = (message.address.utf8.count / 4 + 1) * 4 + 1 // after the padded address and the ','
        for index in emptyBlobs { buffer[tags + index] = UInt8(ascii: "b") }
    }

    /// Adds one argument with lo_message_add_<type>; returns liblo's result (negative: out of memory).
    private static func add(_ argument: OSCArgument, to lo: lo_message) throws(OSCEncodeError) -> Int32 {
        switch argument {
        case .int32(let value): return lo_message_add_int32(lo, value)
        case .float(let value): return lo_message_add_float(lo, value)
        case .string(let value):
            guard !value.utf8.contains(0) else { throw .nulInString(value) }
            return lo_message_add_string(lo, value)
        case .blob(let bytes):
            guard let blob = bytes.withUnsafeBytes({ lo_blob_new(Int32(bytes.count), $0.baseAddress) }) else { return -1 }
            defer { lo_blob_free(blob) }
            return lo_message_add_blob(lo, blob)
        case .int64(let value): return lo_message_add_int64(lo, value)
        case .double(let value): return lo_message_add_double(lo, value)
        case .bool(let value): return value ? lo_message_add_true(lo) : lo_message_add_false(lo)
        case .nil_: return lo_message_add_nil(lo)
        case .impulse: return lo_message_add_infinitum(lo)
        case .midi(let bytes):
            guard bytes.count == 4 else { throw .midiNotFourBytes(bytes.count) }
            var copy = bytes
            return lo_message_add_midi(lo, &copy)
        case .char(let value): return lo_message_add_char(lo, CChar(bitPattern: value))
        case .timetag(let value):
            return lo_message_add_timetag(lo, lo_timetag(sec: UInt32(value >> 32), frac: UInt32(truncatingIfNeeded: value)))
        }
    }
}

private extension String {
    /// The string with NUL characters shown as `\0`, for error messages.
    var replacingNULs: String { String(unicodeScalars.flatMap { $0 == "\0" ? ["\\", "0"] : [$0] }.map(Character.init)) }
}
