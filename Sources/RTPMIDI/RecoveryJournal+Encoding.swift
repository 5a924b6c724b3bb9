// Encoding writes what the model holds: field values are masked to their bit widths, at most
// 16 channel journals and 128 logs per list are written, raw chapters are copied verbatim
// (they must be well formed, as decoded ones are). A channel or system journal must stay
// under 1024 bytes (10-bit LENGTH): only oversized raw chapters can break that.

extension RecoveryJournal {
    /// The number of bytes `encode(into:)` appends.
    public var encodedLength: Int {
        var length = 3
        if let system { length += system.encodedLength }
        for channel in channels.prefix(16) { length += channel.encodedLength }
        return length
    }

    /// Appends the wire form of the journal to `bytes` (reserving room once).
    public func encode(into bytes: inout [UInt8]) {
        bytes.reserveCapacity(bytes.count + encodedLength)
        let channelCount = min(channels.count, 16)
        var flags: UInt8 = singlePacketLoss ? 0x80 : 0
        if system != nil { flags |= 0x40 }
        if channelCount > 0 { flags |= 0x20 | UInt8(channelCount - 1) }
        if enhancedChapterC { flags |= 0x10 }
        bytes.append(flags)
        bytes.appendBigEndian(checkpoint)
        system?.encode(into: &bytes)
        for channel in channels.prefix(16) { channel.encode(into: &bytes) }
    }
}

extension ChannelJournal {
    /// The number of bytes this channel journal occupies, header included.
    public var encodedLength: Int {
        var length = 3
        if program != nil { length += 3 }
        if !controllers.isEmpty { length += 1 + 2 * min(controllers.count, 128) }
        length += parameterChapter?.count ?? 0
        if pitchWheel != nil { length += 2 }
        if let notes { length += notes.encodedLength }
        length += noteExtras?.count ?? 0
        if channelPressure != nil { length += 1 }
        if !polyPressure.isEmpty { length += 1 + 2 * min(polyPressure.count, 128) }
        return length
    }

    func encode(into bytes: inout [UInt8]) {
        let length = encodedLength
        assert(length < 1024, "channel journal longer than its 10-bit LENGTH")
        var toc: UInt8 = 0
        if program != nil { toc |= 0x80 }
        if !controllers.isEmpty { toc |= 0x40 }
        if parameterChapter != nil { toc |= 0x20 }
        if pitchWheel != nil { toc |= 0x10 }
        if notes != nil { toc |= 0x08 }
        if noteExtras != nil { toc |= 0x04 }
        if channelPressure != nil { toc |= 0x02 }
        if !polyPressure.isEmpty { toc |= 0x01 }
        var header = UInt16(channel & 0x0F) << 11 | UInt16(truncatingIfNeeded: length) & 0x03FF
        if s { header |= 0x8000 }
        if enhancedChapterC { header |= 0x0400 }
        bytes.appendBigEndian(header)
        bytes.append(toc)
        program?.encode(into: &bytes)
        if !controllers.isEmpty {
            let logs = controllers.prefix(128)
            bytes.append(bit(controllerChapterS) | UInt8(logs.count - 1))
            for log in logs { log.encode(into: &bytes) }
        }
        if let parameterChapter { bytes.append(contentsOf: parameterChapter) }
        pitchWheel?.encode(into: &bytes)
        notes?.encode(into: &bytes)
        if let noteExtras { bytes.append(contentsOf: noteExtras) }
        channelPressure?.encode(into: &bytes)
        if !polyPressure.isEmpty {
            let logs = polyPressure.prefix(128)
            bytes.append(bit(polyPressureChapterS) | UInt8(logs.count - 1))
            for log in logs { log.encode(into: &bytes) }
        }
    }
}

// The pieces below are written by the model's encoder above and, without building the
// model, by JournalHistory for every packet sent.

extension ProgramChapter {
    /// S|PROGRAM, B|BANK-MSB, X|BANK-LSB (B=1 only with both banks).
    func encode(into bytes: inout [UInt8]) {
        let hasBank = bankMSB != nil && bankLSB != nil
        bytes.append(bit(s) | program & 0x7F)
        bytes.append(bit(hasBank) | (hasBank ? bankMSB ?? 0 : 0) & 0x7F)
        bytes.append(bit(x) | (hasBank ? bankLSB ?? 0 : 0) & 0x7F)
    }
}

extension ControllerLog {
    /// S|NUMBER, then A=0|VALUE, or A=1 T=0|ALT (toggle), or A=1 T=1|ALT (count).
    func encode(into bytes: inout [UInt8]) {
        bytes.append(bit(s) | number & 0x7F)
        switch tool {
        case .value(let value): bytes.append(value & 0x7F)
        case .toggle(let alt): bytes.append(0x80 | alt & 0x3F)
        case .count(let alt): bytes.append(0xC0 | alt & 0x3F)
        }
    }
}

extension PitchWheelChapter {
    /// S|FIRST, R|SECOND (R sent 0).
    func encode(into bytes: inout [UInt8]) {
        bytes.append(bit(s) | first & 0x7F)
        bytes.append(second & 0x7F)
    }
}

extension NoteLog {
    /// S|NOTENUM, Y|VELOCITY.
    func encode(into bytes: inout [UInt8]) {
        bytes.append(bit(s) | note & 0x7F)
        bytes.append(bit(play) | velocity & 0x7F)
    }
}

extension ChannelPressureChapter {
    /// S|PRESSURE.
    func encode(into bytes: inout [UInt8]) { bytes.append(bit(s) | pressure & 0x7F) }
}

