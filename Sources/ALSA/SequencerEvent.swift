import CALSA
import MIDI

/// ALSA sequencer events to and from MIDI messages: every event type that carries MIDI 1.0.
/// 14-bit controllers and (N)RPN events become the controller messages they stand for.
public enum SequencerEvent {
    /// The raw values of the event types used here.
    enum Kind {
        static let noteOn = UInt8(SND_SEQ_EVENT_NOTEON.rawValue)
        static let noteOff = UInt8(SND_SEQ_EVENT_NOTEOFF.rawValue)
        static let keyPressure = UInt8(SND_SEQ_EVENT_KEYPRESS.rawValue)
        static let controller = UInt8(SND_SEQ_EVENT_CONTROLLER.rawValue)
        static let program = UInt8(SND_SEQ_EVENT_PGMCHANGE.rawValue)
        static let channelPressure = UInt8(SND_SEQ_EVENT_CHANPRESS.rawValue)
        static let pitchBend = UInt8(SND_SEQ_EVENT_PITCHBEND.rawValue)
        static let control14 = UInt8(SND_SEQ_EVENT_CONTROL14.rawValue)
        static let nrpn = UInt8(SND_SEQ_EVENT_NONREGPARAM.rawValue)
        static let rpn = UInt8(SND_SEQ_EVENT_REGPARAM.rawValue)
        static let songPosition = UInt8(SND_SEQ_EVENT_SONGPOS.rawValue)
        static let songSelect = UInt8(SND_SEQ_EVENT_SONGSEL.rawValue)
        static let quarterFrame = UInt8(SND_SEQ_EVENT_QFRAME.rawValue)
        static let tuneRequest = UInt8(SND_SEQ_EVENT_TUNE_REQUEST.rawValue)
        static let clock = UInt8(SND_SEQ_EVENT_CLOCK.rawValue)
        static let start = UInt8(SND_SEQ_EVENT_START.rawValue)
        static let `continue` = UInt8(SND_SEQ_EVENT_CONTINUE.rawValue)
        static let stop = UInt8(SND_SEQ_EVENT_STOP.rawValue)
        static let sensing = UInt8(SND_SEQ_EVENT_SENSING.rawValue)
        static let reset = UInt8(SND_SEQ_EVENT_RESET.rawValue)
        static let sysEx = UInt8(SND_SEQ_EVENT_SYSEX.rawValue)
        static let clientStart = UInt8(SND_SEQ_EVENT_CLIENT_START.rawValue)
        static let clientExit = UInt8(SND_SEQ_EVENT_CLIENT_EXIT.rawValue)
        static let portStart = UInt8(SND_SEQ_EVENT_PORT_START.rawValue)
        static let portExit = UInt8(SND_SEQ_EVENT_PORT_EXIT.rawValue)
        static let portSubscribed = UInt8(SND_SEQ_EVENT_PORT_SUBSCRIBED.rawValue)
        static let portUnsubscribed = UInt8(SND_SEQ_EVENT_PORT_UNSUBSCRIBED.rawValue)
    }

    /// Fills `event` (reset by the caller) with `message`; false for SysEx, which is sent as
    /// variable-length events (see `sysExChunks`).
    public static func encode(_ message: MIDIMessage, into event: inout snd_seq_event_t) -> Bool {
        func note(_ kind: UInt8, _ channel: UInt4, _ note: UInt7, _ velocity: UInt7) {
            event.type = kind
            event.data.note.channel = channel.value
            event.data.note.note = note.value
            event.data.note.velocity = velocity.value
        }
        func control(_ kind: UInt8, channel: UInt8 = 0, param: UInt32 = 0, value: Int32) {
            event.type = kind
            event.data.control.channel = channel
            event.data.control.param = param
            event.data.control.value = value
        }
        switch message {
        case .noteOn(let c, let n, let v): note(Kind.noteOn, c, n, v)
        case .noteOff(let c, let n, let v): note(Kind.noteOff, c, n, v)
        case .polyPressure(let c, let n, let p): note(Kind.keyPressure, c, n, p)
        case .controlChange(let c, let number, let value):
            control(Kind.controller, channel: c.value, param: UInt32(number.value), value: Int32(value.value))
        case .programChange(let c, let program): control(Kind.program, channel: c.value, value: Int32(program.value))
        case .channelPressure(let c, let pressure): control(Kind.channelPressure, channel: c.value, value: Int32(pressure.value))
        case .pitchBend(let c, let value): control(Kind.pitchBend, channel: c.value, value: Int32(value.value) - 8192)
        case .songPosition(let beats): control(Kind.songPosition, value: Int32(beats.value))
        case .songSelect(let song): control(Kind.songSelect, value: Int32(song.value))
        case .mtcQuarterFrame(let data): control(Kind.quarterFrame, value: Int32(data.value))
        case .tuneRequest: event.type = Kind.tuneRequest
        case .timingClock: event.type = Kind.clock
        case .start: event.type = Kind.start
        case .continue: event.type = Kind.continue
        case .stop: event.type = Kind.stop
        case .activeSensing: event.type = Kind.sensing
        case .systemReset: event.type = Kind.reset
        case .sysEx: return false
        }
        return true
    }

