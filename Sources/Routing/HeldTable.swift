import MIDI

/// The router's memory of what is sounding: for every held input (source, channel, note or
/// pedal) the outputs (sink, channel, note or controller) its note-on or press produced, and
/// per sink how many inputs hold each output. Fixed capacity, allocated up front.
struct HeldTable {
    /// Slots per channel, for inputs and outputs alike: notes 0...127, then controllers as 128 + number.
    static let slotsPerChannel = 256

    private(set) var endpointCount: Int
    /// First output record of each input key, or -1.
    private var inputHead: [Int32]
    /// Per (sink, channel, output slot): how many records hold it.
    private var outputCount: [UInt16]
    // The record pool, linked by index.
    private var next: [Int32]
    private var sink: [UInt16]
    private var channel: [UInt8]
    private var slot: [UInt8]
    private var freeHead: Int32

    init(endpointCount: Int, capacity: Int) {
        let capacity = max(1, min(capacity, Int(Int32.max)))
        self.endpointCount = endpointCount
        inputHead = Array(repeating: -1, count: endpointCount * 16 * Self.slotsPerChannel)
        outputCount = Array(repeating: 0, count: endpointCount * 16 * Self.slotsPerChannel)
        next = (0..<capacity).map { $0 + 1 < capacity ? Int32($0 + 1) : -1 }
        sink = Array(repeating: 0, count: capacity)
        channel = Array(repeating: 0, count: capacity)
        slot = Array(repeating: 0, count: capacity)
        freeHead = 0
    }

    /// True for the pedals that hold notes: sustain (64), sostenuto (66) and hold 2 (69).
    @inline(__always)
    static func isPedal(_ controller: UInt7) -> Bool {
        controller.value == 64 || controller.value == 66 || controller.value == 69
    }

    /// The (channel, slot) a message holds on at its sink: a sounding note or a pressed pedal.
    @inline(__always)
    static func heldOutput(of message: MIDIMessage) -> (UInt4, Int)? {
        switch message {
        case .noteOn(let c, let n, let v) where v.value > 0: return (c, Int(n.value))
        case .controlChange(let c, let n, let v) where v.value >= 64 && isPedal(n): return (c, 128 + Int(n.value))
        default: return nil
        }
    }

    /// True for a pedal release (a pedal controller below 64): only the held table sends those.
    @inline(__always)
    static func isPedalRelease(_ message: MIDIMessage) -> Bool {
        if case .controlChange(_, let n, let v) = message { return v.value < 64 && isPedal(n) }
        return false
    }

    @inline(__always)
    func inputKey(source: Int, channel: UInt4, slot: Int) -> Int {
        (source * 16 + Int(channel.value)) * Self.slotsPerChannel + slot
    }

    @inline(__always)
    func isHeld(_ key: Int) -> Bool { inputHead[key] >= 0 }

    @inline(__always)
    private func outputIndex(sink: Int, channel: UInt8, slot: UInt8) -> Int {
        (sink * 16 + Int(channel)) * Self.slotsPerChannel + Int(slot)
    }

    /// True if `key` already holds this output.
    func hasOutput(key: Int, sink wanted: Int, channel wantedChannel: UInt4, slot wantedSlot: Int) -> Bool {
        var record = inputHead[key]
        while record >= 0 {
            let r = Int(record)
            if Int(sink[r]) == wanted && channel[r] == wantedChannel.value && Int(slot[r]) == wantedSlot { return true }
            record = next[r]
        }
        return false
    }

    /// Records that `key` holds an output; false if the pool is full (nothing recorded).
    mutating func record(key: Int, sink outSink: Int, channel outChannel: UInt4, slot outSlot: Int) -> Bool {
        guard freeHead >= 0 else { return false }
        let r = Int(freeHead)
        freeHead = next[r]
        sink[r] = UInt16(truncatingIfNeeded: outSink)
        channel[r] = outChannel.value
        slot[r] = UInt8(truncatingIfNeeded: outSlot)
        next[r] = inputHead[key]
        inputHead[key] = Int32(r)
        let o = outputIndex(sink: outSink, channel: outChannel.value, slot: slot[r])
        outputCount[o] &+= 1
        return true
    }

    /// Calls `body(sink, channel, slot)` for every output `key` holds.
    func forEachOutput(of key: Int, _ body: (Int, UInt4, Int) -> Void) {
        var record = inputHead[key]
        while record >= 0 {
            let r = Int(record)
            body(Int(sink[r]), UInt4(masking: channel[r]), Int(slot[r]))
            record = next[r]
        }
    }

    /// Forgets every output `key` holds; calls `body(sink, channel, slot)` for each one no other input holds.
    mutating func removeOutputs(of key: Int, _ body: (Int, UInt4, Int) -> Void) {
        var record = inputHead[key]
        inputHead[key] = -1
        while record >= 0 {
            let r = Int(record)
            record = next[r]
            if releaseRecord(r) { body(Int(sink[r]), UInt4(masking: channel[r]), Int(slot[r])) }
        }
    }

    /// Forgets every output on `sinkIndex`; calls `body(channel, slot)` once for each that was sounding.
    mutating func removeOutputs(toSink sinkIndex: Int, _ body: (UInt4, Int) -> Void) {
        for key in inputHead.indices where inputHead[key] >= 0 {
            var previous: Int32 = -1
            var record = inputHead[key]
            while record >= 0 {
                let r = Int(record)
                let following = next[r]
                if Int(sink[r]) == sinkIndex {
                    if previous < 0 { inputHead[key] = following } else { next[Int(previous)] = following }
                    if releaseRecord(r) { body(UInt4(masking: channel[r]), Int(slot[r])) }
                } else {
                    previous = record
                }
                record = following
            }
        }
    }

    /// Makes room for endpoints up to `count`; existing keys keep their places.
    mutating func grow(endpointCount count: Int) {
        guard count > endpointCount else { return }
        inputHead += Array(repeating: -1, count: (count - endpointCount) * 16 * Self.slotsPerChannel)
        outputCount += Array(repeating: 0, count: (count - endpointCount) * 16 * Self.slotsPerChannel)
        endpointCount = count
    }

    /// Returns record `r` to the pool; true if its output is now held by nobody.
    private mutating func releaseRecord(_ r: Int) -> Bool {
        let o = outputIndex(sink: Int(sink[r]), channel: channel[r], slot: slot[r])
        outputCount[o] &-= 1
        next[r] = freeHead
        freeHead = Int32(r)
        return outputCount[o] == 0
    }
}