extension PolyPressureLog {
    /// S|NOTENUM, X|PRESSURE.
    func encode(into bytes: inout [UInt8]) {
        bytes.append(bit(s) | note & 0x7F)
        bytes.append(bit(x) | pressure & 0x7F)
    }
}

extension ChannelJournal {
    /// Writes the 3-byte header (S|CHAN|H|LENGTH, TOC) of a channel journal of `length` bytes
    /// over `bytes[offset...]` (S=0, H=0): for writers that learn the length at the end.
    static func writeHeader(channel: UInt8, length: Int, toc: UInt8, into bytes: inout [UInt8], at offset: Int) {
        let header = UInt16(channel & 0x0F) << 11 | UInt16(truncatingIfNeeded: length) & 0x03FF
        bytes[offset] = UInt8(truncatingIfNeeded: header >> 8)
        bytes[offset + 1] = UInt8(truncatingIfNeeded: header)
        bytes[offset + 2] = toc
    }
}

extension NoteChapter {
    /// The off-bit octets written: the smallest LOW...HIGH span covering `offNotes`, or none
    /// (none either with 128 logs, whose LEN=127 LOW=15 HIGH=0 form leaves no room for them).
    var offBitRange: ClosedRange<Int>? { Self.offBitRange(offNotes, logCount: logs.count) }

    /// The number of bytes this chapter occupies, header included.
    var encodedLength: Int { 2 + 2 * min(logs.count, 128) + (offBitRange?.count ?? 0) }

    /// B|LEN, LOW|HIGH, logs, off bits.
    func encode(into bytes: inout [UInt8]) {
        let logs = self.logs.prefix(128)
        Self.encodeHeader(b: b, logCount: logs.count, offNotes: offNotes, into: &bytes)
        for log in logs { log.encode(into: &bytes) }
        Self.encodeOffBits(offNotes, logCount: logs.count, into: &bytes)
    }

    /// The off-bit octets written for `offNotes` next to `logCount` logs (see `offBitRange`).
    static func offBitRange(_ offNotes: NoteSet, logCount: Int) -> ClosedRange<Int>? {
        guard logCount < 128, let lowest = offNotes.lowest, let highest = offNotes.highest else { return nil }
        return Int(lowest / 8)...Int(highest / 8)
    }

    /// B|LEN, LOW|HIGH. Without off bits LOW=15 and HIGH=0, except HIGH=1 for exactly 127
    /// logs (LEN=127 LOW=15 HIGH=0 means 128 logs).
    static func encodeHeader(b: Bool, logCount: Int, offNotes: NoteSet, into bytes: inout [UInt8]) {
        let range = offBitRange(offNotes, logCount: logCount)
        let low = range?.lowerBound ?? 15
        let high = range?.upperBound ?? (logCount == 127 ? 1 : 0)
        bytes.append(bit(b) | UInt8(min(logCount, 127)))
        bytes.append(UInt8(low << 4 | high))
    }

    /// The off-bit octets of `offNotes`, after `logCount` logs.
    static func encodeOffBits(_ offNotes: NoteSet, logCount: Int, into bytes: inout [UInt8]) {
        guard let range = offBitRange(offNotes, logCount: logCount) else { return }
        for index in range { bytes.append(offNotes.octet(at: index)) }
    }
}

extension SystemJournal {
    /// The number of bytes this system journal occupies, header included.
    public var encodedLength: Int {
        var length = 2 + (simpleCommands?.count ?? 0) + (timeCode?.count ?? 0) + (sysEx?.count ?? 0)
        if activeSense != nil { length += 1 }
        if let sequencer { length += 1 + (sequencer.clock != nil ? 2 : 0) + (sequencer.timeTools != nil ? 3 : 0) }
        return length
    }

    func encode(into bytes: inout [UInt8]) {
        let length = encodedLength
        assert(length < 1024, "system journal longer than its 10-bit LENGTH")
        var header = UInt16(truncatingIfNeeded: length) & 0x03FF
        if s { header |= 0x8000 }
        if simpleCommands != nil { header |= 0x4000 }
        if activeSense != nil { header |= 0x2000 }
        if sequencer != nil { header |= 0x1000 }
        if timeCode != nil { header |= 0x0800 }
        if sysEx != nil { header |= 0x0400 }
        bytes.appendBigEndian(header)
        if let simpleCommands { bytes.append(contentsOf: simpleCommands) }
        if let activeSense { bytes.append(activeSense) }
        if let sequencer {
            var flags = bit(sequencer.s) | (sequencer.running ? 0x40 : 0) | (sequencer.downbeat ? 0x20 : 0)
            if let clock = sequencer.clock { flags |= 0x10 | UInt8(truncatingIfNeeded: clock >> 16) & 0x07 }
            if sequencer.timeTools != nil { flags |= 0x08 }
            bytes.append(flags)
            if let clock = sequencer.clock { bytes.appendBigEndian(UInt16(truncatingIfNeeded: clock)) }
            if let timeTools = sequencer.timeTools {
                bytes.append(UInt8(truncatingIfNeeded: timeTools >> 16))
                bytes.appendBigEndian(UInt16(truncatingIfNeeded: timeTools))
            }
        }
        if let timeCode { bytes.append(contentsOf: timeCode) }
        if let sysEx { bytes.append(contentsOf: sysEx) }
    }
}

/// 0x80 if `flag`, else 0: a flag in the most significant bit of an octet.
private func bit(_ flag: Bool) -> UInt8 { flag ? 0x80 : 0 }
