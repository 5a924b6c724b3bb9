extension StandardMIDIFile {
    /// The file's bytes: header, then each track, ending every track with End of Track.
    /// SysEx is written as F0 events; system common and real-time messages as F7 escapes.
    public func encoded() -> [UInt8] {
        var out: [UInt8] = Array("MThd".utf8)
        appendUInt32(6, to: &out)
        appendUInt16(format, to: &out)
        appendUInt16(UInt16(truncatingIfNeeded: tracks.count), to: &out)
        switch division {
        case .ticksPerQuarterNote(let ticks):
            appendUInt16(ticks & 0x7FFF, to: &out)
        case .smpte(let fps, let ticksPerFrame):
            out.append(UInt8(bitPattern: Int8(truncatingIfNeeded: -Int(fps))))
            out.append(ticksPerFrame)
        }
        for track in tracks {
            var body: [UInt8] = []
            var encoder = MIDIEncoder()
            for event in track.events {
                appendVariableLength(event.delta, to: &body)
                switch event.kind {
                case .midi(.sysEx(let data)):
                    body.append(0xF0)
                    appendVariableLength(UInt32(truncatingIfNeeded: data.count + 1), to: &body)
                    body += data
                    body.append(0xF7)
                case .midi(let message) where message.channel != nil:
                    encoder.encode(message, into: &body)
                case .midi(let message):
                    var bytes: [UInt8] = []
                    encoder.encode(message, into: &bytes)
                    body.append(0xF7)
                    appendVariableLength(UInt32(bytes.count), to: &body)
                    body += bytes
                case .meta(let type, let data):
                    body += [0xFF, type]
                    appendVariableLength(UInt32(truncatingIfNeeded: data.count), to: &body)
                    body += data
                case .escape(let data):
                    body.append(0xF7)
                    appendVariableLength(UInt32(truncatingIfNeeded: data.count), to: &body)
                    body += data
                }
            }
            if case .meta(MetaType.endOfTrack, _) = track.events.last?.kind {} else {
                body += [0x00, 0xFF, MetaType.endOfTrack, 0x00]
            }
            out += Array("MTrk".utf8)
            appendUInt32(UInt32(truncatingIfNeeded: body.count), to: &out)
            out += body
        }
        return out
    }

    /// A format-0 file of timed messages, as the recorder writes it: a tempo event, then the
    /// messages at ticks computed from their offsets (rounded, never drifting), then End of Track.
    public static func recording(_ entries: [TimedSong.Entry], ticksPerQuarterNote: UInt16 = 960,
                                 microsecondsPerQuarter: UInt32 = 500_000) -> StandardMIDIFile {
        let ticksPerQuarter = UInt64(max(1, min(ticksPerQuarterNote, 0x7FFF)))
        let nanosecondsPerQuarter = UInt64(max(1, microsecondsPerQuarter & 0xFF_FFFF)) * 1000
        func tick(_ ns: UInt64) -> UInt64 {
            let (quarters, rest) = ns.quotientAndRemainder(dividingBy: nanosecondsPerQuarter)
            return quarters * ticksPerQuarter + (rest * ticksPerQuarter + nanosecondsPerQuarter / 2) / nanosecondsPerQuarter
        }
        let tempo = microsecondsPerQuarter & 0xFF_FFFF
        var events: [TrackEvent] = [
            TrackEvent(delta: 0, kind: .meta(type: MetaType.tempo,
                                             data: [UInt8(tempo >> 16 & 0xFF), UInt8(tempo >> 8 & 0xFF), UInt8(tempo & 0xFF)])),
        ]
        events.reserveCapacity(entries.count + 2)
        var previous: UInt64 = 0
        for entry in entries {
            let now = max(previous, tick(entry.offset))
            events.append(TrackEvent(delta: UInt32(clamping: now - previous), kind: .midi(entry.message)))
            previous = now
        }
        events.append(TrackEvent(delta: 0, kind: .meta(type: MetaType.endOfTrack, data: [])))
        return StandardMIDIFile(format: 0, division: .ticksPerQuarterNote(UInt16(ticksPerQuarter)),
                                tracks: [Track(events: events)])
    }
}

private func appendUInt16(_ value: UInt16, to out: inout [UInt8]) {
    out += [UInt8(value >> 8), UInt8(value & 0xFF)]
}

private func appendUInt32(_ value: UInt32, to out: inout [UInt8]) {
    out += [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
}

/// A variable-length quantity; values above 28 bits are clamped to the largest one.
private func appendVariableLength(_ value: UInt32, to out: inout [UInt8]) {
    let v = min(value, 0x0FFF_FFFF)
    var shift: UInt32 = 21
    var started = false
    while shift > 0 {
        let group = UInt8(v >> shift & 0x7F)
        if started || group != 0 {
            out.append(group | 0x80)
            started = true
        }
        shift -= 7
    }
    out.append(UInt8(v & 0x7F))
}
