import MIDI
import RouteFile

/// What an input mapper did with one OSC message.
public enum OSCMapOutcome: Hashable, Sendable {
    /// An entry or the MIDI-over-OSC family took it (what it sent may be nothing: an unchanged value).
    case mapped
    /// No entry matches its address, and it is not a family message the mapping understands.
    case unmatched
    /// An entry or the family took it but could not map it.
    case rejected(OSCRejection)
}

/// Why an OSC message could not be mapped: its address and what was wrong.
public struct OSCRejection: Error, Hashable, Sendable, CustomStringConvertible {
    /// What was wrong.
    public enum Reason: Error, Hashable, Sendable {
        /// The mapping reads argument `index`, but the message has only `count`.
        case missingArgument(index: Int, count: Int)
        /// Argument `index` has a type the mapping cannot read as a number.
        case wrongType(index: Int, typeTag: Character)
        /// Argument `index` is NaN or infinite.
        case notFinite(index: Int, typeTag: Character)
        /// The channel computed from the address is outside 1-16 (nil: it cannot be computed, e.g. it overflows).
        case channelOutOfRange(Int?)
        /// The controller computed from the address is outside 0-127.
        case controllerOutOfRange(Int?)
        /// The note computed from the address is outside 0-127.
        case noteOutOfRange(Int?)
        /// Argument `index` of a MIDI-over-OSC message, rounded, is outside `allowed`.
        case valueOutOfRange(index: Int, value: Double, allowed: ClosedRange<Int>)
        /// A MIDI-over-OSC message with the wrong number of arguments.
        case wrongArgumentCount(count: Int, allowed: ClosedRange<Int>)

        /// The reason without its details, for counting.
        public var kind: Kind {
            switch self {
            case .missingArgument: .missingArgument
            case .wrongType: .wrongType
            case .notFinite: .notFinite
            case .channelOutOfRange: .channelOutOfRange
            case .controllerOutOfRange: .controllerOutOfRange
            case .noteOutOfRange: .noteOutOfRange
            case .valueOutOfRange: .valueOutOfRange
            case .wrongArgumentCount: .wrongArgumentCount
            }
        }
    }

    /// The kinds of reason, for counters.
    public enum Kind: Int, CaseIterable, Hashable, Sendable, CustomStringConvertible {
        case missingArgument, wrongType, notFinite, channelOutOfRange, controllerOutOfRange, noteOutOfRange
        case valueOutOfRange, wrongArgumentCount

        /// A short name for logs and stats, e.g. `wrong type`.
        public var description: String {
            switch self {
            case .missingArgument: "missing argument"
            case .wrongType: "wrong type"
            case .notFinite: "not finite"
            case .channelOutOfRange: "channel out of range"
            case .controllerOutOfRange: "controller out of range"
            case .noteOutOfRange: "note out of range"
            case .valueOutOfRange: "value out of range"
            case .wrongArgumentCount: "wrong argument count"
            }
        }
    }

    /// The message's address.
    public var address: String
    /// What was wrong.
    public var reason: Reason

    /// The rejection of a message to `address` for `reason`.
    public init(address: String, reason: Reason) {
        self.address = address
        self.reason = reason
    }

    /// One line for the log, e.g. `/1/fader1: argument 0 has type 's', which is not a number here (...)`.
    public var description: String {
        let what: String
        switch reason {
        case .missingArgument(let index, let count):
            what = "argument \(index) is missing (the message has \(count) argument\(count == 1 ? "" : "s"))"
        case .wrongType(let index, let tag):
            what = "argument \(index) has type '\(tag)', which is not a number here (f, d, i, h; T/F for controls)"
        case .notFinite(let index, let tag):
            what = "argument \(index) ('\(tag)') is NaN or infinite"
        case .channelOutOfRange(let channel):
            what = channel.map { "channel \($0) is outside 1-16" } ?? "the channel cannot be computed from the address"
        case .controllerOutOfRange(let controller):
            what = controller.map { "controller \($0) is outside 0-127" } ?? "the controller cannot be computed from the address"
        case .noteOutOfRange(let note):
            what = note.map { "note \($0) is outside 0-127" } ?? "the note cannot be computed from the address"
        case .valueOutOfRange(let index, let value, let allowed):
            let shown = abs(value) < 1e15 && value == value.rounded() ? String(Int(value)) : String(value)
            what = "argument \(index) is \(shown), outside \(allowed.lowerBound)...\(allowed.upperBound)"
        case .wrongArgumentCount(let count, let allowed):
            what = "\(count) argument\(count == 1 ? "" : "s"); expected \(allowed.lowerBound) or \(allowed.upperBound)"
        }
        return "\(address): \(what)"
    }
}

