import MIDI
import OSC
import Transport

/// Where one `osc:` endpoint listens, kept to find two endpoints that would listen on the same port.
struct OSCListener {
    /// The numeric address listened on (`host:`).
    var host: String
    /// The UDP port listened on (`listen:`).
    var port: UInt16
    /// The endpoint's name.
    var endpoint: String
    /// Where the `listen:` value is written.
    var location: SourceLocation

    /// `HOST:PORT`, with an IPv6 address in brackets.
    var address: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// True if the two cannot both bind: the same port on the same address, or on every address of the family.
    func overlaps(_ other: OSCListener) -> Bool {
        guard port == other.port else { return false }
        if host == other.host { return true }
        let wildcards = ["0.0.0.0", "::"]
        return host.contains(":") == other.host.contains(":")
            && (wildcards.contains(host) || wildcards.contains(other.host))
    }

    /// True if the session's two UDP ports (on its `bind:` address, or on every address) take this port.
    func clashes(with session: SessionDeclaration) -> Bool {
        guard port == session.port || port == session.port &+ 1 else { return false }
        guard let bind = session.bind else { return true }
        return overlaps(OSCListener(host: bind, port: port, endpoint: "", location: location))
    }

    /// The mistakes of endpoints listening where an earlier one (in file order) already listens, by file index.
    static func conflicts(in listenersByFile: [[OSCListener]]) -> [(file: Int, error: RouteFileError)] {
        var earlier: [OSCListener] = []
        var conflicts: [(file: Int, error: RouteFileError)] = []
        for (fileIndex, listeners) in listenersByFile.enumerated() {
            for listener in listeners {
                guard let other = earlier.first(where: { $0.overlaps(listener) }) else {
                    earlier.append(listener)
                    continue
                }
                conflicts.append((fileIndex, RouteFileError(
                    location: listener.location,
                    message: "endpoint '\(listener.endpoint)' cannot listen on \(listener.address): endpoint "
                        + "'\(other.endpoint)' at \(other.location) listens on \(other.address); "
                        + "give each OSC endpoint its own 'listen' port")))
            }
        }
        return conflicts
    }
}

extension PendingRoute {
    /// The route's OSC translation as the loader hands it on: the `osc:` block as written, the MIDI-over-OSC family
    /// alone when the route has an OSC endpoint at either end but no block, nil when it has none; a block on a
    /// route without an OSC endpoint is the mistake thrown. `kind` gives a declared endpoint's kind by name.
    func resolvedOSCMapping(kind: (String) -> EndpointKind?) throws(RouteFileError) -> OSCRouteMapping? {
        let names = (from + to).map(\.name)
        let touchesOSC = names.contains { name in
            if case .osc? = kind(name) { true } else { false }
        }
        if touchesOSC { return osc ?? OSCRouteMapping(entries: [], midi: true, location: location) }
        guard let osc else { return nil }
        var unique: [String] = []
        for name in names where !unique.contains(name) { unique.append(name) }
        let quoted = unique.map { "'\($0)'" }
        let which = switch quoted.count {
        case 1: "\(quoted[0]) is not one"
        case 2: "neither \(quoted[0]) nor \(quoted[1]) is one"
        default: "none of \(quoted.dropLast().joined(separator: ", ")) and \(quoted[quoted.count - 1]) is one"
        }
        throw RouteFileError(location: osc.location,
                             message: "the 'osc' block translates for an OSC endpoint at either end of the route; "
                                 + "\(which), so route from or to an 'osc' endpoint or remove the block")
    }
}

/// The reader of `osc:` endpoints: the port each listens on (which it keeps: no two may take one), whom it takes from
/// and whom it tells.
struct OSCEndpointReader: RouteFileReader {
    let file: String
    var errors: [RouteFileError] = []
    var notes: [RouteFileNote] = []
    /// Where the endpoints read listen, in order.
    private(set) var listeners: [OSCListener] = []

