/// One OSC argument, by its type tag.
public enum OSCArgument: Hashable, Sendable {
    case int32(Int32)         // i
    case float(Float)         // f
    case string(String)       // s (and S, a symbol)
    case blob([UInt8])        // b
    case int64(Int64)         // h
    case double(Double)       // d
    case bool(Bool)           // T, F
    case nil_                 // N
    case impulse              // I (infinitum)
    case midi([UInt8])        // m: port id, status, data1, data2
    case char(UInt8)          // c
    case timetag(UInt64)      // t

    /// The argument's OSC type tag character.
    public var typeTag: Character {
        switch self {
        case .int32: "i"
        case .float: "f"
        case .string: "s"
        case .blob: "b"
        case .int64: "h"
        case .double: "d"
        case .bool(let value): value ? "T" : "F"
        case .nil_: "N"
        case .impulse: "I"
        case .midi: "m"
        case .char: "c"
        case .timetag: "t"
        }
    }
}

/// An OSC message: an address and its arguments.
public struct OSCMessage: Hashable, Sendable, CustomStringConvertible {
    /// The address, e.g. `/1/fader1`.
    public var address: String
    public var arguments: [OSCArgument]

    public init(_ address: String, _ arguments: [OSCArgument] = []) {
        self.address = address
        self.arguments = arguments
    }

    /// The type tags, e.g. `ff`.
    public var typeTags: String { String(arguments.map(\.typeTag)) }

    /// The size of the message encoded as an OSC packet, in bytes (what `OSCPacket.encode` writes).
    public var encodedByteCount: Int {
        func padded(_ count: Int) -> Int { (count + 3) / 4 * 4 }
        var total = padded(address.utf8.count + 1) + padded(arguments.count + 2) // ",TAGS" and its NUL
        for argument in arguments {
            switch argument {
            case .int32, .float, .midi, .char: total += 4
            case .int64, .double, .timetag: total += 8
            case .string(let text): total += padded(text.utf8.count + 1)
            case .blob(let bytes): total += 4 + padded(bytes.count)
            case .bool, .nil_, .impulse: break
            }
        }
        return total
    }

    /// `ADDRESS TAGS ARG ARG ...`, as oscdump prints it.
    public var description: String {
        let values = arguments.map { argument -> String in
            switch argument {
            case .int32(let v): String(v)
            case .float(let v): String(v)
            case .string(let v): "\"\(v)\""
            case .blob(let v): "[\(v.count) byte blob]"
            case .int64(let v): String(v)
            case .double(let v): String(v)
            case .bool(let v): v ? "T" : "F"
            case .nil_: "Nil"
            case .impulse: "Infinitum"
            case .midi(let v): "MIDI [" + v.map { String($0, radix: 16) }.joined(separator: " ") + "]"
            case .char(let v): "'\(Character(Unicode.Scalar(v)))'"
            case .timetag(let v): String(v, radix: 16)
            }
        }
        return ([address, typeTags] + values).joined(separator: " ")
    }
}
