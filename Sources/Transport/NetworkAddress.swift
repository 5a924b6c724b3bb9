/// A UDP endpoint: an IPv4 or IPv6 address and a port, stored without allocation.
public struct NetworkAddress: Hashable, Sendable, CustomStringConvertible {
    /// The address family.
    public enum Family: Hashable, Sendable { case ipv4, ipv6 }
    /// IPv4 or IPv6.
    public var family: Family
    /// The address bytes in network order: IPv4 in the first 4, IPv6 in all 16.
    public var bytes: (UInt64, UInt64)
    /// The UDP port.
    public var port: UInt16
    /// The IPv6 scope (interface index) for link-local addresses; 0 otherwise.
    public var scopeID: UInt32

    /// An IPv4 address from its four bytes.
    public init(ipv4 a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8, port: UInt16) {
        family = .ipv4
        bytes = (UInt64(a) << 56 | UInt64(b) << 48 | UInt64(c) << 40 | UInt64(d) << 32, 0)
        self.port = port
        scopeID = 0
    }

    /// An IPv6 address from its two big-endian halves.
    public init(ipv6 high: UInt64, _ low: UInt64, port: UInt16, scopeID: UInt32 = 0) {
        family = .ipv6
        bytes = (high, low)
        self.port = port
        self.scopeID = scopeID
    }

    /// Parses a numeric IPv4 (`10.0.0.2`) or IPv6 (`::1`, `fe80::1%2`) address.
    public init?(numeric text: String, port: UInt16) {
        if let v4 = Self.parseIPv4(text) {
            self.init(ipv4: v4.0, v4.1, v4.2, v4.3, port: port)
        } else if let (high, low, scope) = Self.parseIPv6(text) {
            self.init(ipv6: high, low, port: port, scopeID: scope)
        } else {
            return nil
        }
    }

    /// The same host at another port.
    public func with(port: UInt16) -> NetworkAddress {
        var copy = self
        copy.port = port
        return copy
    }

    /// True for 127.0.0.0/8 and ::1 (an IPv4-mapped address made from a sockaddr is IPv4 already).
    public var isLoopback: Bool {
        family == .ipv4 ? bytes.0 >> 56 == 127 : bytes == (0, 1)
    }

    /// True if both are the same host (ports may differ).
    public func isSameHost(as other: NetworkAddress) -> Bool {
        family == other.family && bytes == other.bytes && scopeID == other.scopeID
    }

    public static func == (a: Self, b: Self) -> Bool { a.isSameHost(as: b) && a.port == b.port }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(bytes.0)
        hasher.combine(bytes.1)
        hasher.combine(port)
    }

    /// The address as text: `10.0.0.2`, `::1` (without the port).
    public var host: String {
        switch family {
        case .ipv4:
            return (0..<4).map { String(UInt8(truncatingIfNeeded: bytes.0 >> UInt64(56 - 8 * $0))) }.joined(separator: ".")
        case .ipv6:
            let groups = (0..<8).map { i -> UInt16 in
                let half = i < 4 ? bytes.0 : bytes.1
                return UInt16(truncatingIfNeeded: half >> UInt64(48 - 16 * (i % 4)))
            }
            return Self.compressIPv6(groups) + (scopeID != 0 ? "%\(scopeID)" : "")
        }
    }

    /// `10.0.0.2:5004` or `[::1]:5004`.
    public var description: String {
        family == .ipv4 ? "\(host):\(port)" : "[\(host)]:\(port)"
    }

    private static func parseIPv4(_ text: String) -> (UInt8, UInt8, UInt8, UInt8)? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var values: [UInt8] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 3, part.allSatisfy(\.isASCII), let value = UInt8(part) else { return nil }
            values.append(value)
        }
        return (values[0], values[1], values[2], values[3])
    }

    private static func parseIPv6(_ text: String) -> (UInt64, UInt64, UInt32)? {
        var address = Substring(text)
        var scope: UInt32 = 0
        if let percent = address.firstIndex(of: "%") {
            guard let value = UInt32(address[address.index(after: percent)...]) else { return nil }
            scope = value
            address = address[..<percent]
        }
        let halves = address.split(separator: "::", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard (1...2).contains(halves.count) else { return nil }
        func groups(_ part: String) -> [UInt16]? {
            if part.isEmpty { return [] }
            var result: [UInt16] = []
            for group in part.split(separator: ":", omittingEmptySubsequences: false) {
                guard (1...4).contains(group.count), let value = UInt16(group, radix: 16) else { return nil }
                result.append(value)
            }
            return result
        }
        guard let head = groups(halves[0]) else { return nil }
        var all = head
        if halves.count == 2 {
            guard let tail = groups(halves[1]), head.count + tail.count <= 7 else { return nil }
            all += Array(repeating: 0, count: 8 - head.count - tail.count) + tail
        }
        guard all.count == 8 else { return nil }
        let high = all[0..<4].reduce(UInt64(0)) { $0 << 16 | UInt64($1) }
        let low = all[4..<8].reduce(UInt64(0)) { $0 << 16 | UInt64($1) }
        return (high, low, scope)
    }

    /// RFC 5952 text: the longest run of two or more zero groups becomes `::`.
    private static func compressIPv6(_ groups: [UInt16]) -> String {
        var bestStart = -1, bestLength = 1, index = 0
        while index < 8 {
            guard groups[index] == 0 else { index += 1; continue }
            let start = index
            while index < 8, groups[index] == 0 { index += 1 }
            if index - start > bestLength { bestStart = start; bestLength = index - start }
        }
        let text = groups.map { String($0, radix: 16) }
        guard bestStart >= 0 else { return text.joined(separator: ":") }
        return text[..<bestStart].joined(separator: ":") + "::" + text[(bestStart + bestLength)...].joined(separator: ":")
    }
}