    /// The `osc:` value of endpoint `endpoint`: `{ listen: PORT, reply: PORT, host: ADDRESS, send: [...],
    /// accept: SENDERS, forget: SECONDS, control: BOOL }`; nil (reported) on a mistake.
    mutating func read(_ node: Node, key: Node, endpoint: String) -> EndpointKind? {
        let example = "{ listen: 8000, reply: 9000 }"
        guard let mapping = node.mapping else {
            fail(Self.isEmpty(node) ? key : node, "'osc' is a mapping with the port controllers send to, such as "
                 + "\(example), not \(Self.describe(node))")
            return nil
        }
        let errorsBefore = errors.count
        var settings = OSCEndpointSettings(listenPort: 0)
        var listenValue: Node?
        var acceptValue: Node?
        var misspeltListen = false
        for (keyNode, value) in mapping {
            guard let name = scalarKey(keyNode) else { continue }
            switch name {
            case "listen":
                listenValue = value
                settings.listenPort = readUDPPort(value, key: "listen") ?? 0
            case "reply":
                settings.replyPort = readUDPPort(value, key: "reply")
            case "host":
                settings.listenHost = readListenHost(value, key: keyNode) ?? settings.listenHost
            case "send":
                settings.targets = readOSCTargets(value, key: keyNode)
            case "accept":
                acceptValue = value
                settings.accept = readOSCAcceptance(value, key: keyNode) ?? settings.accept
            case "forget":
                settings.forgetAfter = readDuration(value, key: "forget", allowsZero: false) ?? settings.forgetAfter
            case "control":
                settings.control = readBool(value, key: "control") ?? settings.control
            default:
                failUnknownKey(keyNode, name, known: RouteFileVocabulary.oscEndpointKeys, in: "an 'osc' endpoint")
                misspeltListen = misspeltListen
                    || RouteFileVocabulary.closest(to: name, in: RouteFileVocabulary.oscEndpointKeys) == "listen"
            }
        }
        guard let listenValue else {
            // A misspelt 'listen' was reported as such; saying it is missing too would only repeat it.
            if !misspeltListen {
                fail(node, "an 'osc' endpoint needs 'listen: PORT', the UDP port controllers send to, such as \(example)")
            }
            return nil
        }
        if let acceptValue, settings.accept == .within([]), settings.targets.isEmpty {
            fail(acceptValue, "with 'accept: none' and no 'send' targets the endpoint neither hears nor tells anyone; "
                 + "'none' is for feedback to 'send' targets only, so add them or accept senders such as 'local'")
        }
        guard errors.count == errorsBefore else { return nil }
        listeners.append(OSCListener(host: settings.listenHost, port: settings.listenPort, endpoint: endpoint,
                                     location: location(listenValue)))
        return .osc(settings)
    }

    /// `accept:`: `anyone`, `none`, `local`, or an address or network, or a list of those and `local`;
    /// nil (reported) on a mistake.
    private mutating func readOSCAcceptance(_ node: Node, key: Node) -> AddressAcceptance? {
        if let sequence = node.sequence {
            guard !sequence.isEmpty else {
                fail(node, "'accept' lists no senders; write 'none' to take from no sender")
                return nil
            }
            var prefixes: [NetworkPrefix] = []
            var valid = true
            for item in sequence {
                if let word = item.scalar?.string, word == "anyone" || word == "none" {
                    fail(item, "'\(word)' is a whole 'accept' value, not a list entry; write 'accept: \(word)' alone")
                    valid = false
                } else if let entry = readAcceptEntry(item) {
                    prefixes += entry
                } else {
                    valid = false
                }
            }
            return valid ? .within(prefixes) : nil
        }
        if Self.isEmpty(node) {
            fail(key, "'accept' needs a value: \(Self.acceptForms)")
            return nil
        }
        switch node.scalar?.string {
        case "anyone": return .anyone
        case "none": return .within([])
        default: return readAcceptEntry(node).map(AddressAcceptance.within)
        }
    }

    /// What `accept:` takes, for messages.
    private static let acceptForms = "anyone, none, local (this machine and the local networks), an address or "
        + "a network such as 192.168.1.0/24 or fd00::/8, or a list of addresses, networks and local"

