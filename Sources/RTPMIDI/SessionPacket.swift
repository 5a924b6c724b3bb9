/// An AppleMIDI session packet (the 0xFFFF-prefixed commands beside RTP on both ports).
public enum SessionPacket: Equatable, Sendable {
    /// IN: an invitation from `ssrc`, with the initiator's `token` and optional `name`.
    case invitation(Handshake)
    /// OK: the invitation with `token` is accepted.
    case accepted(Handshake)
    /// NO: the invitation with `token` is rejected.
    case rejected(Handshake)
    /// BY: `ssrc` ends the session.
    case bye(Handshake)
    /// CK: one step (`count` 0, 1 or 2) of the clock synchronisation exchange.
    case clockSync(ClockSync)
    /// RS: `ssrc` has received RTP packets up to `sequence`.
    case receiverFeedback(ssrc: UInt32, sequence: UInt16)
    /// RL (macOS) and commands unknown to us: ignored, never fatal.
    case ignored(command: UInt16)

    /// The fields of IN, OK, NO and BY.
    public struct Handshake: Equatable, Sendable {
        /// Protocol version; 2 for every known implementation.
        public var version: UInt32
        /// The initiator's token, echoed by the responder.
        public var token: UInt32
        /// The sender's synchronisation source.
        public var ssrc: UInt32
        /// The sender's session name (UTF-8), if it sent one.
        public var name: String?
        /// The fields as given.
        public init(version: UInt32 = 2, token: UInt32, ssrc: UInt32, name: String? = nil) {
            self.version = version
            self.token = token
            self.ssrc = ssrc
            self.name = name
        }
    }

    /// The fields of CK.
    public struct ClockSync: Equatable, Sendable {
        /// The sender's synchronisation source.
        public var ssrc: UInt32
        /// 0: the initiator's first timestamp; 1: the responder's reply; 2: the initiator's last.
        public var count: UInt8
        /// The three timestamps, 100 µs ticks; those not yet filled are 0.
        public var timestamps: (UInt64, UInt64, UInt64)
        /// The fields as given.
        public init(ssrc: UInt32, count: UInt8, timestamps: (UInt64, UInt64, UInt64)) {
            self.ssrc = ssrc
            self.count = count
            self.timestamps = timestamps
        }
        public static func == (a: Self, b: Self) -> Bool {
            a.ssrc == b.ssrc && a.count == b.count && a.timestamps == b.timestamps
        }
    }

    static let invitationCode: UInt16 = 0x494E
    static let acceptedCode: UInt16 = 0x4F4B
    static let rejectedCode: UInt16 = 0x4E4F
    static let byeCode: UInt16 = 0x4259
    static let clockSyncCode: UInt16 = 0x434B
    static let receiverFeedbackCode: UInt16 = 0x5253

    /// True if `datagram` starts like a session packet (0xFFFF) rather than RTP.
    public static func isSessionPacket(_ datagram: UnsafeRawBufferPointer) -> Bool {
        datagram.count >= 2 && datagram[0] == 0xFF && datagram[1] == 0xFF
    }

    /// Parses `datagram`, which must start with 0xFFFF.
    public init(parsing datagram: UnsafeRawBufferPointer) throws(SessionPacketError) {
        var reader = ByteReader(datagram)
        guard reader.u16() == 0xFFFF, let command = reader.u16() else { throw .badSignature }
        switch command {
        case Self.invitationCode, Self.acceptedCode, Self.rejectedCode, Self.byeCode:
            guard let version = reader.u32(), let token = reader.u32(), let ssrc = reader.u32() else {
                throw .truncated(command: command)
            }
            let name = try Self.name(from: datagram[reader.offset...])
            let handshake = Handshake(version: version, token: token, ssrc: ssrc, name: name)
            switch command {
            case Self.invitationCode: self = .invitation(handshake)
            case Self.acceptedCode: self = .accepted(handshake)
            case Self.rejectedCode: self = .rejected(handshake)
            default: self = .bye(handshake)
            }
        case Self.clockSyncCode:
            guard let ssrc = reader.u32(), let count = reader.u8(), reader.skip(3),
                  let ts1 = reader.u64(), let ts2 = reader.u64(), let ts3 = reader.u64() else {
                throw .truncated(command: command)
            }
            guard count <= 2 else { throw .badClockSyncCount(count) }
            self = .clockSync(ClockSync(ssrc: ssrc, count: count, timestamps: (ts1, ts2, ts3)))
        case Self.receiverFeedbackCode:
            guard let ssrc = reader.u32(), let sequence = reader.u16() else { throw .truncated(command: command) }
            self = .receiverFeedback(ssrc: ssrc, sequence: sequence)
        default:
            self = .ignored(command: command)
        }
    }

