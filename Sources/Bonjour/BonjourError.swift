import CDNSSD

/// dns_sd failure with the DNSServiceErrorType code and what was attempted.
public struct BonjourError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The DNSServiceErrorType code reported by the dns_sd library (e.g. -65537).
    public var code: Int32
    /// What was attempted, worded to follow "cannot", e.g. "advertise 'Studio Rack'".
    public var operation: String

    /// Creates an error for `operation` that failed with dns_sd error `code`.
    public init(code: Int32, operation: String) {
        self.code = code
        self.operation = operation
    }

    /// A sentence a musician can act on, e.g. "cannot advertise 'Studio Rack': the avahi daemon is
    /// not running (dns_sd error -65537); start it with: sudo systemctl enable --now avahi-daemon".
    public var description: String {
        var text = "cannot \(operation): \(Self.explanation(of: code)) (dns_sd error \(code))"
        if let hint = Self.hint(for: code) { text += "; \(hint)" }
        return text
    }

    /// Plain words for a DNSServiceErrorType code.
    static func explanation(of code: Int32) -> String {
        switch code {
        // avahi's compatibility library answers kDNSServiceErr_Unknown when it cannot reach
        // avahi-daemon over D-Bus (no daemon, or no system bus); Apple's mDNSResponder answers
        // kDNSServiceErr_ServiceNotRunning.
        case -65537, -65563: "the avahi daemon is not running"
        case -65538: "no such name on the network"
        case -65539: "out of memory"
        case -65540: "the session name or service type is not valid"
        case -65541: "internal error: the Bonjour operation was already closed"
        case -65542: "internal error: Bonjour is in an unexpected state"
        case -65543: "internal error: unsupported Bonjour flags"
        case -65544: "this is not supported by avahi's Bonjour compatibility library"
        case -65545: "Bonjour is not initialized"
        case -65547: "this service is already advertised"
        case -65548: "another device on the network already uses this name"
        case -65549: "the avahi daemon sent an invalid answer"
        case -65550: "a firewall blocks Bonjour"
        case -65551: "the avahi daemon and its client library do not match (incompatible versions)"
        case -65552: "no such network interface"
        case -65553: "the avahi daemon refused the request"
        case -65554: "no such record on the network"
        case -65555: "not authorized"
        case -65556: "no such key"
        case -65557, -65558: "NAT traversal failed"
        case -65559: "the system clock is wrong"
        case -65562: "a temporary failure; try again"
        case -65568: "no answer in time"
        default: "unexpected error"
        }
    }

    /// What to do about it, when there is something obvious.
    static func hint(for code: Int32) -> String? {
        switch code {
        case -65537, -65563: "start it with: sudo systemctl enable --now avahi-daemon"
        case -65548: "choose a different session name"
        case -65540: "use a name of at most 63 bytes and a type like _apple-midi._udp"
        default: nil
        }
    }
}
