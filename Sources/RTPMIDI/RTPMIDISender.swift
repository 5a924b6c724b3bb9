import MIDI

/// Packs one destination's outgoing MIDI into RTP-MIDI packets of at most `maxDatagram`
/// bytes: the RTP timestamp is the first command's time, later commands carry their real
/// deltas, SysEx too long for one packet is split into F0..F0, F7..F0, F7..F7 segments.
/// Every packet carries the recovery journal of what went before it (see JournalHistory);
/// when commands and journal do not fit one datagram, the commands go alone and the journal
/// follows at once in a packet of its own.
public struct RTPMIDISender: Sendable {
    /// The largest datagram sent (RTP header included).
    public let maxDatagram: Int
    /// Omit repeated channel status bytes within a packet.
    public let runningStatus: Bool
    /// Our synchronisation source, as announced in IN/OK.
    public let ssrc: UInt32
    /// The sequence number the next packet carries.
    public private(set) var sequence: UInt16

    /// Journals dropped because they outgrew a datagram (the history restarts after each).
    public private(set) var journalOverflows = 0

    private var buffer: [UInt8]
    private var encoder: MIDIEncoder
    private var history: JournalHistory
    /// The journalled messages of the packet being built, recorded once it is sent.
    private var packetMessages: [(message: MIDIMessage, tick: UInt32)] = []
    private var firstTick: UInt32 = 0
    private var lastTick: UInt32 = 0
    private var commandCount = 0

    /// Bytes before the first command: RTP header and a two-byte (B=1) command section header.
    private static let headerSize = RTPHeader.size + 2
    /// Room a non-SysEx command may need: a 4-byte delta time and 3 bytes of MIDI.
    private static let shortCommandRoom = 7
    /// Delta times are at most 4 bytes of 7 bits.
    private static let maxDelta: UInt32 = (1 << 28) - 1

    /// A sender for `ssrc` starting at `sequence` (RFC 3550: random).
    public init(ssrc: UInt32, sequence: UInt16, maxDatagram: Int = 1400, runningStatus: Bool = false) {
        self.ssrc = ssrc
        self.sequence = sequence
        self.maxDatagram = max(maxDatagram, Self.headerSize + 16)
        self.runningStatus = runningStatus
        encoder = MIDIEncoder(runningStatus: runningStatus)
        history = JournalHistory(firstSequence: sequence)
        buffer = []
        buffer.reserveCapacity(self.maxDatagram + 512) // room for a journal written past the end, then cut
    }

    /// True if nothing is waiting to be sent.
    public var isEmpty: Bool { commandCount == 0 }

    /// True if the journal has history the peer has not confirmed (worth a journal-only
    /// packet when nothing else is being sent: RFC 4696's guard packets).
    public var hasUnconfirmedHistory: Bool { !history.isEmpty }

    /// The peer confirmed every packet up to `sequence` (RS): the journal's checkpoint moves.
    public mutating func confirm(_ sequence: UInt16) {
        history.confirm(sequence, lastSent: self.sequence &- 1)
    }

    /// True if appending `message` at `tick` may send a packet: the one being built is full, or too far from it in
    /// time, or it is a SysEx (sent in segments).
    public func sends(appending message: MIDIMessage, tick: UInt32) -> Bool {
        if case .sysEx = message { return true }
        return commandCount > 0 && (buffer.count + Self.shortCommandRoom > maxDatagram || tick &- lastTick > Self.maxDelta)
    }

    /// Takes back the packets sent since `earlier`, a copy of this sender from before them, which will never leave:
    /// the sequence numbers and the journal's history are `earlier`'s again. What waits to be sent stays.
    public mutating func rewind(to earlier: RTPMIDISender) {
        sequence = earlier.sequence
        history = earlier.history
    }

    /// Sends a packet with no commands and the journal, stamped `tick`.
    public mutating func sendJournal(tick: UInt32, _ send: (UnsafeRawBufferPointer) -> Void) {
        flush(send)
        startCommand(tick: tick)
        commandCount = 0
        finishPacket(send)
    }

    /// Adds `message`, due at `tick` (10 kHz session clock), handing full packets to `send`.
    public mutating func append(_ message: MIDIMessage, tick: UInt32, _ send: (UnsafeRawBufferPointer) -> Void) {
        if case .sysEx(let data) = message {
            appendSysEx(data, tick: tick, send)
            return
        }
        if commandCount > 0, buffer.count + Self.shortCommandRoom > maxDatagram || tick &- lastTick > Self.maxDelta {
            flush(send)
        }
        startCommand(tick: tick)
        encoder.encode(message) { buffer.append($0) }
        packetMessages.append((message, tick))
    }

