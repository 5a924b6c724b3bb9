#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import MIDI

/// A reader of one part of a route file: a top-level section, an endpoint's kind, a route's stages or its `osc:`
/// block. What it finds stays with it until its caller takes it (`report(into:_:)`), so the file's mistakes and notes
/// stay in the order found.
protocol RouteFileReader: YAMLDocument {
    /// What is worth saying that is not a mistake, in the order found.
    var notes: [RouteFileNote] { get set }
}

extension RouteFileReader {
    /// Adds the mistakes and notes this reader found to `errors` and `notes` (its caller's), and forgets them.
    mutating func report(into errors: inout [RouteFileError], _ notes: inout [RouteFileNote]) {
        errors += self.errors
        notes += self.notes
        self.errors = []
        self.notes = []
    }

    // MARK: - Values more than one section writes

    /// The names in a `from:` or `to:` value: one name or a list of names.
    mutating func readReferences(_ node: Node, key: Node, role: EndpointReference.Role) -> [EndpointReference] {
        let side = role == .source ? "from" : "to"
        let items = node.sequence.map(Array.init) ?? [node]
        if items.isEmpty || Self.isEmpty(node) {
            let what = role == .source ? "a route from nowhere" : "a route to nowhere"
            fail(Self.isEmpty(node) ? key : node, "\(what): '\(side)' needs an endpoint name or a list of names")
            return []
        }
        var references: [EndpointReference] = []
        for item in items {
            guard let name = item.scalar?.string, !name.isEmpty else {
                fail(item, "'\(side)' lists endpoint names, not \(Self.describe(item))")
                continue
            }
            references.append(EndpointReference(name: name, location: location(item), role: role))
        }
        return references
    }

    /// A name written at `node` (under `key`): text of 1 to `maximumBytes` UTF-8 bytes. The messages say
    /// `notText` when it is not text, `what` is empty and `ifEmpty`, or `what` is too long for `limits`.
    mutating func readBoundedName(_ node: Node, key: Node, maximumBytes: Int, what: String, limits: String,
                                  notText: String, ifEmpty: String) -> String? {
        guard let name = node.scalar?.string else {
            fail(node, "\(notText), not \(Self.describe(node))")
            return nil
        }
        guard !name.isEmpty, !Self.isEmpty(node) else {
            fail(Self.isEmpty(node) ? key : node, "\(what) is empty; \(ifEmpty)")
            return nil
        }
        let bytes = name.utf8.count
        guard bytes <= maximumBytes else {
            fail(node, "\(what) is \(bytes) bytes long; \(limits) are at most \(maximumBytes) bytes (UTF-8), so shorten it")
            return nil
        }
        return name
    }

    /// One channel written 1-16, as a wire channel 0-15.
    mutating func readChannel(_ node: Node) -> UInt4? {
        guard let number = readInteger(node, what: "a channel", range: "1-16") else { return nil }
        guard (1...16).contains(number), let channel = UInt4(number - 1) else {
            fail(node, "channel \(number) does not exist; channels are 1-16")
            return nil
        }
        return channel
    }

    /// A controller number 0-127.
    mutating func readController(_ node: Node) -> UInt7? {
        guard let number = readInteger(node, what: "a controller number", range: "0-127") else { return nil }
        guard let controller = UInt7(number) else {
            fail(node, "controller \(number) does not exist; controllers are 0-127")
            return nil
        }
        return controller
    }

    /// A note written as a number 0-127 or a name (C4 = 60).
    static func note(_ text: String) -> UInt7? {
        if let number = Int(text) { return UInt7(number) }
        return NoteName.parse(text)
    }

    /// A curve exponent: a finite number above 0 (1 is straight).
    mutating func readCurveExponent(_ node: Node) -> Double? {
        guard let number = node.scalar.flatMap({ Double($0.string) }), number.isFinite, number > 0 else {
            fail(node, "'curve' is a number above 0 (1 is straight, 2 bends slowly up, 0.5 quickly up), "
                 + "not '\(node.scalar?.string ?? Self.describe(node))'")
            return nil
        }
        return number
    }

    /// A whole number in `range`; `what` names the key and `expected` says what it holds, for messages.
    mutating func readWholeNumber(_ node: Node, in range: ClosedRange<Int>, what: String, expected: String) -> Int? {
        guard let number = readInteger(node, what: what, range: expected) else { return nil }
        guard range.contains(number) else {
            fail(node, "\(number) is out of range; \(what) is \(expected)")
            return nil
        }
        return number
    }

    /// A duration in seconds: a number (`0.08`) or a text with its unit (`"80ms"`, `"1.5s"`); above 0, or also 0
    /// if `allowsZero`.
    mutating func readDuration(_ node: Node, key: String, allowsZero: Bool) -> Double? {
        let text = (node.scalar?.string ?? "").trimmingSpaces
        let seconds: Double? = if text.hasSuffix("ms") {
            Double(text.dropLast(2).trimmingSpaces).map { $0 / 1000 }
        } else if text.hasSuffix("s") {
            Double(text.dropLast().trimmingSpaces)
        } else {
            Double(text)
        }
        let least = allowsZero ? "0 or more" : "above 0"
        // An hour bounds what a mapper may keep moving toward (smoothing, release) and what a controller may be.
        guard let seconds, seconds.isFinite, allowsZero ? seconds >= 0 : seconds > 0, seconds <= 3600 else {
            fail(node, "\(Self.describe(node)) is not a duration \(least), up to an hour; '\(key)' is "
                 + "seconds such as 0.08, or a text such as \"80ms\" or \"1.5s\"")
            return nil
        }
        return seconds
    }

    /// True if `text` is a numeric IPv4 address (dotted quad) or IPv6 address.
    static func isNumericAddress(_ text: String) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16)
        return text.withCString { address in
            inet_pton(AF_INET, address, &buffer) == 1 || inet_pton(AF_INET6, address, &buffer) == 1
        }
    }

    /// True if `text` is a DNS host name: dot-separated labels of letters, digits and inner hyphens.
    static func isHostName(_ text: String) -> Bool {
        let name = text.hasSuffix(".") ? String(text.dropLast()) : text
        guard !name.isEmpty, name.utf8.count <= 253 else { return false }
        return name.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            !label.isEmpty && label.utf8.count <= 63 && label.first != "-" && label.last != "-"
                && label.unicodeScalars.allSatisfy(Self.isLabelScalar)
        }
    }

    /// True for the ASCII letters, digits, '-' and '_' a host name label may hold.
    private static func isLabelScalar(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9", "-", "_": true
        default: false
        }
    }
}
