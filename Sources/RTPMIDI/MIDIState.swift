import MIDI

/// The MIDI state a recovery journal protects, as one side of a stream knows it: per channel
/// the notes on, controllers, program, pitch wheel and pressures; the sequencer's transport.
/// The sender's journal history and the receiver's repair both keep one.
struct MIDIState {
    /// One channel's state. Unknown values (never sent) are nil or `unknown`.
    struct Channel {
        /// Velocity of each note that is on; 0 = off.
        var velocity = [UInt8](repeating: 0, count: 128)
        /// Each controller's last value, `unknown` if never sent (120-127 are actions, not kept).
        var controllers = [UInt8](repeating: MIDIState.unknown, count: 128)
        /// The last program, with the bank (CC 0, CC 32) in effect when it was chosen.
        var program: (program: UInt8, bankMSB: UInt8?, bankLSB: UInt8?)?
        var pitchWheel: UInt14?
        var pressure: UInt8?
        /// Each note's last polyphonic pressure, `unknown` if never sent.
        var polyPressure = [UInt8](repeating: MIDIState.unknown, count: 128)
    }

    /// What a message changed, for the journal history.
    enum Change {
        case note(channel: Int, note: UInt8)
        case controller(channel: Int, number: UInt8)
        case program(channel: Int)
        case pitchWheel(channel: Int)
        case channelPressure(channel: Int)
        case polyPressure(channel: Int, note: UInt8)
        case sequencer
    }

    /// The marker of a controller or pressure value never sent.
    static let unknown: UInt8 = 0xFF
    /// Controllers that are state, kept by Chapter C. Channel mode messages (120-127) act on
    /// notes and are journalled through them; RPN/NRPN selection and data entry (6, 38, 96-101)
    /// belong to Chapter M, which jambridge does not send, and would repair out of context.
    static func isJournalledController(_ number: UInt8) -> Bool {
        switch number {
        case 6, 38, 96...101, 120...127: false
        default: number < 128
        }
    }

    var channels = [Channel](repeating: Channel(), count: 16)
    /// The transport: true between Start/Continue and Stop.
    var running = false
    /// The song position in MIDI clocks (Song Position Pointer x 6, plus clocks while running).
    var position: UInt32 = 0

    /// Applies `message`, appending each piece of state it altered to `changes` (which the
    /// caller empties: a buffer reused so that nothing is allocated per message).
    mutating func apply(_ message: MIDIMessage, changes: inout [Change]) {
        apply(message) { changes.append($0) }
    }

    private mutating func apply(_ message: MIDIMessage, _ changed: (Change) -> Void) {
        switch message {
        case .noteOn(let channel, let note, let velocity):
            setNote(Int(channel.value), note.value, velocity: velocity.value, changed)
        case .noteOff(let channel, let note, _):
            setNote(Int(channel.value), note.value, velocity: 0, changed)
        case .controlChange(let channel, let controller, let value):
            controlChange(Int(channel.value), controller.value, value.value, changed)
        case .programChange(let channel, let program):
            let c = Int(channel.value)
            let msb = channels[c].controllers[0], lsb = channels[c].controllers[32]
            channels[c].program = (program.value, msb == Self.unknown ? nil : msb, lsb == Self.unknown ? nil : lsb)
            changed(.program(channel: c))
        case .pitchBend(let channel, let value):
            channels[Int(channel.value)].pitchWheel = value
            changed(.pitchWheel(channel: Int(channel.value)))
        case .channelPressure(let channel, let pressure):
            channels[Int(channel.value)].pressure = pressure.value
            changed(.channelPressure(channel: Int(channel.value)))
        case .polyPressure(let channel, let note, let pressure):
            channels[Int(channel.value)].polyPressure[Int(note.value)] = pressure.value
            changed(.polyPressure(channel: Int(channel.value), note: note.value))
        case .start:
            running = true
            position = 0
            changed(.sequencer)
        case .continue:
            running = true
            changed(.sequencer)
        case .stop:
            running = false
            changed(.sequencer)
        case .timingClock:
            guard running else { return }
            position = (position &+ 1) & UInt32(SenderTime.songTickModulus - 1) // chapter Q's 19 bits
            changed(.sequencer)
        case .songPosition(let beats):
            position = UInt32(beats.value) * 6
            changed(.sequencer)
        case .systemReset:
            for c in 0..<16 { allNotesOff(c, changed) }
            if running { running = false; changed(.sequencer) }
        default:
            break
        }
    }

    private mutating func setNote(_ c: Int, _ note: UInt8, velocity: UInt8, _ changed: (Change) -> Void) {
        channels[c].velocity[Int(note)] = velocity
        changed(.note(channel: c, note: note))
    }

    private mutating func controlChange(_ c: Int, _ number: UInt8, _ value: UInt8, _ changed: (Change) -> Void) {
        switch number {
        case 120, 123...127: // all sound off, all notes off, omni and mono/poly modes
            allNotesOff(c, changed)
        case 121: // reset all controllers (RP-015): pedals, modulation, expression, bend, pressure
            for (controller, reset) in [(UInt8(1), UInt8(0)), (11, 127), (64, 0), (65, 0), (66, 0), (67, 0), (69, 0)]
            where channels[c].controllers[Int(controller)] != Self.unknown {
                channels[c].controllers[Int(controller)] = reset
                changed(.controller(channel: c, number: controller))
            }
            if channels[c].pitchWheel != nil { channels[c].pitchWheel = .center; changed(.pitchWheel(channel: c)) }
            if channels[c].pressure != nil { channels[c].pressure = 0; changed(.channelPressure(channel: c)) }
        default:
            guard Self.isJournalledController(number) else { return }
            channels[c].controllers[Int(number)] = value
            changed(.controller(channel: c, number: number))
        }
    }

    private mutating func allNotesOff(_ c: Int, _ changed: (Change) -> Void) {
        for note in 0..<128 where channels[c].velocity[note] != 0 {
            channels[c].velocity[note] = 0
            changed(.note(channel: c, note: UInt8(note)))
        }
    }
}
