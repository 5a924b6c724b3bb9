/// The fixed RTP header (RFC 3550 §5.1) as RTP-MIDI uses it.
public struct RTPHeader: Equatable, Sendable {
    /// The marker bit: sent 0, accepted either way (peers differ from RFC 6295 here).
    public var marker: Bool
    /// The payload type; 97 by convention for RTP-MIDI.
    public var payloadType: UInt8
    /// The packet's sequence number (+1 per packet, wrapping).
    public var sequence: UInt16
    /// The low 32 bits of the sender's 10 kHz session clock for the first command.
    public var timestamp: UInt32
    /// The sender's synchronisation source.
    public var ssrc: UInt32

    /// The RTP-MIDI payload type used by every known implementation.
    public static let midiPayloadType: UInt8 = 97
    /// Size of the header without CSRCs or extensions.
    public static let size = 12

    /// A header with the given fields, marker 0 and payload type 97.
    public init(sequence: UInt16, timestamp: UInt32, ssrc: UInt32) {
        marker = false
        payloadType = Self.midiPayloadType
        self.sequence = sequence
        self.timestamp = timestamp
        self.ssrc = ssrc
    }

    /// Parses the header of `datagram`; returns it and the payload's range (after CSRCs,
    /// extension and without padding).
    public static func parse(_ datagram: UnsafeRawBufferPointer) throws(RTPMIDIError) -> (RTPHeader, Range<Int>) {
        var reader = ByteReader(datagram)
        guard let first = reader.u8(), let second = reader.u8(), let sequence = reader.u16(),
              let timestamp = reader.u32(), let ssrc = reader.u32() else { throw .truncatedRTPHeader }
        guard first >> 6 == 2 else { throw .wrongRTPVersion(first >> 6) }
        let csrcCount = Int(first & 0x0F)
        guard reader.skip(4 * csrcCount) else { throw .truncatedRTPHeader }
        if first & 0x10 != 0 { // header extension: 16-bit profile, 16-bit length in words
            guard reader.skip(2), let words = reader.u16(), reader.skip(4 * Int(words)) else { throw .truncatedRTPHeader }
        }
        var end = datagram.count
        if first & 0x20 != 0 { // padding: the last byte says how many bytes to drop
            let padding = Int(datagram[end - 1])
            guard padding >= 1, padding <= end - reader.offset else { throw .badPadding }
            end -= padding
        }
        var header = RTPHeader(sequence: sequence, timestamp: timestamp, ssrc: ssrc)
        header.marker = second & 0x80 != 0
        header.payloadType = second & 0x7F
        return (header, reader.offset..<end)
    }

    /// Appends the 12 header bytes (V=2, no padding, extension or CSRCs) to `bytes`.
    public func encode(into bytes: inout [UInt8]) {
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: Self.size))
        encode(into: &bytes, at: start)
    }
}
