/// A JSON value: what the control socket and the status page read and write, without Foundation. Numbers keep
/// their text, so that every integer width and `Double` reads back exactly what was written.
public enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONValue])
    /// Members in the order read or written (the writer sorts them by key).
    case object([(key: String, value: JSONValue)])

    public static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): true
        case let (.bool(x), .bool(y)): x == y
        case let (.number(x), .number(y)): x == y
        case let (.string(x), .string(y)): x == y
        case let (.array(x), .array(y)): x == y
        case let (.object(x), .object(y)): x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: false
        }
    }

    /// The value of the member `key` of an object (the last, if written more than once); nil for anything else.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.last { $0.key == key }?.value
    }

    public var string: String? { if case .string(let text) = self { text } else { nil } }
    public var bool: Bool? { if case .bool(let value) = self { value } else { nil } }
    public var array: [JSONValue]? { if case .array(let items) = self { items } else { nil } }
    /// A number that is finite as a `Double`.
    public var double: Double? { if case .number(let text) = self, let value = Double(text), value.isFinite { value } else { nil } }
    /// A number that is a whole `Int` (`2`, `2.0`, `2e0`), as Foundation reads one.
    public var int: Int? {
        guard case .number(let text) = self else { return nil }
        if let value = Int(text) { return value }
        guard let value = Double(text), value.rounded() == value, abs(value) < 0x1p62 else { return nil }
        return Int(value)
    }
}

/// Why bytes are not one JSON value.
public struct JSONSyntaxError: Error, CustomStringConvertible, Sendable {
    /// Where, as a byte offset.
    public var offset: Int
    public var problem: String
    public var description: String { "\(problem) at byte \(offset)" }
}

extension JSONValue {
    /// The deepest nesting read: far more than the control socket's requests or a status ever need, and a bound on
    /// the reader's recursion for bytes from anyone.
    public static let maximumDepth = 64

    /// The one JSON value of `bytes` (UTF-8, white space around it allowed).
    public init(parsing bytes: some Collection<UInt8>) throws(JSONSyntaxError) {
        var reader = Reader(bytes: Array(bytes))
        self = try reader.value(depth: 0)
        reader.skipSpace()
        guard reader.position == reader.bytes.count else { throw reader.error("text after the value") }
    }

    /// The value as JSON text: object members sorted by key, `/` unescaped; `pretty`: one member or item a line,
    /// indented by two spaces, `"key" : value` (as Foundation's encoder writes it).
    public func text(pretty: Bool = false) -> String {
        var out = ""
        write(into: &out, pretty: pretty, indent: "")
        return out
    }

