import MIDI

/// The router's memory of what is sounding: for every held input (source, player, channel, note
/// or pedal) the outputs (sink, channel, note or controller) its note-on or press produced and the
/// player they were not sent to, and per sink how many inputs hold each output. Fixed capacity,
/// allocated up front; the per-endpoint tables (24 KiB an endpoint) follow the endpoint count.
///
/// An input key is (source, channel, slot); the players of a shared endpoint (session peers, ALSA
/// ports) hold under the same key, told apart by the origin kept in each record.
struct HeldTable {
    /// Slots per channel, for inputs and outputs alike: notes 0...127, then controllers as 128 + number.
    static let slotsPerChannel = 256
    /// Input keys (and output slots) per endpoint: 16 channels of `slotsPerChannel`.
    static let keysPerEndpoint = 16 * slotsPerChannel

    private(set) var endpointCount: Int
    /// First output record of each input key, or -1.
    private var inputHead: [Int32]
    /// Per (sink, channel, output slot): how many records hold it.
    private var outputCount: [UInt16]
    /// Per endpoint: how many records its inputs hold, and how many hold an output on it.
    private var recordsFrom: [Int32], recordsTo: [Int32]
    // The record pool, linked by index.
    private var next: [Int32]
    private var sink: [UInt16]
    private var channel: [UInt8]
    private var slot: [UInt8]
    /// The player whose input holds the record, and the one its output was not sent to (the same
    /// player, or `.none` for a route with `echo: true`).
    private var origin: [UInt64]
    private var excluded: [UInt64]
    private var freeHead: Int32
    /// `sink` of a record in the pool.
    private static let free = UInt16.max

