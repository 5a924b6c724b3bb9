import MIDI
import RouteFile

/// Turns MIDI back into OSC for one OSC endpoint (controller feedback), by the inverse of every `osc:` entry on
/// the routes from or to it, and keeps the last message per address as the state a controller is sent when it
/// (re)appears.
///
/// A control entry answers a MIDI message of its kind when its numbers can be solved for the captures (every
/// capture of the template determined, within its range). The value goes back through the output range and curve
/// into the input range, as a float; an XY pad's other axis keeps its last value. Motion entries send nothing.
/// With the MIDI-over-OSC family on, `/note iii`, `/cc iii`, `/pitchbend ii`, `/program ii` and `/pressure ii`
/// are sent too, channel (1-16) first.
public struct OSCFeedbackMapper: Sendable {
    /// The most arguments a feedback message has: an entry reading an argument beyond it sends no feedback.
    public static let maxArguments = 64

    private enum Target: Sendable {
        case controllers([ResolvedNumber])
        case note(ResolvedNumber)
        case value(slot: Int) // pitch bend, program or channel pressure: the slot on channel 1
    }

    private struct Control: Sendable {
        let template: OSCAddressTemplate
        let captureCount: Int
        let target: Target
        let channel: ResolvedNumber
        let arguments: [Int]
        let curve: OSCControlCurve
        /// The feedback message's argument count: one past the highest argument read.
        let argumentCount: Int
    }

    /// Where a message of the state is kept: an entry's address, or a family message's MIDI slot.
    private enum StateKey: Hashable, Sendable {
        case address(String)
        case family(slot: Int)
    }

    private let controls: [Control]
    private let family: Bool
    /// The state: the last message per address (per MIDI slot for the family, notes excepted), in the order
    /// first sent.
    private var state: [OSCMessage] = []
    private var stateIndex: [StateKey: Int] = [:]
    /// Reused per message: the captures solved so far, and all of them once solved.
    private var bindings: [Int?] = []
    private var captures: [Int] = []

    /// A feedback mapper for an endpoint whose routes carry `mappings`.
    public init(mappings: [OSCRouteMapping]) {
        family = mappings.contains { $0.midi }
        controls = mappings.flatMap(\.entries).compactMap { entry -> Control? in
            guard case .control(let control) = entry.action else { return nil }
            let highest = control.arguments.max() ?? 0
            guard highest < Self.maxArguments, control.arguments.allSatisfy({ $0 >= 0 }) else { return nil }
            let template = entry.template
            let target: Target
            switch control.target {
            case .controllers(let numbers): target = .controllers(numbers.map { ResolvedNumber($0, in: template) })
            case .note(let note, _): target = .note(ResolvedNumber(note, in: template))
            case .pitchBend: target = .value(slot: MIDISlot.bend)
            case .program: target = .value(slot: MIDISlot.program)
            case .channelPressure: target = .value(slot: MIDISlot.pressure)
            }
            return Control(template: template, captureCount: template.captureNames.count, target: target, channel: ResolvedNumber(control.channel, in: template),
                           arguments: control.arguments.isEmpty ? [0] : control.arguments,
                           curve: OSCControlCurve(control), argumentCount: highest + 1)
        }
    }

    /// The last message sent to each address, in the order first sent: what a controller that (re)appears is sent.
    public func fullState() -> [OSCMessage] { state }

    /// How many entries the full state has; their indices are stable (new addresses are added at the end).
    public var stateCount: Int { state.count }

    /// Entry `index` of the full state: the last message sent to its address.
    public func stateMessage(at index: Int) -> OSCMessage { state[index] }

    /// Sends through `emit` the OSC messages that show `message` on the endpoint's controllers, each with its
    /// index in the full state (nil for a `/note` of the MIDI-over-OSC family, which the state does not keep).
    public mutating func feedback(for message: MIDIMessage, emit: (OSCMessage, Int?) -> Void) {
        guard let channel = message.channel, let (slot, value) = MIDISlot.slot(of: message) else { return }
        let channelNumber = Int(channel.value) + 1
        for control in controls {
            switch control.target {
            case .controllers(let numbers) where slot < MIDISlot.bend:
                for (position, number) in numbers.enumerated() where position < control.arguments.count {
                    send(control, channelNumber, number, slot & 127, argument: control.arguments[position],
                         control.curve.input(for: Double(value)), emit: emit)
                }
            case .note(let number) where slot >= MIDISlot.note:
                let position = value > 0 ? 1.0 : 0
                send(control, channelNumber, number, (slot - MIDISlot.note) & 127, argument: control.arguments[0],
                     control.curve.input(atPosition: position), emit: emit)
            case .value(let base) where slot == base + Int(channel.value):
                send(control, channelNumber, nil, 0, argument: control.arguments[0],
                     control.curve.input(for: Double(value)), emit: emit)
            default:
                break
            }
        }
        if family { sendFamily(message, slot: slot, emit: emit) }
    }

