import MIDI

/// The live status page a route file's `http:` block turns on (jambridge-routes(5), "The status page").
public struct HTTPDeclaration: Equatable, Sendable {
    /// The numeric address listened on: loopback unless the file says otherwise.
    public var host = "127.0.0.1"
    public var port: UInt16 = 8080
    /// True if the page may start and stop the rhythm and set the tempo (`control: true`).
    public var control = false
    /// The names (lowercased) the page is reached by besides loopback and this machine's addresses, such as
    /// `rack.local` (`hosts:`): a command is taken only from a page at one of them.
    public var hosts: [String] = []
    public var location: SourceLocation

    public init(host: String = "127.0.0.1", port: UInt16 = 8080, control: Bool = false, hosts: [String] = [],
                location: SourceLocation) {
        self.host = host
        self.port = port
        self.control = control
        self.hosts = hosts
        self.location = location
    }

    /// `HOST:PORT`, an IPv6 host in brackets.
    public var listen: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// True if both serve the same page at the same place (where they are written aside).
    public func isSame(as other: HTTPDeclaration) -> Bool {
        (host, port, control, hosts) == (other.host, other.port, other.control, other.hosts)
    }
}

/// The reader of the top-level `http:` block: the status page.
struct StatusPageReader: RouteFileReader {
    let file: String
    var errors: [RouteFileError] = []
    var notes: [RouteFileNote] = []

    /// Reads the top-level `http:` block: `{ listen: "127.0.0.1:8080", control: false, hosts: [rack.local] }`, any
    /// key left out for its default.
    mutating func read(_ node: Node, key: Node) -> HTTPDeclaration {
        var declaration = HTTPDeclaration(location: location(key))
        if Self.isEmpty(node) { return declaration }
        guard let mapping = node.mapping else {
            fail(node, "'http' is a mapping such as '{ listen: \"127.0.0.1:8080\" }', not \(Self.describe(node))")
            return declaration
        }
        for (keyNode, value) in mapping {
            guard let name = scalarKey(keyNode) else { continue }
            switch name {
            case "listen":
                if let (host, port) = readHTTPListen(value) {
                    declaration.host = host
                    declaration.port = port
                }
            case "control":
                declaration.control = readBool(value, key: "control") ?? false
            case "hosts":
                declaration.hosts = readHTTPHosts(value)
            default:
                failUnknownKey(keyNode, name, known: RouteFileVocabulary.httpKeys, in: "the 'http' block")
            }
        }
        return declaration
    }

    /// `hosts:`: the names the page is reached by, host names or numeric addresses, lowercased; entries with
    /// mistakes are left out.
    private mutating func readHTTPHosts(_ node: Node) -> [String] {
        let form = "'hosts' lists the names a browser reaches this page by, such as [rack.local, 192.168.1.20]"
        if Self.isEmpty(node) { return [] }
        guard let sequence = node.sequence else {
            fail(node, "\(form), not \(Self.describe(node)) (a single name goes in a list)")
            return []
        }
        var hosts: [String] = []
        for item in sequence {
            guard let name = item.scalar?.string, !Self.isEmpty(item) else {
                fail(item, "\(form), not \(Self.describe(item))")
                continue
            }
            guard Self.isHostName(name) || Self.isNumericAddress(name) else {
                fail(item, "'\(name)' is not a host name or a numeric address; write the name alone, such as rack.local "
                     + "(no http://, port or path)")
                continue
            }
            hosts.append(name.lowercased())
        }
        return hosts
    }

    /// `listen:`: a TCP port (on loopback), or `"HOST:PORT"` with a numeric host, an IPv6 one in brackets.
    private mutating func readHTTPListen(_ node: Node) -> (String, UInt16)? {
        let form = "'listen' is a TCP port such as 8080 (on 127.0.0.1), or \"HOST:PORT\" with a numeric address, "
            + "such as \"0.0.0.0:8080\" for every IPv4 interface or \"[::1]:8080\""
        guard let text = node.scalar?.string, !Self.isEmpty(node) else {
            fail(node, "\(form), not \(Self.describe(node))")
            return nil
        }
        var host = "127.0.0.1"
        var portText = text
        if let colon = text.lastIndex(of: ":") {
            host = String(text[..<colon])
            portText = String(text[text.index(after: colon)...])
            if host.hasPrefix("["), host.hasSuffix("]") {
                host = String(host.dropFirst().dropLast())
                guard host.contains(":"), Self.isNumericAddress(host) else {
                    fail(node, "'\(host)' in brackets is not an IPv6 address; \(form)")
                    return nil
                }
            } else if host.contains(":") {
                fail(node, "'\(text)' is ambiguous; write an IPv6 address in brackets, such as \"[::1]:8080\"")
                return nil
            } else if !Self.isNumericAddress(host) {
                fail(node, "'\(host)' is not a numeric address; \(form)")
                return nil
            }
        }
        guard let port = UInt16(portText), port > 0 else {
            fail(node, "'\(portText)' is not a TCP port 1-65535; \(form)")
            return nil
        }
        return (host, port)
    }
}
