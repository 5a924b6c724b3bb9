#if canImport(Glibc)
import Glibc
#endif

/// A block of addresses in CIDR form (`192.168.1.0/24`, `fd00::/8`), or one address (`10.0.0.2`, `::1`).
///
/// Addresses are compared as 128-bit IPv6 addresses, IPv4 as its IPv4-mapped form (`::ffff:a.b.c.d`): an IPv4
/// block matches an IPv4 sender however a socket reports it (on an IPv6 socket, `::ffff:10.0.0.2`), and
/// `::/0` is every address. A zone (`%eth0`) cannot be written: the prefix matches on every interface.
public struct NetworkPrefix: Hashable, Sendable, CustomStringConvertible {
    /// Why a text is not a prefix.
    public enum ParseError: Error, Equatable, Sendable {
        /// The part before any `/` is not a numeric IPv4 or IPv6 address.
        case malformedAddress(String)
        /// The part after `/` is not a decimal number.
        case malformedLength(String)
        /// The length is beyond the family's bits (32 for IPv4, 128 for IPv6).
        case lengthOutOfRange(Int, maximum: Int)
        /// Bits beyond the length are set (`192.168.1.5/24`): it is unclear whether the network or the one host
        /// is meant. Carries the network the text would be with them cleared.
        case hostBitsSet(network: NetworkPrefix)
    }

    /// The address's high 64 bits (network order), IPv4 in IPv4-mapped form, bits beyond `length` clear.
    public let high: UInt64
    /// The address's low 64 bits.
    public let low: UInt64
    /// How many leading bits of the 128 must match.
    public let length: Int
    /// True if written as IPv4: then `length` counts the 96 bits of the `::ffff:0:0/96` prefix too.
    public let isIPv4: Bool

    /// Parses `ADDRESS` or `ADDRESS/LENGTH`, IPv4 or IPv6.
    public init(parsing text: String) throws(ParseError) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        let address = String(parts[0])
        guard let (high, low, isIPv4) = Self.parseAddress(address) else { throw .malformedAddress(address) }
        let maximum = isIPv4 ? 32 : 128
        var written = maximum
        if parts.count == 2 {
            let lengthText = parts[1]
            guard !lengthText.isEmpty, lengthText.utf8.count <= 3, lengthText.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                  let value = Int(lengthText) else {
                throw .malformedLength(String(lengthText))
            }
            guard value <= maximum else { throw .lengthOutOfRange(value, maximum: maximum) }
            written = value
        }
        self.init(high: high, low: low, length: written + (isIPv4 ? 96 : 0), isIPv4: isIPv4)
        guard self.high == high, self.low == low else { throw .hostBitsSet(network: self) }
    }

    /// The prefix of `length` bits (of 128) at `high`, `low`; bits beyond `length` are cleared.
    private init(high: UInt64, low: UInt64, length: Int, isIPv4: Bool) {
        let (maskHigh, maskLow) = Self.mask(length)
        self.high = high & maskHigh
        self.low = low & maskLow
        self.length = length
        self.isIPv4 = isIPv4
    }

    /// True if `address` (its host; the port does not matter) lies in the block.
    public func contains(_ address: NetworkAddress) -> Bool {
        let (addressHigh, addressLow) = Self.mapped(address)
        let (maskHigh, maskLow) = Self.mask(length)
        return addressHigh & maskHigh == high && addressLow & maskLow == low
    }

    /// The prefix as written in CIDR form: `10.0.0.0/8`, `fe80::/10`, `::1/128`.
    public var description: String {
        if isIPv4 {
            let address = NetworkAddress(ipv4: UInt8(truncatingIfNeeded: low >> 24), UInt8(truncatingIfNeeded: low >> 16),
                                         UInt8(truncatingIfNeeded: low >> 8), UInt8(truncatingIfNeeded: low), port: 0)
            return "\(address.host)/\(length - 96)"
        }
        return "\(NetworkAddress(ipv6: high, low, port: 0).host)/\(length)"
    }

    /// Loopback, link-local and private networks (RFC 1122, 1918, 3927, 4193, 4291): 127.0.0.0/8, 10.0.0.0/8,
    /// 172.16.0.0/12, 192.168.0.0/16, 169.254.0.0/16, ::1, fc00::/7 and fe80::/10.
    public static let localNetworks: [NetworkPrefix] = [
        ipv4(127, 0, 0, 0, length: 8), ipv4(10, 0, 0, 0, length: 8), ipv4(172, 16, 0, 0, length: 12),
        ipv4(192, 168, 0, 0, length: 16), ipv4(169, 254, 0, 0, length: 16),
        NetworkPrefix(high: 0, low: 1, length: 128, isIPv4: false),
        NetworkPrefix(high: 0xFC00 << 48, low: 0, length: 7, isIPv4: false),
        NetworkPrefix(high: 0xFE80 << 48, low: 0, length: 10, isIPv4: false),
    ]

    /// The IPv4 block `a.b.c.d/length`.
    private static func ipv4(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8, length: Int) -> NetworkPrefix {
        let address = NetworkAddress(ipv4: a, b, c, d, port: 0)
        let (high, low) = mapped(address)
        return NetworkPrefix(high: high, low: low, length: 96 + length, isIPv4: true)
    }

    /// The 128-bit form of `address`: IPv4 as `::ffff:a.b.c.d`.
    private static func mapped(_ address: NetworkAddress) -> (UInt64, UInt64) {
        switch address.family {
        case .ipv4: (0, 0xFFFF << 32 | address.bytes.0 >> 32)
        case .ipv6: address.bytes
        }
    }

    /// The masks keeping the first `length` of 128 bits.
    private static func mask(_ length: Int) -> (UInt64, UInt64) {
        func bits(_ count: Int) -> UInt64 { count <= 0 ? 0 : count >= 64 ? .max : ~(UInt64.max >> UInt64(count)) }
        return (bits(length), bits(length - 64))
    }

    /// A numeric IPv4 or IPv6 address (inet_pton's forms, with no zone) as 128 bits, IPv4 mapped.
    private static func parseAddress(_ text: String) -> (UInt64, UInt64, Bool)? {
        var bytes = [UInt8](repeating: 0, count: 16)
        if text.withCString({ inet_pton(AF_INET, $0, &bytes) }) == 1 {
            let v4 = UInt64(bytes[0]) << 24 | UInt64(bytes[1]) << 16 | UInt64(bytes[2]) << 8 | UInt64(bytes[3])
            return (0, 0xFFFF << 32 | v4, true)
        }
        guard text.withCString({ inet_pton(AF_INET6, $0, &bytes) }) == 1 else { return nil }
        let high = bytes[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let low = bytes[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return (high, low, false)
    }
}

/// Which senders an endpoint takes datagrams from (a route file's `accept:`).
public enum AddressAcceptance: Hashable, Sendable {
    /// Every sender.
    case anyone
    /// The senders within one of these blocks; an empty list takes no sender.
    case within([NetworkPrefix])

    /// The senders on this machine and the local networks (`NetworkPrefix.localNetworks`).
    public static let local = AddressAcceptance.within(NetworkPrefix.localNetworks)

    /// True if datagrams from `address` are taken.
    public func accepts(_ address: NetworkAddress) -> Bool {
        switch self {
        case .anyone: true
        case .within(let prefixes): prefixes.contains { $0.contains(address) }
        }
    }
}