    /// Sends what is waiting, if anything.
    public mutating func flush(_ send: (UnsafeRawBufferPointer) -> Void) {
        guard commandCount > 0 else { return }
        finishPacket(send)
    }

    /// Writes the header and the journal (J=1) behind the commands in `buffer` and sends it;
    /// if the journal does not fit, sends the commands alone and the journal right after.
    private mutating func finishPacket(_ send: (UnsafeRawBufferPointer) -> Void) {
        let length = buffer.count - Self.headerSize
        RTPHeader(sequence: sequence, timestamp: firstTick, ssrc: ssrc).encode(into: &buffer, at: 0)
        buffer[RTPHeader.size] = 0x80 | UInt8(truncatingIfNeeded: length >> 8) // B=1, J=0, Z=0, P=0
        buffer[RTPHeader.size + 1] = UInt8(truncatingIfNeeded: length)
        let commandsEnd = buffer.count
        history.encodeJournal(at: firstTick, into: &buffer)
        let journalFits = buffer.count <= maxDatagram
        if journalFits {
            buffer[RTPHeader.size] |= 0x40
        } else {
            buffer.removeSubrange(commandsEnd...)
        }
        buffer.withUnsafeBytes(send)
        for (message, tick) in packetMessages { history.record(message, sequence: sequence, tick: tick) }
        packetMessages.removeAll(keepingCapacity: true)
        sequence &+= 1
        buffer.removeAll(keepingCapacity: true)
        commandCount = 0
        guard !journalFits else { return }
        if length == 0 { // a journal alone overflows: start the history again after this packet
            journalOverflows += 1
            history.restart(at: sequence)
        } else {
            sendJournal(tick: lastTick, send)
        }
    }

    /// Writes the delta time (none for a packet's first command) and opens a packet if needed.
    private mutating func startCommand(tick: UInt32) {
        if commandCount == 0 {
            buffer.append(contentsOf: repeatElement(0, count: Self.headerSize))
            encoder.reset()
            firstTick = tick
            lastTick = tick
        } else {
            // Events handed over out of order play together rather than with a wrapped delta.
            let delta = tick &- lastTick > Self.maxDelta ? 0 : tick &- lastTick
            appendDelta(delta)
            lastTick &+= delta
        }
        commandCount += 1
    }

    private mutating func appendDelta(_ delta: UInt32) {
        var started = false
        for shift in stride(from: 21, through: 7, by: -7) {
            let group = UInt8(truncatingIfNeeded: delta >> UInt32(shift)) & 0x7F
            if started || group != 0 {
                buffer.append(0x80 | group)
                started = true
            }
        }
        buffer.append(UInt8(truncatingIfNeeded: delta) & 0x7F)
    }

    private mutating func appendSysEx(_ data: [UInt8], tick: UInt32, _ send: (UnsafeRawBufferPointer) -> Void) {
        var remaining = data[...]
        var first = true
        repeat {
            // A segment needs its delta, a start byte, at least one data byte and an end byte.
            if commandCount > 0, maxDatagram - buffer.count < Self.shortCommandRoom + 1 + min(remaining.count, 64) {
                flush(send)
            }
            startCommand(tick: tick)
            encoder.reset() // SysEx cancels running status
            buffer.append(first ? 0xF0 : 0xF7)
            let room = maxDatagram - buffer.count - 1
            let chunk = remaining.prefix(room)
            buffer.append(contentsOf: chunk)
            remaining = remaining.dropFirst(chunk.count)
            buffer.append(remaining.isEmpty ? 0xF7 : 0xF0)
            if !remaining.isEmpty { flush(send) }
            first = false
        } while !remaining.isEmpty
    }
}

extension RTPHeader {
    /// Writes the 12 header bytes over `bytes[offset...]` (V=2, no padding, extension or CSRCs).
    func encode(into bytes: inout [UInt8], at offset: Int) {
        bytes[offset] = 0x80
        bytes[offset + 1] = (marker ? 0x80 : 0) | payloadType & 0x7F
        bytes[offset + 2] = UInt8(truncatingIfNeeded: sequence >> 8)
        bytes[offset + 3] = UInt8(truncatingIfNeeded: sequence)
        var shift: UInt32 = 24
        for i in 0..<4 { // written byte by byte: no temporary array per packet
            bytes[offset + 4 + i] = UInt8(truncatingIfNeeded: timestamp >> shift)
            bytes[offset + 8 + i] = UInt8(truncatingIfNeeded: ssrc >> shift)
            shift &-= 8
        }
    }
}
