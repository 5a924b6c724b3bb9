import JSON

/// What a running daemon is doing, as its control socket answers `status`: `jambridge status --json` prints it,
/// `jambridge status` shows it as `lines`, `jambridge peers` lists its session. Each part fills in its own object
/// (`Part.report(into:)`); the engine adds what went in and out of each endpoint and what the router counted.
/// Objects of parts that do not run are absent (`session`, `alsa`, `jam`, `drums`) or empty (`osc`, `songs`,
/// `recordings`); counts are since the daemon started.
public struct DaemonStatus: Codable, Equatable, Sendable {
    /// The daemon's process ID.
    public var pid: Int32
    /// The route files it runs, as given to `run`.
    public var routeFiles: [String]
    public var session: Session?
    public var alsa: ALSA?
    /// The `osc:` endpoints, by name.
    public var osc: [String: OSC] = [:]
    /// The `file:` endpoints, by name.
    public var songs: [String: Song] = [:]
    /// The `record:` endpoints, by name.
    public var recordings: [String: Recording] = [:]
    public var jam: Jam?
    public var drums: Drums?
    public var http: HTTP?
    /// Every running endpoint, by name.
    public var endpoints: [String: Traffic] = [:]
    public var router = Router()

    /// The live status page (`http:`).
    public struct HTTP: Codable, Equatable, Sendable {
        /// Where it listens, `HOST:PORT`.
        public var listen: String
        /// True if the page may start, stop and set the tempo.
        public var control: Bool
        /// The pages open now (each one stream of the status).
        public var pages: Int
        /// The connections open now (at most `StatusPageServer.connectionLimit`).
        public var connections: Int
        /// What it turned away, by why (`PageRefusals`' names: `overConnectionLimit`, `requestTooSlow`,
        /// `stalledStream`, `displacedPage`, `foreignHost`, `commandFromElsewhere`).
        public var refused: [String: Int]
    }

    /// The RTP-MIDI session (`session:`).
    public struct Session: Codable, Equatable, Sendable {
        /// The name peers see (Bonjour's, if it renamed us).
        public var name: String
        /// The control port (the data port is the next).
        public var port: UInt16
        /// Our SSRC in the session.
        @NetworkIdentity public var ssrc: UInt32
        /// The connected peers, by name.
        public var peers: [Peer]
        /// Everything the session counted, by `SessionCounters`' names (packets in and out, malformed, lost,
        /// repaired, invitations refused...).
        public var counters: [String: Int]
        /// Our invitations (`invite:`, Bonjour finds) that have not made a session, in the order they were given.
        public var invitations: [Invitation] = []
    }

    /// An invitation of ours that has not made a session (yet).
    public struct Invitation: Codable, Equatable, Sendable {
        /// As `invite:` gave it, `host:port`, or the Bonjour name.
        @NetworkIdentity public var label: String
        /// Its control port's address.
        @NetworkIdentity public var address: String
        /// `inviting` (no answer yet), `joining` (its control port answered, its data port not yet) or `waiting` (it
        /// refused or left: invited again in 10 s).
        public var state: String
        /// Invitations (INs) sent since it last joined, refused or left; all but the last one unanswered.
        public var tries: Int
        /// Seconds since the first of them; absent before any.
        public var secondsSinceFirstTry: Double?
    }

    /// A connected peer of the session.
    public struct Peer: Codable, Equatable, Sendable {
        public var name: String
        /// Its identity in the session (its control-port SSRC).
        @NetworkIdentity public var ssrc: UInt32
        /// Its control port's address, `10.0.0.2:5004` or `[fe80::1]:5004`.
        @NetworkIdentity public var address: String
        /// True if we invited it, false if it invited us.
        public var weInvited: Bool
        /// The shortest recent round trip of clock sync, in milliseconds; nil before the first sync.
        public var roundTripMs: Double?
        /// Our clock minus the peer's, in milliseconds; nil before the first sync.
        public var clockOffsetMs: Double?
        /// Losses of its packets repaired from its recovery journals.
        public var journalRepairs: Int
    }

