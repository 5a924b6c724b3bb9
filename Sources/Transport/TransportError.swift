#if canImport(Glibc)
import Glibc
#endif

/// A socket call that failed, with errno, what was attempted and what might help.
public struct TransportError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What was attempted, e.g. "bind UDP port 5004".
    public var operation: String
    /// errno after the failed call.
    public var code: Int32
    /// What the user can do about it, e.g. "choose another 'port:'"; nil if nothing useful.
    public var hint: String?

    /// The failure of `operation` with errno `code`.
    public init(operation: String, code: Int32, hint: String? = nil) {
        self.operation = operation
        self.code = code
        self.hint = hint
    }

    /// `cannot OPERATION: REASON (HINT)`, e.g. "cannot bind UDP port 5004: Address already in use".
    public var description: String {
        "cannot \(operation): \(String(cString: strerror(code)))" + (hint.map { " (\($0))" } ?? "")
    }
}

/// A host name that did not resolve to an IPv4 or IPv6 address.
public struct HostResolutionError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The name looked up.
    public var host: String
    /// getaddrinfo's reason (gai_strerror), or why no address fit.
    public var reason: String

    /// `host` could not be resolved because of `reason`.
    public init(host: String, reason: String) {
        self.host = host
        self.reason = reason
    }

    /// `cannot resolve host 'HOST': REASON`.
    public var description: String { "cannot resolve host '\(host)': \(reason)" }
}
