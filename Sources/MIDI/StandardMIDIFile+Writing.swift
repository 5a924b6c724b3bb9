extension StandardMIDIFile {
    /// The file's bytes: header, then each track, ending every track with End of Track.
    /// SysEx is written as F0 events; system common and real-time messages as F7 escapes.
    public func encoded() -> [UInt8] {
        var out = Self.header(format: format, division: division, trackCount: tracks.count)
        for track in tracks {
            var body = TrackBody()
            for event in track.events { body.append(event) }
            let ends = if case .meta(MetaType.endOfTrack, _) = track.events.last?.kind { true } else { false }
            appendTrackChunk(body.bytes, ending: ends ? [] : TrackBody.endOfTrack, to: &out)
        }
        return out
    }

    /// The header chunk (MThd) of a file of `format` with `division` and `trackCount` tracks.
    static func header(format: UInt16, division: Division, trackCount: Int) -> [UInt8] {
        var out: [UInt8] = Array("MThd".utf8)
        appendUInt32(6, to: &out)
        appendUInt16(format, to: &out)
        appendUInt16(UInt16(truncatingIfNeeded: trackCount), to: &out)
        switch division {
        case .ticksPerQuarterNote(let ticks):
            appendUInt16(ticks & 0x7FFF, to: &out)
        case .smpte(let fps, let ticksPerFrame):
            out.append(UInt8(bitPattern: Int8(truncatingIfNeeded: -Int(fps))))
            out.append(ticksPerFrame)
        }
        return out
    }

    /// A format-0 file of timed messages, as the recorder writes it: a tempo event, then the
    /// messages at ticks computed from their offsets (rounded, never drifting), then End of Track.
    /// `RecordingEncoder` writes the same bytes given the same ticks.
    public static func recording(_ entries: [TimedSong.Entry], ticksPerQuarterNote: UInt16 = 960,
                                 microsecondsPerQuarter: UInt32 = 500_000) -> StandardMIDIFile {
        var clock = RecordingClock(ticksPerQuarterNote: ticksPerQuarterNote, microsecondsPerQuarter: microsecondsPerQuarter)
        var events: [TrackEvent] = [clock.tempoEvent]
        events.reserveCapacity(entries.count + 2)
        for entry in entries {
            events.append(TrackEvent(delta: clock.delta(to: entry.offset), kind: .midi(entry.message)))
        }
        events.append(TrackEvent(delta: 0, kind: .meta(type: MetaType.endOfTrack, data: [])))
        return StandardMIDIFile(format: 0, division: clock.division, tracks: [Track(events: events)])
    }
}

/// Turns a recording's nanosecond offsets into delta ticks at one fixed tempo: rounded from the
/// start, so deltas never drift, and never going back in time.
struct RecordingClock: Sendable {
    private let ticksPerQuarter: UInt64
    private let nanosecondsPerQuarter: UInt64
    private let microsecondsPerQuarter: UInt32
    private var previous: UInt64 = 0

    /// A clock of `ticksPerQuarterNote` (1 to 32767) at `microsecondsPerQuarter` (24 bits).
    init(ticksPerQuarterNote: UInt16, microsecondsPerQuarter: UInt32) {
        ticksPerQuarter = UInt64(max(1, min(ticksPerQuarterNote, 0x7FFF)))
        self.microsecondsPerQuarter = microsecondsPerQuarter & 0xFF_FFFF
        nanosecondsPerQuarter = UInt64(max(1, self.microsecondsPerQuarter)) * 1000
    }

    /// The file's division.
    var division: StandardMIDIFile.Division { .ticksPerQuarterNote(UInt16(ticksPerQuarter)) }

    /// The tempo event that starts the track.
    var tempoEvent: StandardMIDIFile.TrackEvent {
        .init(delta: 0, kind: .tempo(microsecondsPerQuarter: microsecondsPerQuarter))
    }

    /// The delta ticks from the previous event to one `offset` nanoseconds from the start.
    mutating func delta(to offset: UInt64) -> UInt32 {
        let (quarters, rest) = offset.quotientAndRemainder(dividingBy: nanosecondsPerQuarter)
        let tick = quarters * ticksPerQuarter + (rest * ticksPerQuarter + nanosecondsPerQuarter / 2) / nanosecondsPerQuarter
        let now = max(previous, tick)
        defer { previous = now }
        return UInt32(clamping: now - previous)
    }
}

/// A track chunk's body as it is built, event by event (without the chunk header).
struct TrackBody: Sendable {
    /// The encoded events so far.
    private(set) var bytes: [UInt8] = []
    private var encoder = MIDIEncoder()

    /// Appends `event`: its delta time, then the event.
    mutating func append(_ event: StandardMIDIFile.TrackEvent) {
        appendVariableLength(event.delta, to: &bytes)
        switch event.kind {
        case .midi(.sysEx(let data)):
            bytes.append(0xF0)
            appendVariableLength(UInt32(truncatingIfNeeded: data.count + 1), to: &bytes)
            bytes += data
            bytes.append(0xF7)
        case .midi(let message) where message.channel != nil:
            encoder.encode(message, into: &bytes)
        case .midi(let message):
            var escaped: [UInt8] = []
            encoder.encode(message, into: &escaped)
            bytes.append(0xF7)
            appendVariableLength(UInt32(escaped.count), to: &bytes)
            bytes += escaped
        case .meta(let type, let data):
            bytes += [0xFF, type]
            appendVariableLength(UInt32(truncatingIfNeeded: data.count), to: &bytes)
            bytes += data
        case .escape(let data):
            bytes.append(0xF7)
            appendVariableLength(UInt32(truncatingIfNeeded: data.count), to: &bytes)
            bytes += data
        }
    }

    /// End of Track, 0 ticks after the last event.
    static let endOfTrack: [UInt8] = [0x00, 0xFF, StandardMIDIFile.MetaType.endOfTrack, 0x00]
}

/// Appends a track chunk (MTrk, length, `body`, then `ending`) to `out`.
func appendTrackChunk(_ body: [UInt8], ending: [UInt8] = [], to out: inout [UInt8]) {
    out += Array("MTrk".utf8)
    appendUInt32(UInt32(truncatingIfNeeded: body.count + ending.count), to: &out)
    out += body
    out += ending
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
