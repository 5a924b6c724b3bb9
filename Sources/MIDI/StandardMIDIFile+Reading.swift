extension StandardMIDIFile {
    /// The most events read from one file, to bound memory on hostile input.
    public static let maxEventCount = 10_000_000
    /// The longest SysEx accepted, in bytes.
    public static let maxSysExLength = 1 << 20

    /// Reads a Standard MIDI File from its bytes.
    public init(bytes: [UInt8]) throws(StandardMIDIFileError) {
        var reader = ByteReader(bytes: bytes, track: nil)
        guard reader.remaining >= 14, bytes.starts(with: Array("MThd".utf8)) else {
            throw StandardMIDIFileError(offset: 0, reason: "not a Standard MIDI File (no MThd header)")
        }
        reader.offset = 4
        let headerLength = Int(try reader.uint32())
        guard headerLength >= 6, headerLength <= reader.remaining else {
            throw StandardMIDIFileError(offset: 4, reason: "header length \(headerLength) is invalid (6 expected)")
        }
        let headerStart = reader.offset
        let format = try reader.uint16()
        guard format <= 2 else {
            throw StandardMIDIFileError(offset: headerStart, reason: "format \(format) is not 0, 1 or 2")
        }
        let declaredTracks = Int(try reader.uint16())
        let rawDivision = try reader.uint16()
        let division: Division
        if rawDivision & 0x8000 != 0 {
            let fps = UInt8(truncatingIfNeeded: -Int(Int8(bitPattern: UInt8(rawDivision >> 8))))
            guard [24, 25, 29, 30].contains(fps), rawDivision & 0xFF != 0 else {
                throw StandardMIDIFileError(offset: headerStart + 4, reason: "SMPTE division with \(fps) frames per second or 0 ticks per frame")
            }
            division = .smpte(framesPerSecond: fps, ticksPerFrame: UInt8(rawDivision & 0xFF))
        } else {
            guard rawDivision != 0 else {
                throw StandardMIDIFileError(offset: headerStart + 4, reason: "division of 0 ticks per quarter note")
            }
            division = .ticksPerQuarterNote(rawDivision)
        }
        reader.offset = headerStart + headerLength

        var tracks: [Track] = []
        var eventBudget = Self.maxEventCount
        while reader.remaining >= 8 {
            let chunkStart = reader.offset
            let type = try reader.bytes(4)
            let length = Int(try reader.uint32())
            guard length <= reader.remaining else {
                throw StandardMIDIFileError(offset: chunkStart, track: tracks.count + 1,
                                            reason: "chunk says \(length) bytes but only \(reader.remaining) remain (file truncated?)")
            }
            let body = reader.offset..<(reader.offset + length)
            reader.offset = body.upperBound
            guard type.elementsEqual("MTrk".utf8) else { continue } // unknown chunks are skipped
            var trackReader = ByteReader(bytes: bytes, track: tracks.count + 1, range: body)
            tracks.append(try trackReader.track(budget: &eventBudget))
        }
        guard !tracks.isEmpty || declaredTracks == 0 else {
            throw StandardMIDIFileError(offset: reader.offset, reason: "the header announces \(declaredTracks) tracks but the file has none")
        }
        self.init(format: format, division: division, tracks: tracks)
    }
}

/// A bounds-checked cursor over file bytes; every read that would pass the end throws.
private struct ByteReader {
    let bytes: [UInt8]
    let track: Int?
    var offset: Int
    let end: Int

    init(bytes: [UInt8], track: Int?, range: Range<Int>? = nil) {
        self.bytes = bytes
        self.track = track
        offset = range?.lowerBound ?? 0
        end = range?.upperBound ?? bytes.count
    }

    var remaining: Int { end - offset }

    func error(_ reason: String, at position: Int? = nil) -> StandardMIDIFileError {
        StandardMIDIFileError(offset: position ?? offset, track: track, reason: reason)
    }