    /// The MIDI messages `event` carries, to `deliver` (none for events that are not MIDI;
    /// several for a 14-bit controller or an (N)RPN). SysEx goes to `sysEx` instead.
    public static func decode(_ event: UnsafePointer<snd_seq_event_t>, sysEx: (UnsafeRawBufferPointer) -> Void,
                              _ deliver: (MIDIMessage) -> Void) {
        let e = event.pointee
        let channel = UInt4(masking: e.data.note.channel)
        let controlChannel = UInt4(masking: e.data.control.channel)
        func seven(_ value: some BinaryInteger) -> UInt7 { UInt7(masking: UInt8(truncatingIfNeeded: value)) }
        func cc(_ number: Int, _ value: Int32) {
            deliver(.controlChange(channel: controlChannel, controller: seven(number), value: seven(value)))
        }
        switch e.type {
        case Kind.noteOn: deliver(.noteOn(channel: channel, note: seven(e.data.note.note), velocity: seven(e.data.note.velocity)))
        case Kind.noteOff: deliver(.noteOff(channel: channel, note: seven(e.data.note.note), velocity: seven(e.data.note.velocity)))
        case Kind.keyPressure:
            deliver(.polyPressure(channel: channel, note: seven(e.data.note.note), pressure: seven(e.data.note.velocity)))
        case Kind.controller: cc(Int(e.data.control.param), e.data.control.value)
        case Kind.program: deliver(.programChange(channel: controlChannel, program: seven(e.data.control.value)))
        case Kind.channelPressure: deliver(.channelPressure(channel: controlChannel, pressure: seven(e.data.control.value)))
        case Kind.pitchBend:
            deliver(.pitchBend(channel: controlChannel, value: UInt14(clamping: Int(e.data.control.value) + 8192)))
        case Kind.control14:
            let number = Int(e.data.control.param), value = e.data.control.value
            if number < 32 { // MSB controller, then its LSB at number + 32
                cc(number, value >> 7)
                cc(number + 32, value & 0x7F)
            } else {
                cc(number, value)
            }
        case Kind.nrpn, Kind.rpn:
            let (msb, lsb) = e.type == Kind.nrpn ? (99, 98) : (101, 100)
            let parameter = Int32(bitPattern: e.data.control.param), value = e.data.control.value
            cc(msb, parameter >> 7)
            cc(lsb, parameter & 0x7F)
            cc(6, value >> 7)
            cc(38, value & 0x7F)
        case Kind.songPosition: deliver(.songPosition(UInt14(clamping: e.data.control.value)))
        case Kind.songSelect: deliver(.songSelect(seven(e.data.control.value)))
        case Kind.quarterFrame: deliver(.mtcQuarterFrame(seven(e.data.control.value)))
        case Kind.tuneRequest: deliver(.tuneRequest)
        case Kind.clock: deliver(.timingClock)
        case Kind.start: deliver(.start)
        case Kind.continue: deliver(.continue)
        case Kind.stop: deliver(.stop)
        case Kind.sensing: deliver(.activeSensing)
        case Kind.reset: deliver(.systemReset)
        case Kind.sysEx:
            guard jambridge_alsa_event_is_variable(event) != 0, let pointer = e.data.ext.ptr else { return }
            sysEx(UnsafeRawBufferPointer(start: pointer, count: Int(e.data.ext.len)))
        default:
            break
        }
    }

    /// The largest SysEx chunk sent in one event, as ALSA's own raw MIDI bridge does: a big
    /// event may not fit the sequencer's memory pool, a chunk always does.
    public static let sysExChunk = 256
}

/// SysEx chunks of one source reassembled into whole messages, up to a size limit.
public struct SysExAssembler: Sendable {
    /// The largest SysEx (bytes between F0 and F7) delivered; longer ones are dropped.
    public let limit: Int
    /// SysEx messages dropped: too long, or cut off by a new F0 or a stray status byte.
    public private(set) var dropped = 0
    private var data: [UInt8] = []
    private var state = State.idle
    private enum State { case idle, collecting, discarding }

    /// An assembler delivering SysEx of at most `limit` bytes.
    public init(limit: Int) { self.limit = limit }

    /// Adds a chunk as ALSA delivers it (the first starts with F0, the last ends with F7),
    /// handing each message completed by it to `deliver`.
    public mutating func add(_ chunk: UnsafeRawBufferPointer, _ deliver: (MIDIMessage) -> Void) {
        for byte in chunk {
            switch byte {
            case 0xF0:
                if state == .collecting { dropped += 1 }
                data.removeAll(keepingCapacity: true)
                state = .collecting
            case 0xF7:
                if state == .collecting { deliver(.sysEx(data: data)) }
                state = .idle
                data.removeAll(keepingCapacity: true)
            case 0x80...:
                if state == .collecting { dropped += 1 }
                state = .idle
            default:
                guard state == .collecting else { continue }
                guard data.count < limit else {
                    dropped += 1
                    data.removeAll(keepingCapacity: false)
                    state = .discarding
                    continue
                }
                data.append(byte)
            }
        }
    }
}
