import MIDI

/// The RTP-MIDI network session a route file's `session:` block declares.
public struct SessionDeclaration: Equatable, Sendable {
    /// The control port when `port:` is not written (data uses the next port).
    public static let defaultPort: UInt16 = 5004
    /// The peer timeout when `timeout:` is not written: responders drop peers after about 60 s.
    public static let defaultTimeout = 60
    /// The range `timeout:` accepts, in seconds: well above the clock-sync interval, at most 10 minutes.
    public static let timeoutRange = 15...600
    /// The most peers at once when `max-peers:` is not written.
    public static let defaultMaxPeers = 32
    /// The range `max-peers:` accepts: each connected peer costs the session about 40 KB.
    public static let maxPeersRange = 1...256

    /// The session's Bonjour and AppleMIDI name; nil lets the daemon call it "jambridge on HOSTNAME".
    public var name: String?
    /// The UDP control port, 1-65534; the data port is the next one.
    public var port: UInt16
    /// The numeric IPv4 or IPv6 address to listen on; nil for every interface.
    public var bind: String?
    /// Which peers may join when they invite the session.
    public var accept: SessionAcceptance
    /// The peers the session invites, in the order written.
    public var invite: [SessionInvitation]
    /// True if the session is published on Bonjour.
    public var advertise: Bool
    /// Seconds without clock sync after which a peer is dropped (its notes released).
    public var timeout: Int
    /// The most peers connected at once; an invitation beyond is answered NO.
    public var maxPeers: Int
    /// Omit repeated channel status bytes in what is sent (smaller packets; every peer reads them).
    public var runningStatus: Bool
    /// How each peer's events are played, first matching rule first; peers no rule matches play `immediate`.
    public var playout: [PlayoutRule]
    /// Where the `session` key is written, or the first use of the session when no file declares it.
    public var location: SourceLocation

    /// A session declared at `location`; every other setting defaults as jambridge-routes(5) documents.
    public init(name: String? = nil, port: UInt16 = SessionDeclaration.defaultPort, bind: String? = nil,
                accept: SessionAcceptance = .anyone, invite: [SessionInvitation] = [], advertise: Bool = true,
                timeout: Int = SessionDeclaration.defaultTimeout, maxPeers: Int = SessionDeclaration.defaultMaxPeers,
                runningStatus: Bool = false, playout: [PlayoutRule] = [], location: SourceLocation) {
        self.name = name
        self.port = port
        self.bind = bind
        self.accept = accept
        self.invite = invite
        self.advertise = advertise
        self.timeout = timeout
        self.maxPeers = maxPeers
        self.runningStatus = runningStatus
        self.playout = playout
        self.location = location
    }
}

/// How events from RTP-MIDI peers are played (`playout:`).
public enum PlayoutMode: String, Equatable, Sendable {
    /// Each event is passed on when its packet arrives (the default).
    case immediate
    /// Each event is played at its sender's timestamp on our clock, plus a jitter buffer sized per peer.
    case timestamp
}

/// One `playout:` entry: peers whose name matches `glob` play with `mode`.
public struct PlayoutRule: Equatable, Sendable {
    /// A peer session name glob, as in `peer:` endpoints; `*` matches every peer.
    public var glob: String
    /// How the events of the peers the glob matches are played.
    public var mode: PlayoutMode

    /// The rule playing peers whose name matches `glob` with `mode`.
    public init(glob: String, mode: PlayoutMode) {
        self.glob = glob
        self.mode = mode
    }
}

/// Which peers a session lets join when they invite it (`accept:`).
public enum SessionAcceptance: Equatable, Sendable {
    /// Every peer (`anyone`).
    case anyone
    /// No peer; the session only joins the peers it invites (`none`).
    case none
    /// Peers matching a Bonjour name glob of `invite:` or any `peer:` endpoint's glob (`listed`).
    case listed
    /// Peers whose name matches one of these globs (a list of names).
    case names([String])
}

/// One entry of a session's `invite:` list: a peer the session connects to.
public enum SessionInvitation: Equatable, Sendable {
    /// Every Bonjour-advertised session whose name matches `glob`.
    case bonjour(glob: String)
    /// The session at `host` (a numeric address or a host name) with control port `port`.
    case address(host: String, port: UInt16)
}

/// The reader of the top-level `session:` block.
struct SessionReader: RouteFileReader {
    /// Bonjour's limit on a service name (one DNS label), in UTF-8 bytes.
    static let maximumNameBytes = 63

    let file: String
    var errors: [RouteFileError] = []
    var notes: [RouteFileNote] = []

