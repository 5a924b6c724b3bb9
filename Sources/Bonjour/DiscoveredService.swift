/// A session found on the network.
public struct DiscoveredService: Sendable, Hashable {
    /// The advertised session name, e.g. "Studio Rack".
    public var name: String
    /// The host's mDNS name without a trailing dot, e.g. "studio-pi.local".
    public var host: String
    /// The UDP/TCP port (host byte order); for AppleMIDI, the control port.
    public var port: UInt16
    /// Numeric addresses of `host`, IPv4 first ("10.77.0.1", "fe80::1%eth0": link-local IPv6
    /// carries its zone); may be empty if the host's address records did not answer in time.
    public var addresses: [String]
    /// The network interface (if_nametoindex) the service was seen on.
    public var interfaceIndex: UInt32

    /// Creates a description of a discovered service.
    public init(name: String, host: String, port: UInt16, addresses: [String], interfaceIndex: UInt32) {
        self.name = name
        self.host = host
        self.port = port
        self.addresses = addresses
        self.interfaceIndex = interfaceIndex
    }
}

/// What a BonjourBrowser reports.
public enum BrowseEvent: Sendable, Hashable {
    /// A service appeared (or came back, or changed host/port/addresses), resolved.
    case found(DiscoveredService)
    /// The last announcement of a service with this name went away.
    case lost(name: String)
}
