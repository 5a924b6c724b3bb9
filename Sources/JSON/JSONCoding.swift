/// `Encodable` values as JSON (`JSONValue`), as Foundation's `JSONEncoder` writes them: a `nil` optional leaves its
/// key out, a whole `Double` is written without a fraction, a number that is not finite cannot be written.
public struct JSONWriter {
    /// What each value's `encode(to:)` finds in `encoder.userInfo`.
    public var userInfo: [CodingUserInfoKey: any Sendable]

    public init(userInfo: [CodingUserInfoKey: any Sendable] = [:]) {
        self.userInfo = userInfo
    }

    public func json(_ value: some Encodable) throws -> JSONValue {
        let slot = Slot()
        try value.encode(to: SlotEncoder(slot: slot, codingPath: [], info: userInfo))
        return slot.json
    }

    /// The value as JSON text in UTF-8 (see `JSONValue.text(pretty:)`).
    public func bytes(_ value: some Encodable, pretty: Bool = false) throws -> [UInt8] {
        Array(try json(value).text(pretty: pretty).utf8)
    }
}

/// `Decodable` values from JSON, as Foundation's `JSONDecoder` reads them: a missing key or `null` is a `nil`
/// optional; a number reads as any numeric type that holds it exactly.
public struct JSONReader {
    public init() {}

    public func value<T: Decodable>(_ type: T.Type, from json: JSONValue) throws -> T {
        try T(from: ValueDecoder(value: json, codingPath: []))
    }

    public func value<T: Decodable>(_ type: T.Type, from bytes: some Collection<UInt8>) throws -> T {
        try value(type, from: try JSONValue(parsing: bytes))
    }
}

/// What one value encoded: a single value, items or members.
private final class Slot {
    var value: JSONValue?
    var items: [Slot]?
    var members: [String: Slot]?

    var json: JSONValue {
        if let items { return .array(items.map(\.json)) }
        if let members { return .object(members.map { ($0.key, $0.value.json) }) }
        return value ?? .object([])
    }
}

private struct SlotEncoder: Encoder {
    let slot: Slot
    let codingPath: [any CodingKey]
    let info: [CodingUserInfoKey: any Sendable]
    var userInfo: [CodingUserInfoKey: Any] { info }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if slot.members == nil { slot.members = [:] }
        return KeyedEncodingContainer(KeyedSlots<Key>(encoder: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if slot.items == nil { slot.items = [] }
        return UnkeyedSlots(encoder: self)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { SingleSlot(encoder: self) }

    /// An encoder for a new slot at `key`.
    func child(_ slot: Slot, _ key: any CodingKey) -> SlotEncoder {
        SlotEncoder(slot: slot, codingPath: codingPath + [key], info: info)
    }
}

/// A list's index, or the key of a superclass's values ("super", as Foundation names it), in a coding path.
private struct IndexKey: CodingKey {
    let stringValue: String
    let intValue: Int?
    init(_ index: Int) { (stringValue, intValue) = (String(index), index) }
    init?(intValue: Int) { self.init(intValue) }
    init?(stringValue: String) { (self.stringValue, intValue) = (stringValue, nil) }
    static let superKey = IndexKey(stringValue: "super")!
}

private struct KeyedSlots<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: SlotEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }

    private func slot(_ key: some CodingKey) -> SlotEncoder {
        let slot = Slot()
        encoder.slot.members![key.stringValue] = slot
        return encoder.child(slot, key)
    }

    mutating func encodeNil(forKey key: Key) throws { slot(key).slot.value = .null }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { try value.encode(to: slot(key)) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type,
                                                        forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        slot(key).container(keyedBy: keyType)
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { slot(key).unkeyedContainer() }
    mutating func superEncoder() -> any Encoder { slot(IndexKey.superKey) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { slot(key) }
}

private struct UnkeyedSlots: UnkeyedEncodingContainer {
    let encoder: SlotEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }
    var count: Int { encoder.slot.items!.count }

    private func slot() -> SlotEncoder {
        let slot = Slot()
        let key = IndexKey(count)
        encoder.slot.items!.append(slot)
        return encoder.child(slot, key)
    }

    mutating func encodeNil() throws { slot().slot.value = .null }
    mutating func encode<T: Encodable>(_ value: T) throws { try value.encode(to: slot()) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        slot().container(keyedBy: keyType)
    }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { slot().unkeyedContainer() }
    mutating func superEncoder() -> any Encoder { slot() }
}

/// Where every value is finally written.
private struct SingleSlot: SingleValueEncodingContainer {
    let encoder: SlotEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }

    private func put(_ value: JSONValue) { encoder.slot.value = value }
    private func put<Integer: BinaryInteger>(_ value: Integer) { put(.number(String(value))) }
    /// A whole number below 2^53 without a fraction (as Foundation writes it), else Swift's shortest exact text.
    private func put<Number: BinaryFloatingPoint & LosslessStringConvertible>(_ value: Number) throws {
        guard value.isFinite else {
            throw EncodingError.invalidValue(value, EncodingError.Context(codingPath: codingPath,
                                                                          debugDescription: "\(value) is not a JSON number"))
        }
        put(.number(value.rounded() == value && abs(value) < 0x1p53 ? String(Int64(value)) : value.description))
    }