    mutating func byte() throws(StandardMIDIFileError) -> UInt8 {
        guard offset < end else { throw error("unexpected end of \(track == nil ? "file" : "track")") }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func bytes(_ count: Int) throws(StandardMIDIFileError) -> ArraySlice<UInt8> {
        guard count >= 0, count <= remaining else {
            throw error("\(count) bytes announced but only \(remaining) remain")
        }
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }

    mutating func uint16() throws(StandardMIDIFileError) -> UInt16 {
        UInt16(try byte()) << 8 | UInt16(try byte())
    }

    mutating func uint32() throws(StandardMIDIFileError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 { value = value << 8 | UInt32(try byte()) }
        return value
    }

    /// A variable-length quantity: at most 4 bytes, 28 bits.
    mutating func variableLength() throws(StandardMIDIFileError) -> UInt32 {
        let start = offset
        var value: UInt32 = 0
        for _ in 0..<4 {
            let b = try byte()
            value = value << 7 | UInt32(b & 0x7F)
            if b & 0x80 == 0 { return value }
        }
        throw error("variable-length number longer than 4 bytes", at: start)
    }

    mutating func dataByte() throws(StandardMIDIFileError) -> UInt7 {
        let b = try byte()
        guard let value = UInt7(b) else { throw error("status byte \(hex(b)) where a data byte belongs", at: offset - 1) }
        return value
    }

    /// Reads the events of one MTrk chunk.
    mutating func track(budget: inout Int) throws(StandardMIDIFileError) -> StandardMIDIFile.Track {
        var events: [StandardMIDIFile.TrackEvent] = []
        var runningStatus: UInt8 = 0
        var openSysEx: (index: Int, data: [UInt8])?   // an F0 packet awaiting F7 continuation packets
        var carriedDelta: UInt32 = 0                    // deltas of continuation packets, kept for timing
        while remaining > 0 {
            guard budget > 0 else { throw error("more than \(StandardMIDIFile.maxEventCount) events") }
            budget -= 1
            let delta = try variableLength() &+ carriedDelta
            carriedDelta = 0
            let eventStart = offset
            var status = try byte()
            if status < 0x80 {
                guard runningStatus != 0 else { throw error("data byte with no status (running status not set)", at: eventStart) }
                status = runningStatus
                offset -= 1
            }
            switch status {
            case 0xFF:
                runningStatus = 0
                let type = try byte()
                let data = Array(try bytes(Int(try variableLength())))
                events.append(.init(delta: delta, kind: .meta(type: type, data: data)))
                if type == StandardMIDIFile.MetaType.endOfTrack { return .init(events: events) }
            case 0xF0:
                runningStatus = 0
                var data = Array(try bytes(Int(try variableLength())))
                let complete = data.last == 0xF7
                if complete { data.removeLast() }
                try checkSysEx(data, at: eventStart)
                events.append(.init(delta: delta, kind: .midi(.sysEx(data: data))))
                openSysEx = complete ? nil : (events.count - 1, data)
            case 0xF7:
                runningStatus = 0
                var data = Array(try bytes(Int(try variableLength())))
                if var open = openSysEx {
                    let complete = data.last == 0xF7
                    if complete { data.removeLast() }
                    open.data += data
                    try checkSysEx(open.data, at: eventStart)
                    events[open.index].kind = .midi(.sysEx(data: open.data))
                    openSysEx = complete ? nil : open
                    carriedDelta = delta
                } else {
                    events.append(.init(delta: delta, kind: Self.escaped(data)))
                }
            case 0x80...0xEF:
                runningStatus = status
                let a = try dataByte()
                let message: MIDIMessage
                let channel = UInt4(masking: status)
                switch status & 0xF0 {
                case 0x80: message = .noteOff(channel: channel, note: a, velocity: try dataByte())
                case 0x90: message = .noteOn(channel: channel, note: a, velocity: try dataByte())
                case 0xA0: message = .polyPressure(channel: channel, note: a, pressure: try dataByte())
                case 0xB0: message = .controlChange(channel: channel, controller: a, value: try dataByte())
                case 0xC0: message = .programChange(channel: channel, program: a)
                case 0xD0: message = .channelPressure(channel: channel, pressure: a)
                default: message = .pitchBend(channel: channel, value: UInt14(lsb: a, msb: try dataByte()))
                }
                events.append(.init(delta: delta, kind: .midi(message)))
            default:
                throw error("status byte \(hex(status)) is not allowed in a track (system messages need an F7 escape)", at: eventStart)
            }
        }
        // No End of Track: accepted, as players do, and supplied so every track read ends with one.
        events.append(.init(delta: carriedDelta, kind: .meta(type: StandardMIDIFile.MetaType.endOfTrack, data: [])))
        return .init(events: events)
    }

    func checkSysEx(_ data: [UInt8], at position: Int) throws(StandardMIDIFileError) {
        guard data.count <= StandardMIDIFile.maxSysExLength else {
            throw error("SysEx longer than \(StandardMIDIFile.maxSysExLength) bytes", at: position)
        }
        guard data.allSatisfy({ $0 < 0x80 }) else {
            throw error("SysEx holds a byte of 0x80 or more", at: position)
        }
    }

    /// An F7 escape: one system common or real-time message if it is exactly that, else raw bytes.
    static func escaped(_ data: [UInt8]) -> StandardMIDIFile.TrackEvent.Kind {
        guard let first = data.first, first >= 0xF1, first != 0xF7 else { return .escape(data) }
        var parser = MIDIParser(maxSysExLength: 0)
        var outputs: [MIDIParserOutput] = []
        parser.parse(data) { outputs.append($0) }
        if outputs.count == 1, case .message(let message) = outputs[0] {
            return .midi(message)
        }
        return .escape(data)
    }
}
