#if canImport(Glibc)
import Glibc
#endif
import MIDI
import RouteFile
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
        configuration.maxPeers = declaration.maxPeers
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
                do {
                    addresses.append((try NetworkAddress.resolve(host, port: port), label))
                } catch {
                    problems.append("\(declaration.location): \(error); this invitation is skipped")
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
            && a.configuration.maxPeers == b.configuration.maxPeers
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
}