    /// One `accept:` address, network or `local`, as the prefixes it stands for; nil (reported) on a mistake.
    private mutating func readAcceptEntry(_ node: Node) -> [NetworkPrefix]? {
        guard let text = node.scalar?.string, !Self.isEmpty(node), !text.isEmpty else {
            fail(node, "an 'accept' entry is an address, a network such as 192.168.1.0/24, or local; not "
                 + (Self.isEmpty(node) ? "empty" : Self.describe(node)))
            return nil
        }
        if text == "local" { return NetworkPrefix.localNetworks }
        let form = "an 'accept' entry is an address or a network such as 192.168.1.0/24 or fd00::/8"
        do {
            return [try NetworkPrefix(parsing: text)]
        } catch {
            switch error {
            case .malformedAddress(let address):
                if let hint = RouteFileVocabulary.closest(to: text, in: RouteFileVocabulary.oscAcceptWords) {
                    fail(node, "unknown 'accept' value '\(text)'; did you mean '\(hint)'? 'accept' is \(Self.acceptForms)")
                } else if let percent = address.firstIndex(of: "%") {
                    fail(node, "'\(text)' has a zone ('\(address[percent...])'), which 'accept' cannot match; write "
                         + "the address without it")
                } else if Self.isHostName(address) && !address.allSatisfy({ $0.isNumber || $0 == "." }) {
                    fail(node, "'\(address)' is a host name, which 'accept' cannot match: senders are known by their "
                         + "address; write its numeric address or its network, such as 192.168.1.0/24")
                } else {
                    fail(node, "'\(address)' is not a numeric IPv4 or IPv6 address; \(form)")
                }
            case .malformedLength(let length):
                fail(node, "'\(text)' has \(length.isEmpty ? "nothing" : "'\(length)'") after '/', not a prefix length; \(form)")
            case .lengthOutOfRange(let length, let maximum):
                fail(node, "'\(text)': /\(length) is out of range; an \(maximum == 32 ? "IPv4" : "IPv6") prefix length "
                     + "is 0-\(maximum)")
            case .hostBitsSet(let network):
                let parts = text.split(separator: "/")
                fail(node, "'\(text)' has address bits set beyond its /\(parts[1]) prefix; write the network "
                     + "\(network), or \(parts[0]) for that one address")
            }
            return nil
        }
    }

    /// A UDP port 1-65535 written for `key`.
    private mutating func readUDPPort(_ node: Node, key: String) -> UInt16? {
        readWholeNumber(node, in: 1...65535, what: "'\(key)'", expected: "a UDP port, 1-65535").map(UInt16.init)
    }

    /// The `host:` an OSC endpoint listens on: a numeric IPv4 or IPv6 address.
    private mutating func readListenHost(_ node: Node, key: Node) -> String? {
        let form = "the numeric address to listen on, such as 127.0.0.1 or ::1; leave 'host' out to listen on "
            + "every IPv4 interface (0.0.0.0)"
        guard let host = node.scalar?.string, !Self.isEmpty(node), Self.isNumericAddress(host) else {
            fail(Self.isEmpty(node) ? key : node, Self.isEmpty(node)
                 ? "'host' is empty; write \(form)" : "\(Self.describe(node)) is not a numeric address; 'host' is \(form)")
            return nil
        }
        return host
    }

    /// The `send:` targets: one `"HOST:PORT"` or a list of them; entries with mistakes are left out.
    private mutating func readOSCTargets(_ node: Node, key: Node) -> [OSCTarget] {
        if Self.isEmpty(node) {
            fail(key, "'send' is empty; write \"HOST:PORT\" or a list such as [\"127.0.0.1:57120\", \"[::1]:9000\"], "
                 + "or leave 'send' out")
            return []
        }
        return (node.sequence.map(Array.init) ?? [node]).compactMap { readOSCTarget($0) }
    }

    /// One `send:` entry: `"HOST:PORT"`, an IPv6 address in brackets (`"[::1]:9000"`).
    private mutating func readOSCTarget(_ node: Node) -> OSCTarget? {
        let form = "a target is \"HOST:PORT\" such as \"127.0.0.1:57120\" or \"studio.local:9001\", "
            + "with an IPv6 address in brackets: \"[::1]:9000\""
        guard let text = node.scalar?.string, !Self.isEmpty(node) else {
            fail(node, "\(form), not \(Self.describe(node))")
            return nil
        }
        guard let colon = text.lastIndex(of: ":") else {
            fail(node, "'\(text)' is not HOST:PORT; \(form)")
            return nil
        }
        var host = String(text[..<colon])
        let portText = String(text[text.index(after: colon)...])
        if host.hasPrefix("["), host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
            guard host.contains(":"), Self.isNumericAddress(host) else {
                fail(node, "'\(host)' in brackets is not an IPv6 address; \(form)")
                return nil
            }
        } else if Self.isNumericAddress(host) && host.contains(":") {
            fail(node, "'\(text)' is ambiguous; write the IPv6 address in brackets, such as \"[\(host)]:\(portText)\"")
            return nil
        } else if Self.isNumericAddress(text) {
            fail(node, "'\(text)' is an IPv6 address without a port; \(form)")
            return nil
        } else if !Self.isNumericAddress(host) && !Self.isHostName(host) {
            fail(node, "'\(host)' is not a numeric address or a host name; \(form)")
            return nil
        }
        guard let port = UInt16(portText), port > 0 else {
            fail(node, "'\(portText)' is not a port 1-65535; \(form)")
            return nil
        }
        return OSCTarget(host: host, port: port)
    }
}