/// How many messages were rejected, per kind of reason.
public struct OSCRejectionCounts: Hashable, Sendable {
    private var counts = [Int](repeating: 0, count: OSCRejection.Kind.allCases.count)

    /// No rejections yet.
    public init() {}

    /// The rejections of `kind`.
    public subscript(kind: OSCRejection.Kind) -> Int { counts[kind.rawValue] }

    /// Every rejection.
    public var total: Int { counts.reduce(0, +) }

    mutating func count(_ kind: OSCRejection.Kind) { counts[kind.rawValue] += 1 }
}

/// Turns the OSC messages of one route from an OSC endpoint into MIDI, by the route's `osc:` block.
///
/// Entries are tried in order and the first whose template matches takes the message; then, with `midi` on,
/// the MIDI-over-OSC family. A value is sent only when it changes (per channel and controller, per channel for
/// bend, program and pressure, per note); smoothing moves toward each new value over time, so the endpoint
/// calls `tick` while `needsTick` is true. Times are monotonic seconds, passed in.
public struct OSCInputMapper: Sendable {
    private enum Target: Sendable {
        case controllers([ResolvedNumber])
        case note(ResolvedNumber, velocity: UInt7)
        case value(slot: Int) // pitch bend, program or channel pressure: the slot on channel 1
    }

    private struct Control: Sendable {
        let target: Target
        let channel: ResolvedNumber
        let arguments: [Int]
        let curve: OSCControlCurve
        /// Seconds; 0 for none.
        let smoothing: Double
    }

    private enum Action: Sendable {
        case control(Control)
        /// An index into `motions`, with the argument indexes of x, y and z (at most three).
        case motion(Int, axes: [Int])
    }

    private let entries: [(template: OSCAddressTemplate, action: Action)]
    private let family: Bool
    private var motions: [MotionActivity] = []
    private var outputs = SmoothedOutputs()
    private var notesOn = [Bool](repeating: false, count: MIDISlot.count - MIDISlot.note)
    /// Reused per message: the captured values, and the argument values read.
    private var captures: [Int] = []
    private var values: [Double] = []

    /// Rejections so far, by kind.
    public private(set) var rejections = OSCRejectionCounts()

    /// A mapper for one route's `osc:` block.
    public init(mapping: OSCRouteMapping) {
        family = mapping.midi
        var motions: [MotionActivity] = []
        var maxArguments = 3
        entries = mapping.entries.map { entry in
            switch entry.action {
            case .control(let control):
                maxArguments = max(maxArguments, control.arguments.count)
                return (entry.template, .control(Self.compile(control, entry.template)))
            case .motion(let motion):
                motions.append(MotionActivity(mapping: motion))
                return (entry.template, .motion(motions.count - 1, axes: Array(motion.axes.prefix(3))))
            }
        }
        self.motions = motions
        captures.reserveCapacity(entries.map { $0.template.captureNames.count }.max() ?? 0)
        values.reserveCapacity(maxArguments)
    }