    mutating func encodeNil() throws { put(.null) }
    mutating func encode<T: Encodable>(_ value: T) throws { try value.encode(to: encoder) }
    mutating func encode(_ value: Bool) throws { put(.bool(value)) }
    mutating func encode(_ value: String) throws { put(.string(value)) }
    mutating func encode(_ value: Double) throws { try put(value) }
    mutating func encode(_ value: Float) throws { try put(value) }
    mutating func encode(_ value: Int) throws { put(value) }
    mutating func encode(_ value: Int8) throws { put(value) }
    mutating func encode(_ value: Int16) throws { put(value) }
    mutating func encode(_ value: Int32) throws { put(value) }
    mutating func encode(_ value: Int64) throws { put(value) }
    mutating func encode(_ value: UInt) throws { put(value) }
    mutating func encode(_ value: UInt8) throws { put(value) }
    mutating func encode(_ value: UInt16) throws { put(value) }
    mutating func encode(_ value: UInt32) throws { put(value) }
    mutating func encode(_ value: UInt64) throws { put(value) }
}

private struct ValueDecoder: Decoder {
    let value: JSONValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func mismatch(_ type: Any.Type) -> DecodingError {
        .typeMismatch(type, DecodingError.Context(codingPath: codingPath, debugDescription: "not a \(type): \(value.text())"))
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else { throw mismatch([String: Any].self) }
        var byKey: [String: JSONValue] = [:]
        for member in members { byKey[member.key] = member.value }
        return KeyedDecodingContainer(KeyedValues<Key>(decoder: self, members: byKey))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let items) = value else { throw mismatch([Any].self) }
        return UnkeyedValues(decoder: self, items: items)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { SingleValue(decoder: self) }

    func child(_ value: JSONValue, _ key: any CodingKey) -> ValueDecoder {
        ValueDecoder(value: value, codingPath: codingPath + [key])
    }
}

private struct KeyedValues<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: ValueDecoder
    let members: [String: JSONValue]
    var codingPath: [any CodingKey] { decoder.codingPath }
    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    private func child(_ key: some CodingKey) throws -> ValueDecoder {
        guard let value = members[key.stringValue] else {
            throw DecodingError.keyNotFound(key, DecodingError.Context(codingPath: codingPath, debugDescription: "no '\(key.stringValue)'"))
        }
        return decoder.child(value, key)
    }

    func decodeNil(forKey key: Key) throws -> Bool { try child(key).value == .null }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try T(from: child(key)) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type,
                                               forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try child(key).container(keyedBy: type)
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { try child(key).unkeyedContainer() }
    func superDecoder() throws -> any Decoder { try child(IndexKey.superKey) }
    func superDecoder(forKey key: Key) throws -> any Decoder { try child(key) }
}

private struct UnkeyedValues: UnkeyedDecodingContainer {
    let decoder: ValueDecoder
    let items: [JSONValue]
    var currentIndex = 0
    var codingPath: [any CodingKey] { decoder.codingPath }
    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    private mutating func next() throws -> ValueDecoder {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(Any.self, DecodingError.Context(codingPath: codingPath, debugDescription: "the list ends"))
        }
        currentIndex += 1
        return decoder.child(items[currentIndex - 1], IndexKey(currentIndex - 1))
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, items[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try T(from: next()) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next().container(keyedBy: type)
    }
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next().unkeyedContainer() }
    mutating func superDecoder() throws -> any Decoder { try next() }
}

/// Where every value is finally read.
private struct SingleValue: SingleValueDecodingContainer {
    let decoder: ValueDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }

    private func integer<Integer: FixedWidthInteger>(_ type: Integer.Type) throws -> Integer {
        guard case .number(let text) = decoder.value else { throw decoder.mismatch(type) }
        if let value = Integer(text) { return value }
        guard let value = Double(text), let exact = Integer(exactly: value) else { throw decoder.mismatch(type) }
        return exact
    }

    private func number<Number: BinaryFloatingPoint & LosslessStringConvertible>(_ type: Number.Type) throws -> Number {
        guard case .number(let text) = decoder.value, let value = Number(text) else { throw decoder.mismatch(type) }
        return value
    }

    func decodeNil() -> Bool { decoder.value == .null }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try T(from: decoder) }
    func decode(_ type: Bool.Type) throws -> Bool {
        guard case .bool(let value) = decoder.value else { throw decoder.mismatch(type) }
        return value
    }
    func decode(_ type: String.Type) throws -> String {
        guard case .string(let value) = decoder.value else { throw decoder.mismatch(type) }
        return value
    }
    func decode(_ type: Double.Type) throws -> Double { try number(type) }
    func decode(_ type: Float.Type) throws -> Float { try number(type) }
    func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }
}