    /// The ALSA sequencer client (`alsa:` endpoints).
    public struct ALSA: Codable, Equatable, Sendable {
        public var client: String
        /// The client's number in the sequencer (`aconnect -l`).
        public var clientID: Int32
        /// The `alsa:` endpoints' ports, by endpoint name.
        public var ports: [String: ALSAPort]
        /// Events that could not be sent, and input overruns.
        public var failures: Int
        /// Messages dropped for want of room in the sequencer (a destination not reading, or too many events
        /// scheduled): waited a second, beyond the 4096 a port keeps, or refused by one of several subscribers.
        /// A release waits as long as its port runs.
        public var dropped: Int
        /// The note-offs and pedal releases among `dropped`: notes that may hang.
        public var droppedReleases: Int
    }

    /// One `alsa:` endpoint's port.
    public struct ALSAPort: Codable, Equatable, Sendable {
        /// Its number in our client.
        public var port: Int32
        /// The ports it is connected to, `CLIENT:PORT` by name.
        public var connections: [String]
    }

    /// An `osc:` endpoint.
    public struct OSC: Codable, Equatable, Sendable {
        /// Where it listens, `HOST:PORT`.
        public var listen: String
        /// The controllers heard within `forget:` seconds, by the address their feedback goes to.
        public var controllers: [Controller]
        /// The `send:` targets.
        @NetworkIdentity public var targets: [String]
    }

    /// A controller an OSC endpoint heard.
    public struct Controller: Codable, Equatable, Sendable {
        @NetworkIdentity public var address: String
        /// Seconds since it last sent.
        public var heardSecondsAgo: Double
    }

    /// A `file:` endpoint.
    public struct Song: Codable, Equatable, Sendable {
        public var path: String
        public var loop: Bool
    }

    /// A `record:` endpoint.
    public struct Recording: Codable, Equatable, Sendable {
        /// The take it records into (the `record:` path or the first free numbered name beside it).
        public var path: String
    }

    /// The jam (`clock:`, `activity:`).
    public struct Jam: Codable, Equatable, Sendable {
        /// `idle`, `master` (one of our sources leads) or `follower` (a peer leads).
        public var role: String
        /// Who leads: an endpoint, this instance or a peer, by name; nil while nobody does.
        public var master: String?
        /// The leading peer's SSRC, when a peer leads.
        @NetworkIdentity public var masterSSRC: UInt32?
        /// Beats a minute; nil while unknown (a follower before the master's clock).
        public var tempo: Double?
        /// The song's beat, counted from 1 at its Start; nil while no song runs.
        public var songBeat: Int?
        /// The session's total activity (0-127): the master's as heard on a follower, else our own.
        public var total: Int
        /// True if `total` is the master's, as heard.
        public var totalFromMaster: Bool
        /// Each player's activity level (0-127), by name.
        public var players: [Player]
        /// Transport messages and starts refused by the clock election.
        public var refused: Int
        /// Transport messages and commands refused for coming faster than a few a second from one source.
        public var overRate = 0
        /// Transport messages stamped earlier than the network could have taken to bring them, taken as sent when
        /// they came.
        public var backdated = 0
        /// Tempos asked for outside 20-300 beats a minute (1e308, 5e-324, NaN), refused.
        public var refusedTempos = 0
        /// Moves of the song this instance leads by more than a sixteenth (a Link session's jump, ticks overdue): each
        /// a Stop, Song Position and Continue at the clock outputs.
        public var repositions = 0
        /// Two masters made one: a peer whose start this instance refused kept its song running, and the two starts
        /// judged again made one master.
        public var healed = 0
        /// The Ableton Link session the jam shares (`clock: { link: ... }`); nil without one.
        public var link: LinkSession? = nil
    }

    /// The Ableton Link session as this instance sees it.
    public struct LinkSession: Codable, Equatable, Sendable {
        /// The other Link peers (apps, other instances).
        public var peers: Int
        /// The session's tempo, beats a minute.
        public var tempo: Double
        /// This instance's beat in the session, and its phase in a bar of `quantum` beats (the same at every peer).
        public var beat: Double
        public var phase: Double
        public var quantum: Double
        /// True while the session's transport plays (Link's start/stop sync).
        public var playing: Bool
    }