    private static func compile(_ control: OSCControlMapping, _ template: OSCAddressTemplate) -> Control {
        let target: Target
        switch control.target {
        case .controllers(let numbers): target = .controllers(numbers.map { ResolvedNumber($0, in: template) })
        case .note(let note, let velocity):
            target = .note(ResolvedNumber(note, in: template), velocity: UInt7(clamping: max(velocity, 1)))
        case .pitchBend: target = .value(slot: MIDISlot.bend)
        case .program: target = .value(slot: MIDISlot.program)
        case .channelPressure: target = .value(slot: MIDISlot.pressure)
        }
        let smoothing = control.smoothing.isFinite && control.smoothing > 0 ? control.smoothing : 0
        return Control(target: target, channel: ResolvedNumber(control.channel, in: template),
                       arguments: control.arguments.isEmpty ? [0] : control.arguments, curve: OSCControlCurve(control),
                       smoothing: smoothing)
    }

    /// True while a smoothed value or an activity level is still moving: call `tick` about every 10 ms.
    public var needsTick: Bool { outputs.needsTick || motions.contains { $0.needsTick } }

    /// Maps `message`, received at `time`, sending the MIDI it makes through `emit`; counts a rejection.
    public mutating func map(_ message: OSCMessage, at time: Double, emit: (MIDIMessage) -> Void) -> OSCMapOutcome {
        let outcome: OSCMapOutcome
        do throws(OSCRejection.Reason) {
            outcome = try route(message, at: time, emit: emit)
        } catch {
            rejections.count(error.kind)
            outcome = .rejected(OSCRejection(address: message.address, reason: error))
        }
        return outcome
    }

    /// Moves smoothed values and activity levels on to `time`, sending what changed.
    public mutating func tick(at time: Double, emit: (MIDIMessage) -> Void) {
        outputs.tick(at: time, emit: emit)
        for index in motions.indices { motions[index].tick(at: time, emit: emit) }
    }

    private mutating func route(_ message: OSCMessage, at time: Double,
                                emit: (MIDIMessage) -> Void) throws(OSCRejection.Reason) -> OSCMapOutcome {
        for entry in entries where entry.template.match(message.address, into: &captures) {
            switch entry.action {
            case .control(let control): try apply(control, message, at: time, emit: emit)
            case .motion(let index, let axes): try feed(index, axes, message, at: time, emit: emit)
            }
            return .mapped
        }
        guard family, let mapped = try Self.mapFamily(message) else { return .unmatched }
        emit(mapped)
        return .mapped
    }

    // MARK: Controls

    private mutating func apply(_ control: Control, _ message: OSCMessage, at time: Double,
                                emit: (MIDIMessage) -> Void) throws(OSCRejection.Reason) {
        values.removeAll(keepingCapacity: true)
        let count: Int
        if case .controllers(let numbers) = control.target { count = min(numbers.count, control.arguments.count) } else { count = 1 }
        for position in 0..<count {
            values.append(try Self.number(message, control.arguments[position], bools: control.curve.input))
        }
        guard let channelNumber = control.channel.value(captures), channelNumber >= 1, channelNumber <= 16 else {
            throw .channelOutOfRange(control.channel.value(captures))
        }
        let channel = channelNumber - 1
        switch control.target {
        case .controllers(let numbers):
            for position in 0..<count {
                guard let controller = numbers[position].value(captures), controller >= 0, controller <= 127 else {
                    throw .controllerOutOfRange(numbers[position].value(captures))
                }
            }
            for position in 0..<count {
                let slot = channel << 7 | numbers[position].value(captures)! // checked just above
                setOutput(slot, control.curve.output(for: values[position]), control, at: time, emit: emit)
            }
        case .note(let number, let velocity):
            guard let note = number.value(captures), note >= 0, note <= 127 else {
                throw .noteOutOfRange(number.value(captures))
            }
            let on = control.curve.position(of: values[0]) > 0.5
            let key = channel << 7 | note
            guard notesOn[key] != on else { return }
            notesOn[key] = on
            let (c, n) = (UInt4(masking: UInt8(channel)), UInt7(masking: UInt8(note)))
            emit(on ? .noteOn(channel: c, note: n, velocity: velocity) : .noteOff(channel: c, note: n, velocity: .zero))
        case .value(let slot):
            setOutput(slot + channel, control.curve.output(for: values[0]), control, at: time, emit: emit)
        }
    }

