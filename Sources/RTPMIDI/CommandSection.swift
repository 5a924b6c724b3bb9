/// One command of an RTP-MIDI command list (RFC 6295 §3), as it stands in the packet.
enum RTPMIDICommand {
    /// A channel voice message with its (possibly running) status and data bytes.
    case channel(status: UInt8, data1: UInt8, data2: UInt8)
    /// A system common message (F1, F2, F3, F6).
    case common(status: UInt8, data1: UInt8, data2: UInt8)
    /// A system real-time byte (F8, FA, FB, FC, FE, FF), alone or inside a SysEx segment.
    case realTime(UInt8)
    /// SysEx data bytes of the current segment (real-time bytes inside it come separately).
    case sysExData(Range<Int>)
    /// A SysEx segment starts: F0 (first or whole) or F7 (middle or last).
    case sysExStart(UInt8)
    /// A SysEx segment ends: F7 (last or whole), F0 (more follow) or F4 (cancelled).
    case sysExEnd(UInt8)
}

/// The command section of an RTP-MIDI payload: header, command list, optional journal.
enum CommandSection {
    /// Walks the command list of `payload` (the bytes after the RTP header), calling `visit`
    /// with each command and its time in ticks after the RTP timestamp (deltas summed).
    /// Calls `validated` with the journal's bytes (if J=1) once the whole packet is known
    /// to be well formed, before the first visit. Throws before calling anything if the list
    /// or the journal's structure is malformed, so a bad packet is dropped whole.
    static func walk(_ payload: UnsafeRawBufferPointer, validated: (Range<Int>?) -> Void,
                     _ visit: (RTPMIDICommand, UInt32) -> Void) throws(RTPMIDIError) {
        var reader = ByteReader(payload)
        guard let first = reader.u8() else { throw .truncatedCommandHeader }
        var length = Int(first & 0x0F)
        if first & 0x80 != 0 {
            guard let low = reader.u8() else { throw .truncatedCommandHeader }
            length = length << 8 | Int(low)
        }
        let listStart = reader.offset
        guard length <= reader.remaining else { throw .lengthPastEnd(length: length, available: reader.remaining) }
        let list = listStart..<(listStart + length)
        let hasJournal = first & 0x40 != 0
        let firstHasDelta = first & 0x20 != 0
        var journal: Range<Int>?
        if hasJournal {
            let journalBytes = list.upperBound..<payload.count
            journal = journalBytes.lowerBound..<(journalBytes.lowerBound
                + (try RecoveryJournal.length(of: UnsafeRawBufferPointer(rebasing: payload[journalBytes]))))
        }
        try walkList(payload, list, firstHasDelta: firstHasDelta) { _, _ in }
        validated(journal)
        try walkList(payload, list, firstHasDelta: firstHasDelta, visit)
    }

    private static func walkList(_ bytes: UnsafeRawBufferPointer, _ list: Range<Int>, firstHasDelta: Bool,
                                 _ visit: (RTPMIDICommand, UInt32) -> Void) throws(RTPMIDIError) {
        var offset = list.lowerBound
        var time: UInt32 = 0
        var runningStatus: UInt8 = 0
        var isFirst = true
        while offset < list.upperBound {
            if !isFirst || firstHasDelta {
                time &+= try deltaTime(bytes, &offset, end: list.upperBound)
                guard offset < list.upperBound else { throw .badDeltaTime }
            }
            isFirst = false
            let byte = bytes[offset]
            switch byte {
            case 0x00...0x7F:
                guard runningStatus != 0 else { throw .dataWithoutStatus(byte) }
                try channel(bytes, &offset, end: list.upperBound, status: runningStatus, dataAt: offset, time, visit)
            case 0x80...0xEF:
                runningStatus = byte
                try channel(bytes, &offset, end: list.upperBound, status: byte, dataAt: offset + 1, time, visit)
            case 0xF0, 0xF7:
                runningStatus = 0
                try sysExSegment(bytes, &offset, end: list.upperBound, time, visit)
            case 0xF1, 0xF3:
                runningStatus = 0
                guard offset + 1 < list.upperBound, bytes[offset + 1] < 0x80 else { throw .truncatedCommand(status: byte) }
                visit(.common(status: byte, data1: bytes[offset + 1], data2: 0), time)
                offset += 2
            case 0xF2:
                runningStatus = 0
                guard offset + 2 < list.upperBound, bytes[offset + 1] < 0x80, bytes[offset + 2] < 0x80 else {
                    throw .truncatedCommand(status: byte)
                }
                visit(.common(status: byte, data1: bytes[offset + 1], data2: bytes[offset + 2]), time)
                offset += 3
            case 0xF6:
                runningStatus = 0
                visit(.common(status: byte, data1: 0, data2: 0), time)
                offset += 1
            case 0xF8, 0xFA, 0xFB, 0xFC, 0xFE, 0xFF:
                visit(.realTime(byte), time)
                offset += 1
            default: // F4, F5, F9, FD
                throw .undefinedStatus(byte)
            }
        }
    }

    /// Reads a 1-4 byte delta time (7 bits per byte, high bit = more).
    private static func deltaTime(_ bytes: UnsafeRawBufferPointer, _ offset: inout Int, end: Int) throws(RTPMIDIError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard offset < end else { throw .badDeltaTime }
            let byte = bytes[offset]
            offset += 1
            value = value << 7 | UInt32(byte & 0x7F)
            if byte & 0x80 == 0 { return value }
        }
        throw .badDeltaTime
    }

    private static func channel(_ bytes: UnsafeRawBufferPointer, _ offset: inout Int, end: Int, status: UInt8,
                                dataAt start: Int, _ time: UInt32,
                                _ visit: (RTPMIDICommand, UInt32) -> Void) throws(RTPMIDIError) {
        let count = (0xC0...0xDF).contains(status) ? 1 : 2
        guard start + count <= end else { throw .truncatedCommand(status: status) }
        let data1 = bytes[start]
        let data2 = count == 2 ? bytes[start + 1] : 0
        guard data1 < 0x80, data2 < 0x80 else { throw .truncatedCommand(status: status) }
        visit(.channel(status: status, data1: data1, data2: data2), time)
        offset = start + count
    }

    private static func sysExSegment(_ bytes: UnsafeRawBufferPointer, _ offset: inout Int, end: Int, _ time: UInt32,
                                     _ visit: (RTPMIDICommand, UInt32) -> Void) throws(RTPMIDIError) {
        visit(.sysExStart(bytes[offset]), time)
        var dataStart = offset + 1
        var index = dataStart
        while index < end {
            let byte = bytes[index]
            switch byte {
            case 0x00...0x7F:
                index += 1
            case 0xF0, 0xF7, 0xF4:
                if index > dataStart { visit(.sysExData(dataStart..<index), time) }
                visit(.sysExEnd(byte), time)
                offset = index + 1
                return
            case 0xF8, 0xFA, 0xFB, 0xFC, 0xFE, 0xFF:
                if index > dataStart { visit(.sysExData(dataStart..<index), time) }
                visit(.realTime(byte), time)
                index += 1
                dataStart = index
            default:
                throw .statusInsideSysEx(byte)
            }
        }
        throw .truncatedCommand(status: bytes[offset])
    }
}