    /// Sends `control`'s message for channel `channelNumber` and (if `number` is given) controller or note
    /// `midiNumber`, with argument `argument` set to `input`, if the captures can be solved.
    private mutating func send(_ control: Control, _ channelNumber: Int, _ number: ResolvedNumber?, _ midiNumber: Int,
                               argument: Int, _ input: Double, emit: (OSCMessage, Int?) -> Void) {
        bindings.removeAll(keepingCapacity: true)
        bindings.append(contentsOf: repeatElement(nil, count: control.captureCount))
        guard control.channel.bind(channelNumber, into: &bindings),
              number?.bind(midiNumber, into: &bindings) ?? true else { return }
        captures.removeAll(keepingCapacity: true)
        for binding in bindings {
            guard let binding else { return } // a capture the message does not determine
            captures.append(binding)
        }
        guard let address = control.template.address(captures: captures) else { return }
        var arguments: [OSCArgument]
        if let index = stateIndex[.address(address)], state[index].arguments.count == control.argumentCount {
            arguments = state[index].arguments
        } else {
            arguments = Array(repeating: .float(Float(control.curve.input(atPosition: 0))), count: control.argumentCount)
        }
        arguments[argument] = .float(Float(input))
        remember(OSCMessage(address, arguments), as: .address(address), emit: emit)
    }

    private mutating func sendFamily(_ message: MIDIMessage, slot: Int, emit: (OSCMessage, Int?) -> Void) {
        let channel = OSCArgument.int32(Int32(message.channel.map { $0.value + 1 } ?? 1))
        switch message {
        case .noteOn(_, let note, let velocity):
            emit(OSCMessage("/note", [channel, .int32(Int32(note.value)), .int32(Int32(velocity.value))]), nil)
        case .noteOff(_, let note, _):
            emit(OSCMessage("/note", [channel, .int32(Int32(note.value)), .int32(0)]), nil)
        case .controlChange(_, let controller, let value):
            remember(OSCMessage("/cc", [channel, .int32(Int32(controller.value)), .int32(Int32(value.value))]),
                     as: .family(slot: slot), emit: emit)
        case .pitchBend(_, let value):
            remember(OSCMessage("/pitchbend", [channel, .int32(Int32(value.value) - 8192)]), as: .family(slot: slot), emit: emit)
        case .programChange(_, let program):
            remember(OSCMessage("/program", [channel, .int32(Int32(program.value))]), as: .family(slot: slot), emit: emit)
        case .channelPressure(_, let pressure):
            remember(OSCMessage("/pressure", [channel, .int32(Int32(pressure.value))]), as: .family(slot: slot), emit: emit)
        default:
            break
        }
    }

    /// Keeps `message` as the state under `key` and sends it.
    private mutating func remember(_ message: OSCMessage, as key: StateKey, emit: (OSCMessage, Int?) -> Void) {
        let index: Int
        if let known = stateIndex[key] {
            index = known
            state[index] = message
        } else {
            index = state.count
            stateIndex[key] = index
            state.append(message)
        }
        emit(message, index)
    }
}

/// Echo suppression for controller feedback: remembers, per controller, the last MIDI value its own input
/// produced per channel and controller, note, bend, program and pressure, so that value is not sent back to it.
public struct EchoFilter<Controller: Hashable & Sendable>: Sendable {
    /// Per controller, the value its input produced last per MIDI slot; `none` where it produced none or has
    /// since been sent another value.
    private var produced: [Controller: [Int16]] = [:]
    private static var none: Int16 { .min }

    /// A filter that has seen no input yet.
    public init() {}

    /// Records that `controller`'s input produced `message`.
    public mutating func record(_ message: MIDIMessage, from controller: Controller) {
        guard let (slot, value) = MIDISlot.slot(of: message) else { return }
        produced[controller, default: [Int16](repeating: Self.none, count: MIDISlot.count)][slot] = Int16(value)
    }

    /// True if feedback of `message` should go to `controller`: false if that controller itself produced exactly
    /// this value last. Once another value is sent to it, its own earlier value no longer counts.
    public mutating func admits(_ message: MIDIMessage, to controller: Controller) -> Bool {
        guard let (slot, value) = MIDISlot.slot(of: message), let last = produced[controller]?[slot], last != Self.none else {
            return true
        }
        if last == Int16(value) { return false }
        produced[controller]![slot] = Self.none
        return true
    }

    /// Forgets `controller` (it went away).
    public mutating func forget(_ controller: Controller) {
        produced[controller] = nil
    }
}
