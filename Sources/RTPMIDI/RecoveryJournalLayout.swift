/// The layout of a recovery journal (RFC 6295 §5): enough to check its lengths and skip it.
/// Using its contents to repair loss is a separate step.
enum RecoveryJournalLayout {
    /// The number of bytes the journal at the start of `bytes` occupies; throws if its
    /// header, system journal, channel journals or chapters do not fit their lengths.
    static func length(of bytes: UnsafeRawBufferPointer) throws(RTPMIDIError) -> Int {
        var reader = ByteReader(bytes)
        guard let flags = reader.u8(), reader.u16() != nil else { throw .truncatedJournal }
        let hasSystemJournal = flags & 0x40 != 0
        let hasChannelJournals = flags & 0x20 != 0
        let channelCount = Int(flags & 0x0F) + 1
        if hasSystemJournal {
            guard let header = reader.u16() else { throw .truncatedJournal }
            let length = Int(header & 0x03FF)
            guard length >= 2 else { throw .malformedJournal }
            guard reader.skip(length - 2) else { throw .truncatedJournal }
        }
        if hasChannelJournals {
            for _ in 0..<channelCount {
                let start = reader.offset
                guard let header = reader.u16(), let toc = reader.u8() else { throw .truncatedJournal }
                let length = Int(header & 0x03FF)
                guard length >= 3 else { throw .malformedJournal }
                guard length <= bytes.count - start else { throw .truncatedJournal }
                let chapters = try chaptersLength(bytes, from: reader.offset, toc: toc, end: start + length)
                guard chapters == length - 3 else { throw .malformedJournal }
                _ = reader.skip(length - 3)
            }
        }
        return reader.offset
    }

    /// The summed length of the chapters named in `toc` (P C M W N E T A), read in order.
    private static func chaptersLength(_ bytes: UnsafeRawBufferPointer, from start: Int, toc: UInt8,
                                       end: Int) throws(RTPMIDIError) -> Int {
        var offset = start
        func byte(_ at: Int) throws(RTPMIDIError) -> Int {
            guard at < end else { throw .malformedJournal }
            return Int(bytes[at])
        }
        if toc & 0x80 != 0 { offset += 3 } // P: program change
        if toc & 0x40 != 0 { offset += 1 + 2 * ((try byte(offset) & 0x7F) + 1) } // C: controller logs
        if toc & 0x20 != 0 { // M: parameter system, 10-bit LENGTH includes its header
            let length = (try byte(offset) & 0x03) << 8 | (try byte(offset + 1))
            guard length >= 2 else { throw .malformedJournal }
            offset += length
        }
        if toc & 0x10 != 0 { offset += 2 } // W: pitch wheel
        if toc & 0x08 != 0 { // N: note logs then off-bit octets
            let logs = try byte(offset) & 0x7F
            let low = try byte(offset + 1) >> 4, high = try byte(offset + 1) & 0x0F
            let noteLogs = logs == 127 && low == 15 && high == 0 ? 128 : logs
            offset += 2 + 2 * noteLogs + (low <= high ? high - low + 1 : 0)
        }
        if toc & 0x04 != 0 { offset += 1 + 2 * ((try byte(offset) & 0x7F) + 1) } // E: note extras
        if toc & 0x02 != 0 { offset += 1 } // T: channel aftertouch
        if toc & 0x01 != 0 { offset += 1 + 2 * ((try byte(offset) & 0x7F) + 1) } // A: poly aftertouch
        guard offset <= end else { throw .malformedJournal }
        return offset - start
    }
}