    /// A player's activity.
    public struct Player: Codable, Equatable, Sendable {
        /// A peer's name, an endpoint's, or an endpoint's followed by its ALSA port (`keys 20:0`).
        public var name: String
        public var level: Int
    }

    /// The drum sequencer (`drums:`).
    public struct Drums: Codable, Equatable, Sendable {
        /// The style playing (or to play from the next bar line).
        public var style: String
        /// The style the route files name.
        public var declaredStyle: String
        /// The style to play from the next bar line (a `jambridge drums style` or a reload changed it), if any.
        public var nextStyle: String? = nil
        /// The level playing (1 to `levels`).
        public var level: Int
        public var levels: Int
        /// True if the level is kept (`level:`, `jambridge drums level N`), false if it follows the activity.
        public var levelKept: Bool
        /// True while it plays along a song.
        public var playing: Bool
        /// Where the song is in the style's bars and beats, counted from 1; nil while not playing.
        public var bar: Int?
        public var beat: Int?
        /// Beats in the style's bar (4 in rock, 6 in six-eight).
        public var beatsPerBar: Int
        /// The voices silenced.
        public var muted: [String]
        /// Note-ons sent from the `drums` endpoint.
        public var notes: Int
        /// The audio (`audio:`), if it plays any.
        public var audio: Audio?
    }

    /// The drums' audio.
    public struct Audio: Codable, Equatable, Sendable {
        /// The ALSA PCM device.
        public var device: String
        /// False once the device has gone away.
        public var playing: Bool
        public var hits: Int
        /// Hits whose frame had passed when they came (played at once).
        public var lateHits: Int
        /// Underruns and suspends recovered.
        public var xruns: Int
    }

    /// What went through one endpoint.
    public struct Traffic: Codable, Equatable, Sendable {
        /// MIDI messages that came from it into the engine (to the routes and the jam).
        public var `in` = 0
        /// MIDI messages the engine handed to it.
        public var out = 0
        /// What its part dropped, by why (an OSC endpoint's undecodable datagrams, senders not accepted...).
        public var dropped: [String: Int] = [:]
    }

    /// What the router counted.
    public struct Router: Codable, Equatable, Sendable {
        /// Messages handed to sinks.
        public var delivered = 0
        /// Messages a route's stages dropped (`only:`, `channels:`, `notes:`...).
        public var filtered = 0
        /// Note-offs and pedal releases for which nothing was on (nothing sent).
        public var unmatchedReleases = 0
        /// Note-ons dropped because the held-note table was full.
        public var heldTableFull = 0
        /// Pedal presses made by converting a message that has no release of their own (dropped).
        public var untrackable = 0
    }
}

/// A value of the status that identifies something on the network, an SSRC or an address: the status page writes it
/// as `null` for a client beyond loopback (an SSRC and its peer's address are what a forged invitation needs), when
/// the encoder's `userInfo[.withholdingNetworkIdentities]` is true. Read back, `null` is `Value.withheld`.
@propertyWrapper
public struct NetworkIdentity<Value: Withholdable>: Codable, Equatable, Sendable {
    public var wrappedValue: Value