    /// Reads the `session:` mapping written at `key`; settings with mistakes keep their defaults.
    mutating func read(_ node: Node, key: Node) -> SessionDeclaration {
        var session = SessionDeclaration(location: location(key))
        if Self.isEmpty(node) { return session }
        guard let mapping = node.mapping else {
            fail(node, "'session' is a mapping such as '{ name: Studio Rack, port: 5004 }', not \(Self.describe(node))")
            return session
        }
        var values: [String: (key: Node, value: Node)] = [:]
        for (keyNode, value) in mapping {
            guard let name = scalarKey(keyNode) else { continue }
            if RouteFileVocabulary.sessionKeys.contains(name) {
                values[name] = (keyNode, value)
            } else {
                failUnknownKey(keyNode, name, known: RouteFileVocabulary.sessionKeys, in: "the session")
            }
        }
        if let name = values["name"] {
            session.name = readBoundedName(
                name.value, key: name.key, maximumBytes: Self.maximumNameBytes, what: "the session name",
                limits: "Bonjour names", notText: "'name' is the session's name as text, such as 'Studio Rack'",
                ifEmpty: "write the name peers see, such as 'Studio Rack', or leave 'name' out for 'jambridge on HOSTNAME'")
        }
        if let port = values["port"], let number = readPort(port.value, what: "the session port") {
            session.port = number
        }
        if let bind = values["bind"] { session.bind = readBindAddress(bind.value, key: bind.key) }
        if let accept = values["accept"], let acceptance = readAcceptance(accept.value, key: accept.key) {
            session.accept = acceptance
        }
        if let invite = values["invite"] { session.invite = readInvitations(invite.value) }
        if let advertise = values["advertise"], let flag = readBool(advertise.value, key: "advertise") {
            session.advertise = flag
        }
        if let running = values["running-status"], let flag = readBool(running.value, key: "running-status") {
            session.runningStatus = flag
        }
        if let timeout = values["timeout"] {
            session.timeout = readInteger(timeout.value, key: "timeout", what: "the peer timeout",
                                          in: SessionDeclaration.timeoutRange,
                                          meaning: "seconds without clock sync before a peer is dropped") ?? session.timeout
        }
        if let maxPeers = values["max-peers"] {
            session.maxPeers = readInteger(maxPeers.value, key: "max-peers", what: "the peer limit",
                                           in: SessionDeclaration.maxPeersRange,
                                           meaning: "peers connected at once") ?? session.maxPeers
        }
        if let playout = values["playout"] { session.playout = readPlayout(playout.value, key: playout.key) ?? [] }
        return session
    }

    /// `playout:`: a mode for every peer, or a mapping of peer name globs to modes; nil (reported) on a mistake.
    private mutating func readPlayout(_ node: Node, key: Node) -> [PlayoutRule]? {
        let example = "{ \"Mike’s iPad\": timestamp, \"*\": immediate }"
        let choices = "immediate, timestamp or a mapping of peer names to those such as \(example)"
        if let mapping = node.mapping {
            return readPlayoutRules(mapping, at: node)
        }
        if node.sequence != nil {
            fail(node, "'playout' per peer is a mapping, not a list: write each peer name with its mode, such as "
                 + "\(example); entries keep the order written and the first name matching a peer decides")
            return nil
        }
        guard let word = node.scalar?.string, !Self.isEmpty(node), !word.isEmpty else {
            fail(Self.isEmpty(node) ? key : node, node.scalar != nil
                 ? "'playout' needs a value: \(choices)" : "'playout' is \(choices), not \(Self.describe(node))")
            return nil
        }
        guard let mode = PlayoutMode(rawValue: word) else {
            let hint = RouteFileVocabulary.closest(to: word, in: RouteFileVocabulary.playoutWords)
                .map { "did you mean '\($0)'? " } ?? ""
            fail(node, "unknown 'playout' value '\(word)'; \(hint)'playout' is \(choices)")
            return nil
        }
        return [PlayoutRule(glob: "*", mode: mode)]
    }