    private mutating func setOutput(_ slot: Int, _ value: Double, _ control: Control, at time: Double,
                                    emit: (MIDIMessage) -> Void) {
        let domain = MIDISlot.domain(of: slot)
        outputs.set(slot, to: min(max(value, domain.lowerBound), domain.upperBound), smoothing: control.smoothing,
                    at: time, emit: emit)
    }

    /// Argument `index` as a finite number: f, d, i, h, and (when `bools` is given) T and F as its ends.
    private static func number(_ message: OSCMessage, _ index: Int,
                               bools: ClosedRange<Double>? = nil) throws(OSCRejection.Reason) -> Double {
        guard index >= 0, index < message.arguments.count else {
            throw .missingArgument(index: index, count: message.arguments.count)
        }
        let argument = message.arguments[index]
        let value: Double
        switch argument {
        case .float(let v): value = Double(v)
        case .double(let v): value = v
        case .int32(let v): value = Double(v)
        case .int64(let v): value = Double(v)
        case .bool(let v):
            guard let bools else { throw .wrongType(index: index, typeTag: argument.typeTag) }
            value = v ? bools.upperBound : bools.lowerBound
        default: throw .wrongType(index: index, typeTag: argument.typeTag)
        }
        guard value.isFinite else { throw .notFinite(index: index, typeTag: argument.typeTag) }
        return value
    }

    // MARK: Motion

    private mutating func feed(_ motion: Int, _ axes: [Int], _ message: OSCMessage, at time: Double,
                               emit: (MIDIMessage) -> Void) throws(OSCRejection.Reason) {
        var xyz = (0.0, 0.0, 0.0)
        if axes.count > 0 { xyz.0 = try Self.number(message, axes[0]) }
        if axes.count > 1 { xyz.1 = try Self.number(message, axes[1]) }
        if axes.count > 2 { xyz.2 = try Self.number(message, axes[2]) }
        motions[motion].feed(x: xyz.0, y: xyz.1, z: xyz.2, at: time, emit: emit)
    }

    // MARK: MIDI over OSC

    /// The family message `message` stands for; nil if its address is not one of the family's.
    private static func mapFamily(_ message: OSCMessage) throws(OSCRejection.Reason) -> MIDIMessage? {
        let arity: ClosedRange<Int>
        switch message.address {
        case "/note", "/cc": arity = 2...3
        case "/pitchbend", "/program", "/pressure": arity = 1...2
        default: return nil
        }
        let count = message.arguments.count
        guard arity.contains(count) else { throw .wrongArgumentCount(count: count, allowed: arity) }
        let explicitChannel = count == arity.upperBound
        let channel = UInt4(masking: UInt8(explicitChannel ? try integer(message, 0, 1...16) - 1 : 0))
        let first = explicitChannel ? 1 : 0
        func byte(_ index: Int) throws(OSCRejection.Reason) -> UInt7 {
            UInt7(masking: UInt8(try integer(message, index, 0...127)))
        }
        switch message.address {
        case "/note":
            let note = try byte(first), velocity = try byte(first + 1)
            return velocity == .zero ? .noteOff(channel: channel, note: note, velocity: .zero)
                : .noteOn(channel: channel, note: note, velocity: velocity)
        case "/cc": return .controlChange(channel: channel, controller: try byte(first), value: try byte(first + 1))
        case "/pitchbend":
            return .pitchBend(channel: channel, value: UInt14(masking: UInt16(try integer(message, first, -8192...8191) + 8192)))
        case "/program": return .programChange(channel: channel, program: try byte(first))
        default: return .channelPressure(channel: channel, pressure: try byte(first))
        }
    }

    /// Argument `index` as a whole number in `allowed` (floats rounded).
    private static func integer(_ message: OSCMessage, _ index: Int,
                                _ allowed: ClosedRange<Int>) throws(OSCRejection.Reason) -> Int {
        let value = try number(message, index).rounded()
        guard value >= Double(allowed.lowerBound), value <= Double(allowed.upperBound) else {
            throw .valueOutOfRange(index: index, value: value, allowed: allowed)
        }
        return Int(value)
    }
}
