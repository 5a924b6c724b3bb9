import MIDI

/// Where a transport message came from, as the clock election knows it.
public enum ClockSource: Hashable, Sendable, CustomStringConvertible {
    /// An endpoint of this instance (an ALSA port, an OSC controller, jambridge's own start command), by name.
    case local(String)
    /// A peer of the RTP-MIDI session (another jambridge, a Mac, pymidi), by SSRC, with the name it gave.
    case peer(ssrc: UInt32, name: String)

    /// The name policies match: the endpoint's, or the peer's session name.
    public var name: String {
        switch self {
        case .local(let name), .peer(_, let name): return name
        }
    }

    public var description: String {
        switch self {
        case .local(let name): return name
        case .peer(let ssrc, let name): return "\(name) (peer \(String(ssrc, radix: 16, uppercase: true)))"
        }
    }
}

/// The transport commands the election rules on.
public enum TransportCommand: Sendable, Equatable {
    case start, stop, `continue`, songPosition, tempo

    /// The command `message` is, or nil for messages the election does not rule on (clock ticks included).
    public init?(_ message: MIDIMessage) {
        switch message {
        case .start: self = .start
        case .stop: self = .stop
        case .continue: self = .continue
        case .songPosition: self = .songPosition
        default: return nil
        }
    }
}

/// This instance's part in the rhythm.
public enum ClockRole: String, Sendable {
    /// No rhythm runs: anyone may start one.
    case idle
    /// One of this instance's sources leads: it sends clock and the total activity.
    case master
    /// A peer leads: this instance follows its clock and sends its players' activity.
    case follower
}

/// How the clock master is chosen, and what happens when it goes (the route file's `clock:` block).
public struct ElectionConfiguration: Sendable, Equatable {
    /// Who may lead.
    public enum Policy: Sendable, Equatable {
        /// Whoever starts the rhythm leads until it stops it (MIA).
        case firstStart
        /// Only this source may start the rhythm (a hardware drum machine always leads).
        case fixed(NameGlob)
        /// Anyone may start; a source earlier in the list takes over from one later or unlisted (a teacher's device).
        case priority([NameGlob])
    }

    /// What a master leaving (BY, timeout, unplug, silence) does.
    public enum MasterLost: Sendable, Equatable {
        /// The rhythm ends.
        case stop
        /// This instance continues the song, unless another got there first (the earliest wins, as for a start).
        case next
    }

    public var policy: Policy
    public var onMasterLost: MasterLost
    /// This instance's SSRC in the session: the tie-break its own sources carry.
    public var ssrc: UInt32
    /// This instance's session name: the source a takeover comes from, as peers see it.
    public var name: String

    public init(ssrc: UInt32, name: String, policy: Policy = .firstStart, onMasterLost: MasterLost = .stop) {
        self.ssrc = ssrc
        self.name = name
        self.policy = policy
        self.onMasterLost = onMasterLost
    }
}

/// A change of clock master: one log line.
///
/// When `role` goes from master to follower (a peer `wonStart` or `outranks`), stop the generator without
/// sending Stop: the winner's clock carries the song. On `tookOver`, continue the song where the follower
/// had it (song position, Continue, ticks), and send that to the session.
public struct LeadershipChange: Sendable, Equatable, CustomStringConvertible {
    /// How the new master came to lead, or why none does.
    public enum Reason: Sendable, Equatable {
        /// It started the rhythm while none ran (or just after the last master ended it).
        case started
        /// Its start raced the master's and came first (or, within `ClockElection.simultaneity`, has the lower SSRC).
        case wonStart
        /// It started and ranks above the master in the `priority` list.
        case outranks
        /// The master left and this instance continues the song (`on-master-lost: next`).
        case tookOver
        /// The master stopped the rhythm.
        case stopped
        /// The master left and the rhythm ended.
        case left
    }

    /// Who leads now; nil when no rhythm runs.
    public var master: ClockSource?
    /// Who led before.
    public var previous: ClockSource?
    /// This instance's role now.
    public var role: ClockRole
    public var reason: Reason

    public var description: String {
        let previous = self.previous.map(String.init(describing:)) ?? "nobody"
        let why: String
        switch reason {
        case .started: why = self.previous == nil ? "started the rhythm" : "started the rhythm after \(previous)"
        case .wonStart: why = "won the start over \(previous)"
        case .outranks: why = "outranks \(previous)"
        case .tookOver: why = "continues the song \(previous) left"
        case .stopped: why = "\(previous) stopped the rhythm"
        case .left: why = "\(previous) left"
        }
        let lead = master.map { "clock master: \($0)" } ?? "no clock master"
        return "\(lead) (\(why)); this instance is \(role == .master ? "the master" : role.rawValue)"
    }
}