    /// The entries of a per-peer `playout:` mapping, in the order written; nil (reported) on a mistake.
    private mutating func readPlayoutRules(_ mapping: Node.Mapping, at node: Node) -> [PlayoutRule]? {
        guard !mapping.isEmpty else {
            fail(node, "'playout' maps no peer names; write 'immediate' or 'timestamp' to play every peer "
                 + "one way, or leave 'playout' out")
            return nil
        }
        var rules: [PlayoutRule] = []
        var catchAll: (glob: String, line: Int)?
        var valid = true
        for (keyNode, value) in mapping {
            guard let glob = scalarKey(keyNode) else { valid = false; continue }
            let line = location(keyNode).line
            guard !glob.isEmpty, !Self.isEmpty(keyNode) else {
                fail(keyNode, "an empty peer name in 'playout'; write a name or a glob such as \"Mike’s *\", "
                     + "or \"*\" for every other peer")
                valid = false
                continue
            }
            if let catchAll {
                fail(keyNode, "'\(glob)' can never match: '\(catchAll.glob)' at line \(catchAll.line) matches "
                     + "every peer before it; move '\(glob)' above it or remove it")
                valid = false
            } else if glob.allSatisfy({ $0 == "*" }) {
                catchAll = (glob, line)
            }
            guard let mode = readPlayoutMode(value, key: keyNode, glob: glob) else { valid = false; continue }
            rules.append(PlayoutRule(glob: glob, mode: mode))
        }
        return valid ? rules : nil
    }

    /// The mode of one per-peer `playout:` entry for the peers matching `glob`.
    private mutating func readPlayoutMode(_ node: Node, key: Node, glob: String) -> PlayoutMode? {
        let form = "a peer's playout is immediate or timestamp"
        guard let word = node.scalar?.string, !Self.isEmpty(node), !word.isEmpty else {
            fail(Self.isEmpty(node) ? key : node, node.scalar != nil
                 ? "the playout of '\(glob)' needs a value; \(form)"
                 : "the playout of '\(glob)' is \(Self.describe(node)); \(form)")
            return nil
        }
        if let mode = PlayoutMode(rawValue: word) { return mode }
        if PlayoutMode(rawValue: glob) != nil {
            fail(node, "unknown playout '\(word)' for '\(glob)'; the peer name comes first, "
                 + "such as { \"\(word)\": \(glob) }")
            return nil
        }
        let hint = RouteFileVocabulary.closest(to: word, in: RouteFileVocabulary.playoutWords)
            .map { "did you mean '\($0)'? " } ?? ""
        fail(node, "unknown playout '\(word)' for '\(glob)'; \(hint)\(form)")
        return nil
    }

    /// The whole number written for `key` within `range`, which counts `meaning`; `what` names it in messages.
    private mutating func readInteger(_ node: Node, key: String, what: String, in range: ClosedRange<Int>,
                                      meaning: String) -> Int? {
        let text = "\(range.lowerBound)-\(range.upperBound) \(meaning)"
        guard let number = readInteger(node, what: what, range: text) else { return nil }
        guard range.contains(number) else {
            fail(node, "\(key) \(number) is out of range; '\(key)' is \(text)")
            return nil
        }
        return number
    }

    /// A control port 1-65534 (the data port is the next one), described in messages as `what`.
    private mutating func readPort(_ node: Node, what: String) -> UInt16? {
        let range = "1-65534 (the data port is the next one)"
        guard let number = readInteger(node, what: what, range: range) else { return nil }
        guard (1...65534).contains(number) else {
            fail(node, "port \(number) is out of range; \(what) is \(range)")
            return nil
        }
        return UInt16(number)
    }

    /// The `bind:` address: a numeric IPv4 or IPv6 address.
    private mutating func readBindAddress(_ node: Node, key: Node) -> String? {
        let form = "a numeric IPv4 or IPv6 address such as '192.168.1.20' or 'fd00::20'; "
            + "leave 'bind' out to listen on every interface"
        guard let text = node.scalar?.string, !Self.isEmpty(node), !text.isEmpty else {
            fail(Self.isEmpty(node) ? key : node, "'bind' is \(form)")
            return nil
        }
        guard Self.isNumericAddress(text) else {
            fail(node, "'\(text)' is not a numeric address; 'bind' is \(form)")
            return nil
        }
        return text
    }

