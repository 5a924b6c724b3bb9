#if canImport(Glibc)
import Glibc
#endif
import MIDI

/// A controller on a channel: where activity levels and the total travel.
public struct ControllerAddress: Hashable, Sendable {
    public var channel: UInt4
    public var controller: UInt7
    public init(channel: UInt4, controller: UInt7) {
        self.channel = channel
        self.controller = controller
    }

    /// The value if `message` is this controller, else nil.
    public func value(in message: MIDIMessage) -> UInt7? {
        guard case .controlChange(channel, controller, let value) = message else { return nil }
        return value
    }

    /// This controller set to `value`.
    public func message(_ value: UInt7) -> MIDIMessage {
        .controlChange(channel: channel, controller: controller, value: value)
    }
}

/// The `activity:` block: which controllers carry the levels and the total, and how levels combine.
public struct ActivityConfiguration: Sendable, Equatable {
    /// How the players' levels make the total.
    public enum Combine: Sendable, Equatable {
        /// The sum, held at 127 (MIA: "the sum of the activity level of all the participants").
        case sum
        /// The mean of the players known.
        case mean
        /// The busiest player's level.
        case max
    }

    /// Each player's level (MIA: CC 11, expression, on channel 1).
    public var player: ControllerAddress
    /// The session's total (MIA: CC 7, channel volume, on channel 1).
    public var total: ControllerAddress
    public var combine: Combine

    public init(player: ControllerAddress = ControllerAddress(channel: UInt4(masking: 0), controller: UInt7(masking: 11)),
                total: ControllerAddress = ControllerAddress(channel: UInt4(masking: 0), controller: UInt7(masking: 7)),
                combine: Combine = .sum) {
        self.player = player
        self.total = total
        self.combine = combine
    }
}

/// The session's total activity (MIA 8.2.1): the latest level of each player, keyed by who sent it,
/// combined, and sent at a bounded rate when it changes.
///
/// A player quiet for `holdTime` decays (halving every `halfLife`); one quiet for `forgetTime` is dropped, and
/// one that leaves is dropped at once. Every instance keeps the levels it hears, but only the master sends the
/// total (`lead`): it starts from the last total it heard, which fades like a quiet player and holds the total
/// up until the players' own levels take over, so a change of master makes no jump. Pure: time is passed in.
public struct ActivityAggregator<Player: Hashable & Sendable>: Sendable {
    /// Nanoseconds a player's level holds after its last message.
    public static var holdTime: UInt64 { 2_000_000_000 }
    /// Nanoseconds in which a quiet player's level halves after `holdTime`.
    public static var halfLife: UInt64 { 1_000_000_000 }
    /// Nanoseconds after its last message when a quiet player is dropped (it then counts as 0 for `mean`).
    public static var forgetTime: UInt64 { 30_000_000_000 }
    /// Nanoseconds between two totals sent: at most 20 a second.
    public static var interval: UInt64 { 50_000_000 }
    /// Players kept at once; levels from more are counted and ignored.
    public static var maxPlayers: Int { 256 }

    /// What was ignored, for status.
    public struct Counters: Equatable, Sendable {
        /// Levels from players beyond `maxPlayers`.
        public var ignoredLevels = 0
    }

    private struct Level: Sendable {
        var value: Double
        var heard: MonotonicInstant

        /// The level at `now`: held, then halving every `halfLife`.
        func value(at now: MonotonicInstant) -> Double {
            let quiet = now.nanoseconds(since: heard) - Double(ActivityAggregator.holdTime)
            guard quiet > 0 else { return value }
            return value * exp2(-quiet / Double(ActivityAggregator.halfLife))
        }
    }

    public let configuration: ActivityConfiguration
    public private(set) var counters = Counters()
    /// True while this instance is the master and sends the total.
    public private(set) var isLeading = false
    private var levels: [Player: Level] = [:]
    /// The total this instance last heard from a master, or last sent: where a new lead starts.
    private var heard: Level?
    private var lastSent: UInt7?
    private var lastSentTime: MonotonicInstant?

