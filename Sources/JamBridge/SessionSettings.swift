#if canImport(Glibc)
import Glibc
#endif
import MIDI
import Routing
import RTPMIDI
import Transport

/// A route file's `session:` block turned into what the RTP-MIDI session runs with.
struct SessionSettings: Equatable {
    var configuration: SessionConfiguration
    var bind: NetworkAddress?
    var port: UInt16
    var advertise: Bool
    /// `invite:` entries with a host, resolved (unresolvable ones are logged and left out).
    var addresses: [(address: NetworkAddress, label: String)]
    /// `invite:` entries naming Bonjour sessions.
    var bonjourGlobs: [NameGlob]

    /// The settings for `declaration`; `peerGlobs` are the `peer:` endpoints' globs (for
    /// `accept: listed`). Problems (unresolvable hosts) go to `problems`.
    init(_ declaration: SessionDeclaration, peerGlobs: [String], problems: inout [String]) {
        var configuration = SessionConfiguration(name: declaration.name ?? Self.defaultName())
        configuration.peerTimeout = UInt64(declaration.timeout) * 1_000_000_000
        configuration.runningStatus = declaration.runningStatus
        configuration.playout = declaration.playout.map { (NameGlob($0.glob), $0.mode == .timestamp) }
        var addresses: [(NetworkAddress, String)] = []
        var bonjourGlobs: [NameGlob] = []
        for invitation in declaration.invite {
            switch invitation {
            case .bonjour(let glob):
                bonjourGlobs.append(NameGlob(glob))
            case .address(let host, let port):
                let label = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
                if let address = Self.resolve(host, port: port) {
                    addresses.append((address, label))
                } else {
                    problems.append("\(declaration.location): cannot resolve '\(host)'; this invitation is skipped")
                }
            }
        }
        switch declaration.accept {
        case .anyone: configuration.accept = .anyone
        case .none: configuration.accept = .none
        case .names(let globs): configuration.accept = .listed(globs)
        case .listed: configuration.accept = .listed(bonjourGlobs.map(\.pattern) + peerGlobs)
        }
        self.configuration = configuration
        bind = declaration.bind.flatMap { NetworkAddress(numeric: $0, port: declaration.port) }
        port = declaration.port
        advertise = declaration.advertise
        self.addresses = addresses
        self.bonjourGlobs = bonjourGlobs
    }

    static func == (a: Self, b: Self) -> Bool {
        a.configuration.name == b.configuration.name && a.configuration.accept == b.configuration.accept
            && a.configuration.peerTimeout == b.configuration.peerTimeout
            && a.configuration.runningStatus == b.configuration.runningStatus
            && a.configuration.playout.map(\.glob) == b.configuration.playout.map(\.glob)
            && a.configuration.playout.map(\.timestamp) == b.configuration.playout.map(\.timestamp)
            && a.bind == b.bind && a.port == b.port && a.advertise == b.advertise
            && a.addresses.map(\.address) == b.addresses.map(\.address) && a.bonjourGlobs == b.bonjourGlobs
    }

    /// "jambridge on HOSTNAME".
    static func defaultName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "jambridge" }
        let host = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return host.isEmpty ? "jambridge" : "jambridge on \(host)"
    }

    /// A numeric address, or the first address `host` resolves to (IPv4 preferred).
    static func resolve(_ host: String, port: UInt16) -> NetworkAddress? {
        if let numeric = NetworkAddress(numeric: host, port: port) { return numeric }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return nil }
        defer { freeaddrinfo(list) }
        var found: [NetworkAddress] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
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
        return found.first { $0.family == .ipv4 } ?? found.first
    }
}