    /// The `accept:` value: `anyone`, `none`, `listed` or a list of peer name globs.
    private mutating func readAcceptance(_ node: Node, key: Node) -> SessionAcceptance? {
        let choices = "anyone, none, listed or a list of peer names such as [\"Mike’s *\"]"
        let form = "'accept' is \(choices)"
        if let sequence = node.sequence {
            guard !sequence.isEmpty else {
                fail(node, "'accept' lists no peer names; write 'none' to let no peer join")
                return nil
            }
            var names: [String] = []
            var valid = true
            for item in sequence {
                guard let name = item.scalar?.string, !Self.isEmpty(item), !name.isEmpty else {
                    fail(item, Self.isEmpty(item) || item.scalar != nil
                         ? "an empty peer name in 'accept'; write a name or a glob such as \"Mike’s *\""
                         : "'accept' lists peer names, not \(Self.describe(item))")
                    valid = false
                    continue
                }
                names.append(name)
            }
            return valid ? .names(names) : nil
        }
        guard let word = node.scalar?.string, !Self.isEmpty(node) else {
            fail(Self.isEmpty(node) ? key : node,
                 Self.isEmpty(node) ? "'accept' needs a value: \(choices)" : "\(form), not \(Self.describe(node))")
            return nil
        }
        switch word {
        case "anyone": return .anyone
        case "none": return SessionAcceptance.none
        case "listed": return .listed
        default:
            let hint = RouteFileVocabulary.closest(to: word, in: RouteFileVocabulary.acceptWords)
                .map { "did you mean '\($0)'? " } ?? ""
            fail(node, "unknown 'accept' value '\(word)'; \(hint)\(form) (a single name goes in a list)")
            return nil
        }
    }

    /// The `invite:` entries: one entry or a list of them; entries with mistakes are left out.
    private mutating func readInvitations(_ node: Node) -> [SessionInvitation] {
        if Self.isEmpty(node) { return [] }
        let items = node.sequence.map(Array.init) ?? [node]
        var invitations: [SessionInvitation] = []
        for item in items {
            if let invitation = readInvitation(item) { invitations.append(invitation) }
        }
        return invitations
    }

    /// One `invite:` entry: a Bonjour name glob, or `{ host: HOST, port: PORT }`.
    private mutating func readInvitation(_ node: Node) -> SessionInvitation? {
        let forms = "an invitation is a Bonjour name such as \"Jam *\" or { host: 10.0.0.2, port: 5004 }"
        if let mapping = node.mapping {
            return readAddressInvitation(mapping, at: node, forms: forms)
        }
        guard let glob = node.scalar?.string, !Self.isEmpty(node), !glob.isEmpty else {
            fail(node, Self.isEmpty(node) || node.scalar != nil ? "an empty invitation; \(forms)"
                 : "\(forms), not \(Self.describe(node))")
            return nil
        }
        return .bonjour(glob: glob)
    }

    /// An `invite:` entry written as a mapping with `host:` and an optional `port:`.
    private mutating func readAddressInvitation(_ mapping: Node.Mapping, at node: Node,
                                                forms: String) -> SessionInvitation? {
        var host: String?
        var port = SessionDeclaration.defaultPort
        var sawHost = false
        var valid = true
        for (keyNode, value) in mapping {
            guard let key = scalarKey(keyNode) else { valid = false; continue }
            switch key {
            case "host":
                sawHost = true
                host = readHost(value, key: keyNode)
                if host == nil { valid = false }
            case "port":
                if let number = readPort(value, what: "the peer's port") { port = number } else { valid = false }
            default:
                failUnknownKey(keyNode, key, known: RouteFileVocabulary.invitationKeys, in: "an invitation")
                valid = false
            }
        }
        if !sawHost {
            fail(node, "an invitation by address needs 'host:', such as { host: 10.0.0.2, port: 5004 }")
            return nil
        }
        guard valid, let host else { return nil }
        return .address(host: host, port: port)
    }

    /// The `host:` of an invitation: a numeric IPv4 or IPv6 address or a host name.
    private mutating func readHost(_ node: Node, key: Node) -> String? {
        guard let host = node.scalar?.string, !Self.isEmpty(node), !host.isEmpty else {
            let form = "a numeric address or a host name such as 10.0.0.2 or studio.local"
            fail(Self.isEmpty(node) ? key : node,
                 node.scalar != nil ? "'host' is empty; write \(form)" : "'host' is \(form), not \(Self.describe(node))")
            return nil
        }
        if Self.isNumericAddress(host) { return host }
        if let colon = host.lastIndex(of: ":"), !host[..<colon].isEmpty,
           Self.isNumericAddress(String(host[..<colon])) || Self.isHostName(String(host[..<colon])),
           Int(host[host.index(after: colon)...]) != nil {
            fail(node, "'\(host)' is not a host; write the port apart: "
                 + "{ host: \(host[..<colon]), port: \(host[host.index(after: colon)...]) }")
            return nil
        }
        guard Self.isHostName(host) else {
            fail(node, "'\(host)' is not a numeric address or a host name; a host name has letters, digits, "
                 + "'-' and dots, such as studio.local")
            return nil
        }
        return host
    }
}