    public init(configuration: ActivityConfiguration = ActivityConfiguration()) {
        self.configuration = configuration
    }

    /// Players with a level.
    public var playerCount: Int { levels.count }

    /// Takes `message` if it is the player controller (a level from `player`) or the total controller (a
    /// total heard from the master); returns false for anything else.
    public mutating func receive(_ message: MIDIMessage, from player: Player, now: MonotonicInstant) -> Bool {
        if let level = configuration.player.value(in: message) {
            setLevel(level, for: player, now: now)
        } else if let total = configuration.total.value(in: message) {
            if !isLeading { heard = Level(value: Double(total.value), heard: now) }
        } else {
            return false
        }
        return true
    }

    /// `player`'s level is `level` from `now`.
    public mutating func setLevel(_ level: UInt7, for player: Player, now: MonotonicInstant) {
        guard levels[player] != nil || levels.count < Self.maxPlayers else {
            counters.ignoredLevels += 1
            return
        }
        levels[player] = Level(value: Double(level.value), heard: now)
    }

    /// Each player's level at `now`, for status.
    public func levels(at now: MonotonicInstant) -> [(player: Player, level: UInt7)] {
        levels.map { ($0.key, UInt7(clamping: Int($0.value.value(at: now).rounded()))) }
    }

    /// `player` left: its level no longer counts.
    public mutating func remove(_ player: Player) {
        levels[player] = nil
    }

    /// This instance became the master: send the total from now, starting from the last total heard.
    public mutating func lead(now: MonotonicInstant) {
        guard !isLeading else { return }
        isLeading = true
        lastSent = heard.map { UInt7(clamping: Int($0.value(at: now).rounded())) }
        lastSentTime = nil
        if var heard {
            heard.value = heard.value(at: now)
            heard.heard = now
            self.heard = heard
        }
    }

    /// The last total heard from the master, as heard (nil before one, or while leading).
    public var heardTotal: UInt7? {
        isLeading ? nil : heard.map { UInt7(clamping: Int($0.value.rounded())) }
    }

    /// This instance no longer leads: keep the levels, send nothing.
    public mutating func follow() {
        isLeading = false
    }

    /// The total at `now`: the players combined, and no lower than the faded total a lead started from.
    public func total(at now: MonotonicInstant) -> UInt7 {
        let values = levels.values.lazy.map { $0.value(at: now) }
        var combined: Double
        switch configuration.combine {
        case .sum: combined = values.reduce(0, +)
        case .mean: combined = levels.isEmpty ? 0 : values.reduce(0, +) / Double(levels.count)
        case .max: combined = values.max() ?? 0
        }
        if isLeading, let heard { combined = Swift.max(combined, heard.value(at: now)) }
        return UInt7(clamping: Int(combined.rounded()))
    }

    /// While leading: the total controller to send at `now`, if the total changed and `interval` has passed
    /// since the last one. Drops players quiet for `forgetTime`.
    public mutating func tick(now: MonotonicInstant) -> MIDIMessage? {
        let forgotten = { (level: Level) in now.nanoseconds(since: level.heard) >= Double(Self.forgetTime) }
        if levels.values.contains(where: forgotten) { levels = levels.filter { !forgotten($0.value) } }
        guard isLeading else { return nil }
        if let last = lastSentTime, now.nanoseconds(since: last) < Double(Self.interval) { return nil }
        let total = total(at: now)
        guard total != lastSent else { return nil }
        lastSent = total
        lastSentTime = now
        return configuration.total.message(total)
    }

    /// When to call `tick` next while leading: the end of the current interval; nil when not leading.
    public var nextDeadline: MonotonicInstant? {
        guard isLeading else { return nil }
        return lastSentTime?.advanced(byNanoseconds: Self.interval) ?? MonotonicInstant(nanoseconds: 0)
    }
}
