import MIDI

/// An accelerometer stream turned into an activity level 0-127 (the MIA idea without a custom app).
///
/// Each axis passes a one-pole high-pass (gravity and slow tilting removed); the movement energy is the
/// magnitude of the high-passed vector in g; an envelope follower rises with `attack` and falls with `release`;
/// the envelope is mapped linearly from `range` onto 0...127. The level is sent as a controller when it changes, and
/// again every `refreshAfter` while samples come and it is above rest: the jam fades a player 2 s after its last level,
/// and a phone shaken steadily holds one level (127 when shaken hard).
/// Filters use the real time between samples, so irregular rates, repeated or backward timestamps and gaps
/// are all handled; `tick` lets the level fall to 0 once the stream stops.
public struct MotionActivity: Sendable {
    /// The largest acceleration taken from one axis, in g: beyond any sensor, small enough that squares stay finite.
    public static let maxAcceleration = 1e6
    /// Seconds without a sample after which the stream counts as stopped and `tick` releases the envelope.
    public static let staleAfter = 0.25
    /// Seconds after which a level above rest is sent again, unchanged, while samples come: under the jam's 2 s.
    public static let refreshAfter = 1.0

    private let mapping: MotionActivityMapping
    private let gPerUnit: Double
    /// The high-pass's time constant, 1 / (2π cutoff).
    private let highPassTimeConstant: Double
    private let channel: UInt4
    private let controller: UInt7
    /// The level for no movement at all.
    private let restLevel: Int

    /// The low-passed acceleration per axis (what the high-pass removes); nil before the first sample.
    private var gravity: (x: Double, y: Double, z: Double)?
    /// The envelope of the movement energy, in g.
    private var envelope = 0.0
    /// The activity level last sent (0 before any).
    public private(set) var level = 0
    /// When the level was last sent.
    private var sentTime = -Double.infinity
    private var sampleTime = 0.0
    private var envelopeTime = 0.0

    /// An activity follower for `mapping`; its controller and channel are clamped into MIDI's ranges.
    public init(mapping: MotionActivityMapping) {
        self.mapping = mapping
        let perUnit = 1 / mapping.unitsPerG
        gPerUnit = perUnit.isFinite && perUnit > 0 ? perUnit : 1
        highPassTimeConstant = 1 / (2 * Double.pi * mapping.highPass)
        channel = UInt4(masking: UInt8(clamping: min(max(mapping.channel, 1), 16) - 1))
        controller = UInt7(clamping: mapping.controller)
        restLevel = Self.level(for: 0, in: mapping.range)
    }

    /// True while the level has not fallen to where no movement puts it (0 unless `range` says otherwise),
    /// so the endpoint keeps calling `tick` until it has.
    public var needsTick: Bool { gravity != nil && level != restLevel }

    /// Takes one sample (in the stream's units, finite) taken at `time` seconds, and sends the level if it changed.
    public mutating func feed(x: Double, y: Double, z: Double, at time: Double, emit: (MIDIMessage) -> Void) {
        let sample = (x: clampedAcceleration(x), y: clampedAcceleration(y), z: clampedAcceleration(z))
        guard time.isFinite else { return }
        guard var low = gravity else {
            gravity = sample
            sampleTime = time
            envelopeTime = time
            return
        }
        let elapsed = time - sampleTime
        if elapsed > 0 {
            let step = smoothingStep(elapsed: elapsed, timeConstant: highPassTimeConstant)
            low.x += (sample.x - low.x) * step
            low.y += (sample.y - low.y) * step
            low.z += (sample.z - low.z) * step
            gravity = low
        }
        sampleTime = time
        let (dx, dy, dz) = (sample.x - low.x, sample.y - low.y, sample.z - low.z)
        follow((dx * dx + dy * dy + dz * dz).squareRoot(), at: time)
        send(at: time, emit: emit)
    }

    /// Lets the level fall once no sample came for `staleAfter` seconds, as if the energy had been 0 since the last one.
    public mutating func tick(at time: Double, emit: (MIDIMessage) -> Void) {
        // A clock that went back (a restarted stream's timestamps) counts as a stop too.
        guard gravity != nil, time - sampleTime > Self.staleAfter || time < sampleTime, time.isFinite else { return }
        follow(0, at: time)
        send(at: time, emit: emit)
    }

    /// `value` in g, clamped to ±`maxAcceleration`; NaN gives 0.
    private func clampedAcceleration(_ value: Double) -> Double {
        let g = value * gPerUnit
        return g.isNaN ? 0 : min(max(g, -Self.maxAcceleration), Self.maxAcceleration)
    }

    /// Moves the envelope toward `energy` for the time since it was last moved.
    private mutating func follow(_ energy: Double, at time: Double) {
        let elapsed = time - envelopeTime
        envelopeTime = time
        guard elapsed > 0 else { return }
        let timeConstant = energy > envelope ? mapping.attack : mapping.release
        envelope += (energy - envelope) * smoothingStep(elapsed: elapsed, timeConstant: timeConstant)
    }

    /// The level 0...127 for `envelope`: `range` mapped linearly onto 0...127, clamped.
    private static func level(for envelope: Double, in range: ClosedRange<Double>) -> Int {
        let low = range.lowerBound, span = range.upperBound - low
        let position = span.isFinite && span > 0 ? clampedUnit((envelope - low) / span) : (envelope > low ? 1 : 0)
        return Int((position * 127).rounded(.toNearestOrEven))
    }

    /// Sends the level for the current envelope if it differs from the one last sent, or if it is above rest and was
    /// last sent `refreshAfter` ago (or at a later time: the clock went back).
    private mutating func send(at time: Double, emit: (MIDIMessage) -> Void) {
        let newLevel = Self.level(for: envelope, in: mapping.range)
        let due = newLevel != restLevel && !(time >= sentTime && time - sentTime < Self.refreshAfter)
        guard newLevel != level || due else { return }
        level = newLevel
        sentTime = time
        emit(.controlChange(channel: channel, controller: controller, value: UInt7(clamping: newLevel)))
    }
}
