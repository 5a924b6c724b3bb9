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
        if let program {
            let hasBank = program.bankMSB != nil && program.bankLSB != nil
            bytes.append(bit(program.s) | program.program & 0x7F)
            bytes.append(bit(hasBank) | (hasBank ? program.bankMSB ?? 0 : 0) & 0x7F)
            bytes.append(bit(program.x) | (hasBank ? program.bankLSB ?? 0 : 0) & 0x7F)
        }
        if !controllers.isEmpty {
            let logs = controllers.prefix(128)
            bytes.append(bit(controllerChapterS) | UInt8(logs.count - 1))
            for log in logs {
                bytes.append(bit(log.s) | log.number & 0x7F)
                switch log.tool {
                case .value(let value): bytes.append(value & 0x7F)
                case .toggle(let alt): bytes.append(0x80 | alt & 0x3F)
                case .count(let alt): bytes.append(0xC0 | alt & 0x3F)
                }
            }
        }
        if let parameterChapter { bytes.append(contentsOf: parameterChapter) }
        if let pitchWheel {
            bytes.append(bit(pitchWheel.s) | pitchWheel.first & 0x7F)
            bytes.append(pitchWheel.second & 0x7F)
        }
        notes?.encode(into: &bytes)
        if let noteExtras { bytes.append(contentsOf: noteExtras) }
        if let channelPressure { bytes.append(bit(channelPressure.s) | channelPressure.pressure & 0x7F) }
        if !polyPressure.isEmpty {
            let logs = polyPressure.prefix(128)
            bytes.append(bit(polyPressureChapterS) | UInt8(logs.count - 1))
            for log in logs {
                bytes.append(bit(log.s) | log.note & 0x7F)
                bytes.append(bit(log.x) | log.pressure & 0x7F)
            }
        }
    }
}

extension NoteChapter {
    /// The off-bit octets written: the smallest LOW...HIGH span covering `offNotes`, or none
    /// (none either with 128 logs, whose LEN=127 LOW=15 HIGH=0 form leaves no room for them).
    var offBitRange: ClosedRange<Int>? {
        guard logs.count < 128, let lowest = offNotes.lowest, let highest = offNotes.highest else { return nil }
        return Int(lowest / 8)...Int(highest / 8)
    }

    /// The number of bytes this chapter occupies, header included.
    var encodedLength: Int { 2 + 2 * min(logs.count, 128) + (offBitRange?.count ?? 0) }

    /// B|LEN, LOW|HIGH, logs, off bits. Without off bits LOW=15 and HIGH=0, except HIGH=1 for
    /// exactly 127 logs (LEN=127 LOW=15 HIGH=0 means 128 logs).
    func encode(into bytes: inout [UInt8]) {
        let logs = self.logs.prefix(128)
        let range = offBitRange
        let low = range?.lowerBound ?? 15
        let high = range?.upperBound ?? (logs.count == 127 ? 1 : 0)
        bytes.append(bit(b) | UInt8(min(logs.count, 127)))
        bytes.append(UInt8(low << 4 | high))
        for log in logs {
            bytes.append(bit(log.s) | log.note & 0x7F)
            bytes.append(bit(log.play) | log.velocity & 0x7F)
        }
        if let range {
            for index in range { bytes.append(offNotes.octet(at: index)) }
        }
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