/// What the election made of a transport message.
public struct ElectionVerdict: Sendable, Equatable {
    /// True if the message goes on (to the session, sinks, follower or generator); false if it is refused.
    public var accepted: Bool
    /// The change of master it caused, if any.
    public var change: LeadershipChange?
}

/// Who leads the rhythm (MIA 7.3): whoever starts it while none runs, until it stops, with the same answer on
/// every instance of a session.
///
/// Instances agree because each rules on the same messages the same way. A start carries its sender time on
/// the common clock (an RTP timestamp through the CK offset; `now` for local sources). Two starts compare by
/// `priority` rank, then by sender time if more than `simultaneity` apart, then by SSRC (the lower wins; a
/// local source has this instance's). Starts closer than that were made before either instance could have
/// heard the other, and CK offsets are off by about a millisecond: ordering such starts by time could make
/// two instances disagree, ordering them by SSRC cannot. The loser stops at once and follows.
///
/// While a rhythm runs, transport from anyone but the master is refused (counted); a refused start is
/// remembered, and if the master stops or leaves within `simultaneity` before it, it leads (a peer that heard
/// the stop first started at once). Pure: time is passed in.
public struct ClockElection: Sendable {
    /// Starts closer than this (nanoseconds) are simultaneous: the lower SSRC wins. Above any LAN's one-way delay.
    public static let simultaneity: UInt64 = 100_000_000
    /// Changes of master closer than this (nanoseconds) to the previous one count as flapping.
    public static let flapInterval: UInt64 = 250_000_000
    /// Refused starts remembered at once.
    static let rememberedStarts = 8

    /// What was refused and resolved, for status and logs.
    public struct Counters: Equatable, Sendable {
        /// Transport from a source that was not the master while a rhythm ran, or not allowed to start.
        public var refused = 0
        /// Starts from other sources within `simultaneity` of the master's.
        public var races = 0
        /// Changes of master within `flapInterval` of the one before.
        public var flaps = 0
        /// Two masters made one: a refused start whose song kept running won when judged again (`rivalsRun`).
        public var healed = 0
    }

    /// A claim to lead: a start or continue, with what decides between claims.
    private struct Claim: Sendable {
        var source: ClockSource
        var time: MonotonicInstant
        var rank: Int
        var ssrc: UInt32
    }

    public let configuration: ElectionConfiguration
    public private(set) var counters = Counters()
    private var leader: Claim?
    /// Starts refused while a master ran, oldest first.
    private var refusedStarts: [Claim] = []
    private var lastChange: MonotonicInstant?

    public init(configuration: ElectionConfiguration) {
        self.configuration = configuration
    }

    /// Who leads; nil while no rhythm runs.
    public var master: ClockSource? { leader?.source }

    /// This instance's role.
    public var role: ClockRole {
        switch leader?.source {
        case nil: return .idle
        case .local?: return .master
        case .peer?: return .follower
        }
    }

    /// Rules on `command` from `source`, sent at `senderTime` on the common clock, received `now`.
    public mutating func receive(_ command: TransportCommand, from source: ClockSource, senderTime: MonotonicInstant,
                                 now: MonotonicInstant) -> ElectionVerdict {
        let claim = Claim(source: source, time: senderTime, rank: rank(of: source),
                          ssrc: source.ssrc(local: configuration.ssrc))
        guard let leader else {
            switch command {
            case .start, .continue:
                guard mayStart(source) else { return refuse() }
                return ElectionVerdict(accepted: true, change: lead(claim, reason: .started, previous: nil, now: now))
            case .stop: return ElectionVerdict(accepted: true)
            case .songPosition, .tempo: return mayStart(source) ? ElectionVerdict(accepted: true) : refuse()
            }
        }
        if source == leader.source {
            guard command == .stop else { return ElectionVerdict(accepted: true) }
            return ElectionVerdict(accepted: true, change: end(at: senderTime, reason: .stopped, now: now))
        }
        switch command {
        case .start, .continue:
            if abs(claim.time.nanoseconds(since: leader.time)) <= Double(Self.simultaneity) { counters.races += 1 }
            guard mayStart(source) else { return refuse() }
            if precedes(claim, leader) {
                let reason: LeadershipChange.Reason = claim.rank < leader.rank ? .outranks : .wonStart
                return ElectionVerdict(accepted: true, change: lead(claim, reason: reason, previous: leader.source, now: now))
            }
            refusedStarts.removeAll { $0.source == source }
            if refusedStarts.count == Self.rememberedStarts { refusedStarts.removeFirst() }
            refusedStarts.append(claim)
        case .stop:
            refusedStarts.removeAll { $0.source == source }
        case .songPosition, .tempo:
            break
        }
        return refuse()
    }

