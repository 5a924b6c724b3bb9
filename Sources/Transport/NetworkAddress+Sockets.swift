#if canImport(Glibc)
import Glibc
#endif

extension NetworkAddress {
    /// The address in a socket API sockaddr (IPv4-mapped IPv6 becomes IPv4); nil for other families.
    public init?(socketAddress storage: sockaddr_storage) {
        var storage = storage
        switch Int32(storage.ss_family) {
        case AF_INET:
            let v4 = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee } }
            let host = UInt32(bigEndian: v4.sin_addr.s_addr)
            self.init(ipv4: UInt8(host >> 24), UInt8(host >> 16 & 0xFF), UInt8(host >> 8 & 0xFF), UInt8(host & 0xFF),
                      port: UInt16(bigEndian: v4.sin_port))
        case AF_INET6:
            let v6 = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee } }
            var bytes = v6.sin6_addr.__in6_u.__u6_addr8
            let (high, low) = withUnsafeBytes(of: &bytes) { raw in
                (raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self).bigEndian,
                 raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self).bigEndian)
            }
            let port = UInt16(bigEndian: v6.sin6_port)
            if high == 0, low >> 32 == 0xFFFF { // ::ffff:a.b.c.d
                self.init(ipv4: UInt8(low >> 24 & 0xFF), UInt8(low >> 16 & 0xFF), UInt8(low >> 8 & 0xFF), UInt8(low & 0xFF), port: port)
            } else {
                self.init(ipv6: high, low, port: port, scopeID: v6.sin6_scope_id)
            }
        default:
            return nil
        }
    }

    /// The addresses of this machine's network interfaces, loopback included (port 0); none if they cannot be read.
    public static func interfaceAddresses() -> [NetworkAddress] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var found: [NetworkAddress] = []
        var entry = list
        while let current = entry {
            if let address = current.pointee.ifa_addr {
                let size = switch Int32(address.pointee.sa_family) {
                case AF_INET: MemoryLayout<sockaddr_in>.size
                case AF_INET6: MemoryLayout<sockaddr_in6>.size
                default: 0
                }
                var storage = sockaddr_storage()
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: address, count: size)) }
                if size > 0, let local = NetworkAddress(socketAddress: storage) { found.append(local) }
            }
            entry = current.pointee.ifa_next
        }
        return found
    }

    /// A numeric address, or the first address `host` resolves to (IPv4 preferred), at `port`.
    public static func resolve(_ host: String, port: UInt16) throws(HostResolutionError) -> NetworkAddress {
        if let numeric = NetworkAddress(numeric: host, port: port) { return numeric }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0 else { throw HostResolutionError(host: host, reason: String(cString: gai_strerror(status))) }
        defer { freeaddrinfo(list) }
        var found: [NetworkAddress] = []
        var entry = list
        while let current = entry {
            if let address = current.pointee.ai_addr {
                var storage = sockaddr_storage()
                withUnsafeMutableBytes(of: &storage) { raw in
                    raw.copyMemory(from: UnsafeRawBufferPointer(start: address, count: Int(current.pointee.ai_addrlen)))
                }
                if let resolved = NetworkAddress(socketAddress: storage) { found.append(resolved.with(port: port)) }
            }
            entry = current.pointee.ai_next
        }
        guard let best = found.first(where: { $0.family == .ipv4 }) ?? found.first else {
            throw HostResolutionError(host: host, reason: "no IPv4 or IPv6 address")
        }
        return best
    }

    /// The sockaddr for sending to this address from a socket of `family` (IPv4 through a
    /// dual-stack IPv6 socket becomes ::ffff:a.b.c.d), and its length.
    func socketAddress(family: Int32) -> (sockaddr_storage, socklen_t) {
        var storage = sockaddr_storage()
        if family == AF_INET {
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                    v4.pointee.sin_family = sa_family_t(AF_INET)
                    v4.pointee.sin_port = port.bigEndian
                    v4.pointee.sin_addr.s_addr = UInt32(truncatingIfNeeded: bytes.0 >> 32).bigEndian
                }
            }
            return (storage, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
        let (high, low) = self.family == .ipv4 ? (UInt64(0), UInt64(0xFFFF) << 32 | bytes.0 >> 32) : bytes
        withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                v6.pointee.sin6_family = sa_family_t(AF_INET6)
                v6.pointee.sin6_port = port.bigEndian
                v6.pointee.sin6_scope_id = scopeID
                withUnsafeMutableBytes(of: &v6.pointee.sin6_addr) { raw in
                    raw.storeBytes(of: high.bigEndian, toByteOffset: 0, as: UInt64.self)
                    raw.storeBytes(of: low.bigEndian, toByteOffset: 8, as: UInt64.self)
                }
            }
        }
        return (storage, socklen_t(MemoryLayout<sockaddr_in6>.size))
    }
}