    private func write(into out: inout String, pretty: Bool, indent: String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .number(let text): out += text
        case .string(let text): Self.write(quoted: text, into: &out)
        case .array(let items):
            guard !items.isEmpty else { out += "[]"; return }
            out += "["
            let inner = indent + "  "
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                if pretty { out += "\n" + inner }
                item.write(into: &out, pretty: pretty, indent: inner)
            }
            out += pretty ? "\n" + indent + "]" : "]"
        case .object(let members):
            guard !members.isEmpty else { out += "{}"; return }
            out += "{"
            let inner = indent + "  "
            for (index, member) in members.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { out += "," }
                if pretty { out += "\n" + inner }
                Self.write(quoted: member.key, into: &out)
                out += pretty ? " : " : ":"
                member.value.write(into: &out, pretty: pretty, indent: inner)
            }
            out += pretty ? "\n" + indent + "}" : "}"
        }
    }

    private static func write(quoted text: String, into out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

/// A recursive-descent reader of RFC 8259 JSON.
private struct Reader {
    let bytes: [UInt8]
    var position = 0

    func error(_ problem: String) -> JSONSyntaxError { JSONSyntaxError(offset: position, problem: problem) }

    mutating func skipSpace() {
        while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
    }

    mutating func value(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard depth < JSONValue.maximumDepth else { throw error("nested more than \(JSONValue.maximumDepth) deep") }
        skipSpace()
        guard position < bytes.count else { throw error("a value is missing") }
        switch bytes[position] {
        case UInt8(ascii: "{"):
            position += 1
            var members: [(key: String, value: JSONValue)] = []
            skipSpace()
            if take(UInt8(ascii: "}")) { return .object(members) }
            repeat {
                skipSpace()
                guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw error("a key is missing") }
                let key = try string()
                skipSpace()
                guard take(UInt8(ascii: ":")) else { throw error("':' is missing") }
                members.append((key, try value(depth: depth + 1)))
                skipSpace()
            } while take(UInt8(ascii: ","))
            guard take(UInt8(ascii: "}")) else { throw error("'}' is missing") }
            return .object(members)
        case UInt8(ascii: "["):
            position += 1
            var items: [JSONValue] = []
            skipSpace()
            if take(UInt8(ascii: "]")) { return .array(items) }
            repeat {
                items.append(try value(depth: depth + 1))
                skipSpace()
            } while take(UInt8(ascii: ","))
            guard take(UInt8(ascii: "]")) else { throw error("']' is missing") }
            return .array(items)
        case UInt8(ascii: "\""):
            return .string(try string())
        case UInt8(ascii: "t"): return try word("true", .bool(true))
        case UInt8(ascii: "f"): return try word("false", .bool(false))
        case UInt8(ascii: "n"): return try word("null", .null)
        default:
            return .number(try number())
        }
    }

    private mutating func take(_ byte: UInt8) -> Bool {
        guard position < bytes.count, bytes[position] == byte else { return false }
        position += 1
        return true
    }

    private mutating func word(_ text: String, _ value: JSONValue) throws(JSONSyntaxError) -> JSONValue {
        for byte in text.utf8 where !take(byte) { throw error("not a JSON value") }
        return value
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, as its text.
    private mutating func number() throws(JSONSyntaxError) -> String {
        let start = position
        func digits(_ reader: inout Reader) -> Int {
            let first = reader.position
            while reader.position < reader.bytes.count, (0x30...0x39).contains(reader.bytes[reader.position]) { reader.position += 1 }
            return reader.position - first
        }
        _ = take(UInt8(ascii: "-"))
        let leadingZero = position < bytes.count && bytes[position] == UInt8(ascii: "0")
        let whole = digits(&self)
        guard whole > 0, !(leadingZero && whole > 1) else { throw error("not a JSON value") }
        if take(UInt8(ascii: ".")), digits(&self) == 0 { throw error("a digit is missing after '.'") }
        if take(UInt8(ascii: "e")) || take(UInt8(ascii: "E")) {
            _ = take(UInt8(ascii: "+")) || take(UInt8(ascii: "-"))
            guard digits(&self) > 0 else { throw error("a digit is missing in the exponent") }
        }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    /// A string from its opening quote: escapes decoded (a lone surrogate becomes U+FFFD), bytes checked as UTF-8.
    private mutating func string() throws(JSONSyntaxError) -> String {
        position += 1
        var utf8: [UInt8] = []
        var scalars = String.UnicodeScalarView()
        func flush() throws(JSONSyntaxError) {
            guard !utf8.isEmpty else { return }
            guard let text = String(validating: utf8, as: UTF8.self) else { throw error("not UTF-8 text") }
            scalars.append(contentsOf: text.unicodeScalars)
            utf8.removeAll(keepingCapacity: true)
        }
        while true {
            guard position < bytes.count else { throw error("'\"' is missing") }
            let byte = bytes[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                try flush()
                return String(scalars)
            case UInt8(ascii: "\\"):
                try flush()
                guard position < bytes.count else { throw error("an escape is cut short") }
                let escape = bytes[position]
                position += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(Unicode.Scalar(escape))
                case UInt8(ascii: "b"): scalars.append("\u{8}")
                case UInt8(ascii: "f"): scalars.append("\u{C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xD800..<0xDC00).contains(code), bytes[position...].starts(with: Array("\\u".utf8)) {
                        let resume = position
                        position += 2
                        let low = try hex4()
                        if (0xDC00..<0xE000).contains(low) {
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        } else {
                            position = resume
                        }
                    }
                    scalars.append(Unicode.Scalar(code) ?? "\u{FFFD}")
                default: throw error("an unknown escape")
                }
            case 0..<0x20:
                throw error("a control character in a string")
            default:
                utf8.append(byte)
            }
        }
    }

    private mutating func hex4() throws(JSONSyntaxError) -> UInt32 {
        var code: UInt32 = 0
        for _ in 0..<4 {
            guard position < bytes.count, let digit = Self.hexDigit(bytes[position]) else {
                throw error("'\\u' needs four hex digits")
            }
            code = code << 4 | digit
            position += 1
        }
        return code
    }

    private static func hexDigit(_ byte: UInt8) -> UInt32? {
        switch byte {
        case 0x30...0x39: UInt32(byte - 0x30)
        case 0x41...0x46: UInt32(byte - 0x41 + 10)
        case 0x61...0x66: UInt32(byte - 0x61 + 10)
        default: nil
        }
    }
}