    public init(wrappedValue: Value) {
        self.wrappedValue = wrappedValue
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        wrappedValue = container.decodeNil() ? .withheld : try container.decode(Value.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if encoder.userInfo[.withholdingNetworkIdentities] as? Bool == true {
            try container.encodeNil()
        } else {
            try container.encode(wrappedValue)
        }
    }
}

/// A status value that has a stand-in for one withheld (`NetworkIdentity`): 0, "", none.
public protocol Withholdable: Codable, Equatable, Sendable {
    static var withheld: Self { get }
}

extension UInt32: Withholdable { public static var withheld: UInt32 { 0 } }
extension String: Withholdable { public static var withheld: String { "" } }
extension Array: Withholdable where Element: Withholdable { public static var withheld: [Element] { [] } }
extension Optional: Withholdable where Wrapped: Withholdable { public static var withheld: Wrapped? { nil } }

extension CodingUserInfoKey {
    /// True: `NetworkIdentity` values are written as `null` (the status page, beyond loopback).
    public static let withholdingNetworkIdentities = CodingUserInfoKey(rawValue: "jambridge.withholdingNetworkIdentities")!
}

extension JSONWriter {
    /// How the status is written as JSON everywhere (the control socket's replies, `jambridge status --json`, the
    /// status page): keys sorted, slashes left as they are (`JSONValue.text`); `withholding` SSRCs and addresses
    /// (`NetworkIdentity`) for a status page beyond loopback.
    public static func status(withholding: Bool = false) -> JSONWriter {
        JSONWriter(userInfo: [.withholdingNetworkIdentities: withholding])
    }
}

extension DaemonStatus {
    /// What `jambridge status` prints: a line per part (the session and its peers, the ALSA client and its ports,
    /// each OSC endpoint and its controllers, songs, recordings, the jam, the drums), then what went through each
    /// endpoint and what the router counted.
    public var lines: [String] {
        var lines: [String] = []
        if let alsa {
            lines.append("ALSA client '\(alsa.client)': " + (alsa.ports.isEmpty ? "no ports" : "ports \(alsa.ports.keys.sorted().joined(separator: ", "))"))
            for (name, port) in alsa.ports.sorted(by: { $0.key < $1.key }) where !port.connections.isEmpty {
                lines.append("  \(name) (\(alsa.clientID):\(port.port)) connected to \(port.connections.map { "'\($0)'" }.joined(separator: ", "))")
            }
        }
        if let session {
            lines.append("session '\(session.name)' on UDP port \(session.port): "
                         + (session.peers.isEmpty ? "no peers" : "\(counted(session.peers.count, "peer")) (\(session.peers.map { "'\($0.name)'" }.joined(separator: ", ")))"))
            for peer in session.peers {
                let clock = peer.roundTripMs.map { "round trip \($0.decimal(1)) ms" } ?? "not synced yet"
                let offset = peer.clockOffsetMs.map { ", clock offset \($0.decimal(1, signed: true)) ms" } ?? ""
                lines.append("  peer '\(peer.name)' at \(peer.address) (\(peer.weInvited ? "we invited it" : "it invited us")): \(clock)\(offset), \(counted(peer.journalRepairs, "journal repair"))")
            }
            for invitation in session.invitations { lines.append("  " + invitation.line) }
            let wrongAddress = session.counters["wrongAddress"] ?? 0, outOfWindow = session.counters["outOfWindow"] ?? 0,
                implausible = session.counters["implausibleSongPositions"] ?? 0
            if wrongAddress + outOfWindow + implausible > 0 {
                lines.append("  dropped under peers' SSRCs: \(wrongAddress) from an address no peer joined from, "
                             + "\(outOfWindow) far out of sequence, \(counted(implausible, "journal")) putting a song too far on")
            }
        }
        for (name, osc) in self.osc.sorted(by: { $0.key < $1.key }) {
            lines.append("\(name): OSC on \(osc.listen)")
            for controller in osc.controllers {
                lines.append("  controller \(controller.address), heard \(controller.heardSecondsAgo.decimal(1)) s ago")
            }
        }
        for (name, song) in songs.sorted(by: { $0.key < $1.key }) { lines.append("\(name): playing \(song.path)\(song.loop ? " (looped)" : "")") }
        for (name, recording) in recordings.sorted(by: { $0.key < $1.key }) { lines.append("\(name): recording to \(recording.path)") }
        if let jam { lines.append(jam.line) }
        if let drums { lines.append(drums.line) }
        if let http {
            let refused = http.refused.filter { $0.value > 0 }.sorted { $0.key < $1.key }
            lines.append("status page: http://\(http.listen)/ (\(http.control ? "with" : "without") start, stop and tempo), \(counted(http.pages, "page")) open, "
                         + counted(http.connections, "connection")
                         + (refused.isEmpty ? "" : "; refused \(refused.map { "\($0.value) \(words($0.key))" }.joined(separator: ", "))"))
        }
        if !endpoints.isEmpty {
            lines.append("endpoints (messages in, out; dropped):")
            for (name, traffic) in endpoints.sorted(by: { $0.key < $1.key }) {
                let dropped = traffic.dropped.filter { $0.value > 0 }.sorted { $0.key < $1.key }
                lines.append("  \(name): \(traffic.in) in, \(traffic.out) out"
                             + (dropped.isEmpty ? "" : "; dropped \(dropped.map { "\($0.value) \(words($0.key))" }.joined(separator: ", "))"))
            }
            lines.append("router: \(router.delivered) delivered, \(router.filtered) filtered, \(counted(router.unmatchedReleases, "unmatched release")), "
                         + "\(router.heldTableFull) dropped for a full note table, \(router.untrackable) untrackable pedals")
        }
        return lines
    }