    init(endpointCount: Int, capacity: Int) {
        let capacity = max(1, min(capacity, Int(Int32.max)))
        self.endpointCount = endpointCount
        inputHead = Array(repeating: -1, count: endpointCount * Self.keysPerEndpoint)
        outputCount = Array(repeating: 0, count: endpointCount * Self.keysPerEndpoint)
        recordsFrom = Array(repeating: 0, count: endpointCount)
        recordsTo = recordsFrom
        next = (0..<capacity).map { $0 + 1 < capacity ? Int32($0 + 1) : -1 }
        sink = Array(repeating: Self.free, count: capacity)
        channel = Array(repeating: 0, count: capacity)
        slot = Array(repeating: 0, count: capacity)
        origin = Array(repeating: 0, count: capacity)
        excluded = Array(repeating: 0, count: capacity)
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

    /// True if `player` holds something under `key`.
    @inline(__always)
    func isHeld(_ key: Int, by player: EventOrigin) -> Bool {
        var record = inputHead[key]
        while record >= 0 {
            if origin[Int(record)] == player.rawValue { return true }
            record = next[Int(record)]
        }
        return false
    }

    /// True if anyone holds something under `key`.
    @inline(__always)
    func isHeld(_ key: Int) -> Bool { inputHead[key] >= 0 }

    /// True if the inputs of endpoint `source` hold anything.
    func holdsInputs(of source: Int) -> Bool { recordsFrom[source] > 0 }

    /// The first input key of endpoint `source`, from `key` on, under which anything is held; nil if none.
    func heldKey(of source: Int, from key: Int) -> Int? {
        guard recordsFrom[source] > 0 else { return nil }
        return inputHead[key..<(source + 1) * Self.keysPerEndpoint].firstIndex { $0 >= 0 }
    }

    /// True if anything is held on endpoint `sink`.
    func holdsOutputs(on sink: Int) -> Bool { recordsTo[sink] > 0 }

    @inline(__always)
    private func outputIndex(sink: Int, channel: UInt8, slot: UInt8) -> Int {
        (sink * 16 + Int(channel)) * Self.slotsPerChannel + Int(slot)
    }

    /// True if `player` already holds this output under `key` (another route of its reached it too); its
    /// record then covers everyone either delivery reached: if they left out different players, nobody.
    mutating func extendOutput(key: Int, player: EventOrigin, left: EventOrigin, sink wanted: Int, channel wantedChannel: UInt4,
                               slot wantedSlot: Int) -> Bool {
        var record = inputHead[key]
        while record >= 0 {
            let r = Int(record)
            if Int(sink[r]) == wanted && channel[r] == wantedChannel.value && Int(slot[r]) == wantedSlot
                && origin[r] == player.rawValue {
                if excluded[r] != left.rawValue { excluded[r] = EventOrigin.none.rawValue }
                return true
            }
            record = next[r]
        }
        return false
    }

    /// Records that `player` holds an output under `key`, sent to everyone but `left`; false if the
    /// pool is full (nothing recorded).
    mutating func record(key: Int, player: EventOrigin, left: EventOrigin, sink outSink: Int, channel outChannel: UInt4,
                         slot outSlot: Int) -> Bool {
        guard freeHead >= 0 else { return false }
        let r = Int(freeHead)
        freeHead = next[r]
        sink[r] = UInt16(truncatingIfNeeded: outSink)
        channel[r] = outChannel.value
        slot[r] = UInt8(truncatingIfNeeded: outSlot)
        origin[r] = player.rawValue
        excluded[r] = left.rawValue
        next[r] = inputHead[key]
        inputHead[key] = Int32(r)
        let o = outputIndex(sink: outSink, channel: outChannel.value, slot: slot[r])
        outputCount[o] &+= 1
        recordsFrom[key / Self.keysPerEndpoint] += 1
        recordsTo[outSink] += 1
        return true
    }

    /// Calls `body(sink, channel, slot, recipients)` for every output `player` holds under `key`.
    func forEachOutput(of key: Int, player: EventOrigin, _ body: (Int, UInt4, Int, Recipients) -> Void) {
        var record = inputHead[key]
        while record >= 0 {
            let r = Int(record)
            if origin[r] == player.rawValue {
                body(Int(sink[r]), UInt4(masking: channel[r]), Int(slot[r]), .allExcept(EventOrigin(rawValue: excluded[r])))
            }
            record = next[r]
        }
    }

    /// Forgets every output `player` (or, for nil, anyone) holds under `key`; calls
    /// `body(sink, channel, slot, recipients)` for each release to send (see `releaseRecord`).
    mutating func removeOutputs(of key: Int, player: EventOrigin?, _ body: (Int, UInt4, Int, Recipients) -> Void) {
        var previous: Int32 = -1
        var record = inputHead[key]
        while record >= 0 {
            let r = Int(record)
            let following = next[r]
            if player == nil || origin[r] == player!.rawValue {
                if previous < 0 { inputHead[key] = following } else { next[Int(previous)] = following }
                let (s, c, o) = (Int(sink[r]), UInt4(masking: channel[r]), Int(slot[r]))
                if let recipients = releaseRecord(r, key: key) { body(s, c, o, recipients) }
            } else {
                previous = record
            }
            record = following
        }
    }

    /// Forgets every output on `sinkIndex`; calls `body(channel, slot, recipients)` for each release to send.
    mutating func removeOutputs(toSink sinkIndex: Int, _ body: (UInt4, Int, Recipients) -> Void) {
        guard holdsOutputs(on: sinkIndex) else { return }
        for key in inputHead.indices where inputHead[key] >= 0 {
            var previous: Int32 = -1
            var record = inputHead[key]
            while record >= 0 {
                let r = Int(record)
                let following = next[r]
                if Int(sink[r]) == sinkIndex {
                    if previous < 0 { inputHead[key] = following } else { next[Int(previous)] = following }
                    let (c, o) = (UInt4(masking: channel[r]), Int(slot[r]))
                    if let recipients = releaseRecord(r, key: key) { body(c, o, recipients) }
                } else {
                    previous = record
                }
                record = following
            }
        }
    }

    /// Makes room for endpoints 0..<count, or gives back the room of those from `count` on, which must hold
    /// nothing either way; the keys of the others keep their places.
    mutating func resize(endpointCount count: Int) {
        if count > endpointCount {
            inputHead += Array(repeating: -1, count: (count - endpointCount) * Self.keysPerEndpoint)
            outputCount += Array(repeating: 0, count: (count - endpointCount) * Self.keysPerEndpoint)
            recordsFrom += Array(repeating: 0, count: count - endpointCount)
            recordsTo += Array(repeating: 0, count: count - endpointCount)
        } else if count < endpointCount {
            precondition(!(count..<endpointCount).contains { holdsInputs(of: $0) || holdsOutputs(on: $0) },
                         "the held table gives back the room of an endpoint that holds something")
            inputHead.removeLast((endpointCount - count) * Self.keysPerEndpoint)
            outputCount.removeLast((endpointCount - count) * Self.keysPerEndpoint)
            recordsFrom.removeLast(endpointCount - count)
            recordsTo.removeLast(endpointCount - count)
        }
        endpointCount = count
    }

    /// Returns record `r` (already unlinked from `key`) to the pool, and says who must hear its
    /// output released: everyone it was sent to, if nobody else holds that output; if others do, the
    /// one player that heard this record's note-on but none of theirs (they all left out the same
    /// player, and this record did not), or nobody.
    private mutating func releaseRecord(_ r: Int, key: Int) -> Recipients? {
        let (s, c, o) = (sink[r], channel[r], slot[r])
        let output = outputIndex(sink: Int(s), channel: c, slot: o)
        outputCount[output] &-= 1
        recordsFrom[key / Self.keysPerEndpoint] -= 1
        recordsTo[Int(s)] -= 1
        sink[r] = Self.free
        next[r] = freeHead
        freeHead = Int32(r)
        guard outputCount[output] > 0 else { return .allExcept(EventOrigin(rawValue: excluded[r])) }
        var common: UInt64?
        for other in sink.indices where sink[other] == s && channel[other] == c && slot[other] == o {
            guard common == nil || common == excluded[other] else { return nil }
            common = excluded[other]
        }
        guard let common, common != EventOrigin.none.rawValue, common != excluded[r] else { return nil }
        return .only(EventOrigin(rawValue: common))
    }
}
