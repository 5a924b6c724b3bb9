import MIDI

/// Fixed indexes for the MIDI values a mapping can set, so per-value state lives in flat arrays sized once:
/// 0..<2048 controllers (channel * 128 + controller), then 16 pitch bends, 16 programs, 16 channel pressures,
/// then 2048 notes (channel * 128 + note).
enum MIDISlot {
    static let bend = 2048, program = 2064, pressure = 2080, note = 2096
    /// Slots holding a value (controllers, bends, programs, pressures); notes come after them.
    static let valueCount = 2096
    /// Every slot, notes included.
    static let count = 4144

    /// The slot a channel voice message sets and the value it sets it to (bend as -8192...8191,
    /// a note as its velocity, 0 for a note-off); nil for messages no mapping produces.
    static func slot(of message: MIDIMessage) -> (index: Int, value: Int)? {
        switch message {
        case .controlChange(let c, let n, let v): (Int(c.value) << 7 | Int(n.value), Int(v.value))
        case .pitchBend(let c, let v): (bend + Int(c.value), Int(v.value) - 8192)
        case .programChange(let c, let p): (program + Int(c.value), Int(p.value))
        case .channelPressure(let c, let p): (pressure + Int(c.value), Int(p.value))
        case .noteOn(let c, let n, let v): (note + (Int(c.value) << 7 | Int(n.value)), Int(v.value))
        case .noteOff(let c, let n, _): (note + (Int(c.value) << 7 | Int(n.value)), 0)
        default: nil
        }
    }

    /// The values a value slot may take.
    static func domain(of index: Int) -> ClosedRange<Double> {
        index >= bend && index < program ? -8192...8191 : 0...127
    }

    /// The message setting value slot `index` to `value` (within its domain).
    static func message(index: Int, value: Int) -> MIDIMessage {
        let channel = UInt4(masking: UInt8(truncatingIfNeeded: index & 15))
        switch index {
        case ..<bend:
            return .controlChange(channel: UInt4(masking: UInt8(truncatingIfNeeded: index >> 7)),
                                  controller: UInt7(clamping: index & 127), value: UInt7(clamping: value))
        case ..<program: return .pitchBend(channel: channel, value: UInt14(clamping: value + 8192))
        case ..<pressure: return .programChange(channel: channel, program: UInt7(clamping: value))
        default: return .channelPressure(channel: channel, pressure: UInt7(clamping: value))
        }
    }
}

/// The mapped values an input mapper last sent, with optional one-pole smoothing toward each one's target:
/// de-duplication (a value is sent only when its rounded value changes) and smoothing share this state.
struct SmoothedOutputs: Sendable {
    private struct Slot: Sendable {
        /// The value the input asks for.
        var target = 0.0
        /// Where the smoothing is on its way to `target`.
        var current = 0.0
        /// When `current` was last brought up to date.
        var time = 0.0
        /// The smoothing's time constant in seconds (0: none).
        var timeConstant = 0.0
        /// The value last sent; nil before the first.
        var sent: Int?
        /// True while `current` has not reached `target`'s rounded value (the slot is in `moving`).
        var moving = false
    }

    private var slots = [Slot](repeating: Slot(), count: MIDISlot.valueCount)
    /// The indexes of moving slots, each once.
    private var moving: [Int] = []

    init() { moving.reserveCapacity(MIDISlot.valueCount) }

    /// True while a smoothed value is still on its way to its target.
    var needsTick: Bool { !moving.isEmpty }

    /// Sets slot `index` to `value` (already within the slot's domain) at `time`, smoothed with time constant
    /// `smoothing` seconds (0 for none); sends the slot's message when its rounded value changes.
    mutating func set(_ index: Int, to value: Double, smoothing: Double, at time: Double, emit: (MIDIMessage) -> Void) {
        if slots[index].sent == nil || smoothing == 0 {
            slots[index].current = value
        } else {
            advance(index, to: time)
        }
        if time.isFinite { slots[index].time = time }
        slots[index].target = value
        slots[index].timeConstant = smoothing
        send(index, emit: emit)
        if slots[index].current.rounded(.toNearestOrEven) == value.rounded(.toNearestOrEven) {
            slots[index].current = value
        } else if !slots[index].moving {
            slots[index].moving = true
            moving.append(index)
        }
    }

    /// Brings every moving slot up to `time`, sending what changed; a slot that reached its target stops moving.
    mutating func tick(at time: Double, emit: (MIDIMessage) -> Void) {
        var position = moving.count
        while position > 0 {
            position -= 1
            let index = moving[position]
            advance(index, to: time)
            if time.isFinite { slots[index].time = time }
            if slots[index].current.rounded(.toNearestOrEven) == slots[index].target.rounded(.toNearestOrEven) {
                slots[index].current = slots[index].target
                slots[index].moving = false
                moving.swapAt(position, moving.count - 1)
                moving.removeLast()
            }
            send(index, emit: emit)
        }
    }

    /// Moves slot `index` toward its target for the time between its last update and `time` (none if `time`
    /// is not finite or not later).
    private mutating func advance(_ index: Int, to time: Double) {
        let elapsed = time - slots[index].time
        guard elapsed > 0, time.isFinite else { return }
        let step = smoothingStep(elapsed: elapsed, timeConstant: slots[index].timeConstant)
        slots[index].current += (slots[index].target - slots[index].current) * step
    }

    /// Sends slot `index` if its rounded value differs from the one last sent.
    private mutating func send(_ index: Int, emit: (MIDIMessage) -> Void) {
        let value = Int(slots[index].current.rounded(.toNearestOrEven))
        guard value != slots[index].sent else { return }
        slots[index].sent = value
        emit(MIDISlot.message(index: index, value: value))
    }
}