    /// Sources whose starts were refused keep playing songs of their own (their clocks heard for a beat while
    /// another leads): masters each of which refused the others' starts. Their claims are judged again against the
    /// leader's, start times less than `window` apart counting as simultaneous (lower SSRC first): each instance may
    /// have read the others' starts later than they were sent (with no clock-sync offset yet, or repaired from a
    /// journal, a start counts as sent when it came), so each saw its own as first; judged so, every instance picks
    /// the same. Once per claim: a judged claim is forgotten whichever wins; the claims of sources not judged are kept
    /// (a third master, judged when its clock is heard). Returns the change if one of `sources` leads now.
    public mutating func rivalsRun(_ sources: [ClockSource], window: UInt64, now: MonotonicInstant) -> LeadershipChange? {
        guard let leader else { return nil }
        let judged = refusedStarts.filter { sources.contains($0.source) }
        refusedStarts.removeAll { sources.contains($0.source) }
        func beats(_ a: Claim, _ b: Claim) -> Bool {
            let gap = a.time.nanoseconds(since: b.time)
            return a.rank != b.rank ? a.rank < b.rank : abs(gap) <= Double(window) ? a.ssrc < b.ssrc : gap < 0
        }
        let best = judged.reduce(leader) { beats($1, $0) ? $1 : $0 }
        guard best.source != leader.source else { return nil }
        counters.healed += 1
        let kept = refusedStarts
        let change = lead(best, reason: .wonStart, previous: leader.source, now: now)
        refusedStarts = kept
        return change
    }

    /// `source` is gone (BY, timeout, unplugged, or its clock fell silent): if it led, the rhythm ends or is
    /// handed over.
    public mutating func sourceLeft(_ source: ClockSource, now: MonotonicInstant) -> LeadershipChange? {
        refusedStarts.removeAll { $0.source == source }
        guard leader?.source == source else { return nil }
        return end(at: now, reason: .left, now: now)
    }

    /// The master's rhythm ended at `time`: a start refused since leads, else a takeover or nobody.
    private mutating func end(at time: MonotonicInstant, reason: LeadershipChange.Reason, now: MonotonicInstant) -> LeadershipChange {
        let previous = leader?.source
        let heirs = refusedStarts.filter { $0.time.nanoseconds(since: time) >= -Double(Self.simultaneity) }
        if let heir = heirs.min(by: precedes) {
            return lead(heir, reason: .started, previous: previous, now: now)
        }
        let us = ClockSource.local(configuration.name)
        if reason == .left, configuration.onMasterLost == .next, mayStart(us) {
            let claim = Claim(source: us, time: now, rank: rank(of: us), ssrc: configuration.ssrc)
            return lead(claim, reason: .tookOver, previous: previous, now: now)
        }
        return lead(nil, reason: reason, previous: previous, now: now)
    }

    private mutating func lead(_ claim: Claim?, reason: LeadershipChange.Reason, previous: ClockSource?,
                               now: MonotonicInstant) -> LeadershipChange {
        if let last = lastChange, now >= last, now.nanoseconds - last.nanoseconds < Self.flapInterval { counters.flaps += 1 }
        lastChange = now
        leader = claim
        refusedStarts.removeAll()
        return LeadershipChange(master: claim?.source, previous: previous, role: role, reason: reason)
    }

    private mutating func refuse() -> ElectionVerdict {
        counters.refused += 1
        return ElectionVerdict(accepted: false)
    }

    /// True if `a` should lead rather than `b`: rank, then sender time beyond `simultaneity`, then the lower
    /// SSRC; two sources of one instance within `simultaneity` keep the one that came first.
    private func precedes(_ a: Claim, _ b: Claim) -> Bool {
        if a.rank != b.rank { return a.rank < b.rank }
        let gap = a.time.nanoseconds(since: b.time)
        if abs(gap) > Double(Self.simultaneity) { return gap < 0 }
        return a.ssrc < b.ssrc
    }

    private func mayStart(_ source: ClockSource) -> Bool {
        if case .fixed(let glob) = configuration.policy { return glob.matches(source.name) }
        return true
    }

    /// 0 for the highest; a `priority` list's unlisted sources rank below all listed.
    private func rank(of source: ClockSource) -> Int {
        guard case .priority(let globs) = configuration.policy else { return 0 }
        return globs.firstIndex { $0.matches(source.name) } ?? globs.count
    }
}

extension ClockSource {
    /// The SSRC that breaks ties: the peer's, or this instance's for a local source.
    fileprivate func ssrc(local: UInt32) -> UInt32 {
        if case .peer(let ssrc, _) = self { return ssrc }
        return local
    }
}