    /// The name field: UTF-8 up to the first NUL (or the end); nil if absent or empty.
    private static func name(from bytes: Slice<UnsafeRawBufferPointer>) throws(SessionPacketError) -> String? {
        let end = bytes.firstIndex(of: 0) ?? bytes.endIndex
        guard end > bytes.startIndex else { return nil }
        guard let name = String(validating: bytes[bytes.startIndex..<end], as: UTF8.self) else { throw .nameNotUTF8 }
        return name
    }

    /// Appends the packet's bytes to `bytes`.
    public func encode(into bytes: inout [UInt8]) {
        bytes.appendBigEndian(UInt16(0xFFFF))
        switch self {
        case .invitation(let h): Self.encode(Self.invitationCode, h, into: &bytes)
        case .accepted(let h): Self.encode(Self.acceptedCode, h, into: &bytes)
        case .rejected(let h): Self.encode(Self.rejectedCode, h, into: &bytes)
        case .bye(let h): Self.encode(Self.byeCode, h, into: &bytes)
        case .clockSync(let ck):
            bytes.appendBigEndian(Self.clockSyncCode)
            bytes.appendBigEndian(ck.ssrc)
            bytes.append(contentsOf: [ck.count, 0, 0, 0])
            bytes.appendBigEndian(ck.timestamps.0)
            bytes.appendBigEndian(ck.timestamps.1)
            bytes.appendBigEndian(ck.timestamps.2)
        case .receiverFeedback(let ssrc, let sequence):
            bytes.appendBigEndian(Self.receiverFeedbackCode)
            bytes.appendBigEndian(ssrc)
            bytes.appendBigEndian(sequence)
            bytes.appendBigEndian(UInt16(0))
        case .ignored(let command):
            bytes.appendBigEndian(command)
        }
    }

    private static func encode(_ code: UInt16, _ h: Handshake, into bytes: inout [UInt8]) {
        bytes.appendBigEndian(code)
        bytes.appendBigEndian(h.version)
        bytes.appendBigEndian(h.token)
        bytes.appendBigEndian(h.ssrc)
        if let name = h.name, !name.isEmpty {
            bytes.append(contentsOf: name.utf8)
            bytes.append(0)
        }
    }
}

/// Why a session packet was dropped.
public enum SessionPacketError: Error, Equatable, Sendable, CustomStringConvertible {
    /// It does not start with 0xFFFF followed by a command.
    case badSignature
    /// It ends before the fields of `command`.
    case truncated(command: UInt16)
    /// A CK count other than 0, 1 or 2.
    case badClockSyncCount(UInt8)
    /// The session name is not valid UTF-8.
    case nameNotUTF8

    public var description: String {
        switch self {
        case .badSignature: "not an AppleMIDI session packet (no 0xFFFF signature)"
        case .truncated(let command): "\(SessionPacket.commandName(command)) packet is truncated"
        case .badClockSyncCount(let count): "CK with count \(count) (only 0, 1 and 2 exist)"
        case .nameNotUTF8: "session name is not valid UTF-8"
        }
    }
}

extension SessionPacket {
    /// The two ASCII letters of `command` (IN, OK, CK...), or its hex value.
    static func commandName(_ command: UInt16) -> String {
        let high = UInt8(command >> 8), low = UInt8(command & 0xFF)
        if (0x41...0x5A).contains(high), (0x41...0x5A).contains(low) {
            return String(decoding: [high, low], as: UTF8.self)
        }
        return "0x" + String(command, radix: 16)
    }
}
