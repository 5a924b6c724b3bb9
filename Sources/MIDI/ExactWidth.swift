/// Exact-width unsigned integers for MIDI fields: a value out of range cannot be built.
///
/// `init?(_:)` fails on out-of-range input (use it on anything from outside);
/// `init(masking:)` keeps the low bits (use it where the bits are known to be data bytes).

/// A 4-bit value (0...15): a MIDI channel number as it is on the wire.
public struct UInt4: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The value, always 0...15.
    public let value: UInt8
    /// The largest value, 15.
    public static let max = UInt4(masking: 15)

    /// A 4-bit value, or nil if `raw` is above 15.
    @inlinable public init?<T: BinaryInteger>(_ raw: T) {
        guard raw >= 0, raw <= 15 else { return nil }
        value = UInt8(raw)
    }
    /// The low 4 bits of `raw`.
    @inlinable public init(masking raw: UInt8) { value = raw & 0x0F }

    @inlinable public static func < (a: UInt4, b: UInt4) -> Bool { a.value < b.value }
    public var description: String { String(value) }
}

/// A 7-bit value (0...127): a MIDI data byte (note, velocity, controller, value, program).
public struct UInt7: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The value, always 0...127.
    public let value: UInt8
    /// The largest value, 127.
    public static let max = UInt7(masking: 127)
    /// Zero.
    public static let zero = UInt7(masking: 0)

    /// A 7-bit value, or nil if `raw` is above 127.
    @inlinable public init?<T: BinaryInteger>(_ raw: T) {
        guard raw >= 0, raw <= 127 else { return nil }
        value = UInt8(raw)
    }
    /// The low 7 bits of `raw`.
    @inlinable public init(masking raw: UInt8) { value = raw & 0x7F }
    /// `raw` clamped into 0...127.
    @inlinable public init<T: BinaryInteger>(clamping raw: T) {
        value = raw < 0 ? 0 : (raw > 127 ? 127 : UInt8(raw))
    }

    @inlinable public static func < (a: UInt7, b: UInt7) -> Bool { a.value < b.value }
    public var description: String { String(value) }
}

/// A 14-bit value (0...16383): pitch bend and song position; 8192 is pitch-bend centre.
public struct UInt14: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The value, always 0...16383.
    public let value: UInt16
    /// The largest value, 16383.
    public static let max = UInt14(masking: 0x3FFF)
    /// Pitch-bend centre, 8192.
    public static let center = UInt14(masking: 0x2000)

    /// A 14-bit value, or nil if `raw` is above 16383.
    @inlinable public init?<T: BinaryInteger>(_ raw: T) {
        guard raw >= 0, raw <= 0x3FFF else { return nil }
        value = UInt16(raw)
    }
    /// The low 14 bits of `raw`.
    @inlinable public init(masking raw: UInt16) { value = raw & 0x3FFF }
    /// `raw` clamped into 0...16383.
    @inlinable public init<T: BinaryInteger>(clamping raw: T) {
        value = raw < 0 ? 0 : (raw > 0x3FFF ? 0x3FFF : UInt16(raw))
    }
    /// The value made of two 7-bit data bytes, least significant first (the wire order).
    @inlinable public init(lsb: UInt7, msb: UInt7) {
        value = UInt16(msb.value) << 7 | UInt16(lsb.value)
    }
    /// The low 7 bits.
    @inlinable public var lsb: UInt7 { UInt7(masking: UInt8(truncatingIfNeeded: value)) }
    /// The high 7 bits.
    @inlinable public var msb: UInt7 { UInt7(masking: UInt8(truncatingIfNeeded: value >> 7)) }

    @inlinable public static func < (a: UInt14, b: UInt14) -> Bool { a.value < b.value }
    public var description: String { String(value) }
}