    /// `notAccepted` as "not accepted".
    private func words(_ name: String) -> String {
        name.reduce(into: "") { words, character in words += character.isUppercase ? " " + character.lowercased() : String(character) }
    }
}

extension DaemonStatus.Invitation {
    /// `inviting 127.0.0.1:25100: 5 invitations unanswered, the first 8 s ago`.
    var line: String {
        let what = switch state {
        case "joining": "its control port answered, its data port not yet"
        case "waiting": "it refused or left; invited again shortly"
        default: "no answer yet"
        }
        let since = secondsSinceFirstTry.map { ", the first \(Int($0)) s ago" } ?? ""
        return "inviting \(Self.naming(label, at: address)): \(what) (\(counted(tries, "invitation"))\(since))"
    }

    /// `label`, and the address it stands for unless it says it already (`invite: 127.0.0.1:25100`).
    static func naming(_ label: String, at address: String) -> String {
        label == address ? address : "\(label) at \(address)"
    }
}

extension DaemonStatus.Jam {
    /// `jam: master, clock master jam-a, 120.0 BPM, beat 6; total activity 40 (jam-b 40)`.
    var line: String {
        let master = self.master.map { name in masterSSRC.map { "\(name) (peer \(String($0, radix: 16, uppercase: true)))" } ?? name } ?? "nobody"
        let tempo = self.tempo.map { "\(($0 * 10).rounded() / 10) BPM" } ?? "tempo unknown"
        let beat = songBeat.map { ", beat \($0)" } ?? ""
        let total = "total activity \(total)" + (totalFromMaster ? " (from the master)" : "")
        let levels = players.map { "\($0.name) \($0.level)" }
        let link = self.link.map { "\n" + $0.line } ?? ""
        return "jam: \(role), clock master \(master), \(tempo)\(beat); \(total)" + (levels.isEmpty ? "" : " (\(levels.joined(separator: ", ")))") + link
    }
}

extension DaemonStatus.LinkSession {
    /// `link: 2 peers, 97.0 BPM, beat 13.2, phase 1.2 of 4, playing`.
    var line: String {
        let tenth = { (value: Double) in (value * 10).rounded() / 10 }
        return "link: \(counted(peers, "peer")), \(tenth(tempo)) BPM, beat \(tenth(beat)), phase \(tenth(phase)) of \(Int(quantum)), \(playing ? "playing" : "stopped")"
    }
}

extension DaemonStatus.Drums {
    /// `drums: rock, level 2 of 5 (following the activity), bar 3 beat 1, muted: clap; audio playing, 40 hits, 0 late, 0 xruns`;
    /// the style as `rock, funk from the next bar` while a change waits for the bar line, and as
    /// `funk (the route files say rock)` when it is not the route files' (a command chose it).
    var line: String {
        var style = declaredStyle == self.style ? self.style : "\(self.style) (the route files say \(declaredStyle))"
        if let nextStyle, nextStyle != self.style { style = "\(self.style), \(nextStyle) from the next bar" }
        let level = levelKept ? "level \(self.level) (kept)" : "level \(self.level) of \(levels) (following the activity)"
        guard playing, let bar, let beat else { return "drums: \(style), \(level), waiting for the rhythm" }
        let muted = self.muted.isEmpty ? "" : ", muted: \(self.muted.joined(separator: ", "))"
        let audio = self.audio.map { "; audio \($0.playing ? "playing" : "ended"), \($0.hits) hits, \($0.lateHits) late, \($0.xruns) xruns" } ?? ""
        return "drums: \(style), \(level), bar \(bar) beat \(beat)\(muted)\(audio)"
    }
}
