/// A Standard MIDI File's messages merged into one list with their times in nanoseconds,
/// the tempo map applied: what a player needs.
public struct TimedSong: Sendable, Equatable {
    /// A message and when it plays, in nanoseconds from the song's start.
    public struct Entry: Sendable, Equatable {
        /// Nanoseconds from the song's start.
        public var offset: UInt64
        /// The message.
        public var message: MIDIMessage
        /// `message` at `offset` nanoseconds.
        public init(offset: UInt64, message: MIDIMessage) {
            self.offset = offset
            self.message = message
        }
    }

    /// The messages in time order (ties keep track order, then event order).
    public let entries: [Entry]
    /// Nanoseconds to the end of the longest track (its End of Track, or its last event).
    public let duration: UInt64

    /// The timed messages of `file`. Format 2 files (independent songs) play their first song.
    public init(_ file: StandardMIDIFile) {
        let tracks = file.format == 2 ? Array(file.tracks.prefix(1)) : file.tracks
        // Absolute ticks per event, and tempo changes from every track (they apply to all).
        var timed: [(tick: UInt64, track: Int, index: Int, message: MIDIMessage)] = []
        var tempos: [(tick: UInt64, microseconds: UInt64)] = []
        var lastTick: UInt64 = 0
        for (trackIndex, track) in tracks.enumerated() {
            var tick: UInt64 = 0
            for (index, event) in track.events.enumerated() {
                tick += UInt64(event.delta)
                switch event.kind {
                case .midi(let message):
                    timed.append((tick, trackIndex, index, message))
                case .meta(StandardMIDIFile.MetaType.tempo, let data) where data.count == 3:
                    let us = UInt64(data[0]) << 16 | UInt64(data[1]) << 8 | UInt64(data[2])
                    if us > 0 { tempos.append((tick, us)) }
                default:
                    break
                }
            }
            lastTick = max(lastTick, tick)
        }
        timed.sort { ($0.tick, $0.track, $0.index) < ($1.tick, $1.track, $1.index) }
        tempos.sort { $0.tick < $1.tick }
        let clock = TickClock(division: file.division, tempos: tempos)
        entries = timed.map { Entry(offset: clock.nanoseconds(at: $0.tick), message: $0.message) }
        duration = clock.nanoseconds(at: lastTick)
    }
}

/// Converts ticks to nanoseconds through a tempo map, each time from the start of the tempo
/// segment the tick lies in, so rounding never accumulates.
private struct TickClock {
    /// Segment starts: tick, nanoseconds at that tick, nanoseconds per tick as a fraction.
    private var segments: [(tick: UInt64, start: UInt64, numerator: UInt64, denominator: UInt64)] = []

    init(division: StandardMIDIFile.Division, tempos: [(tick: UInt64, microseconds: UInt64)]) {
        switch division {
        case .smpte(let fps, let ticksPerFrame):
            // 29 means 29.97 drop-frame: 30000/1001 frames per second.
            let (num, den): (UInt64, UInt64) = fps == 29
                ? (1_000_000_000 * 1001, 30000 * UInt64(ticksPerFrame))
                : (1_000_000_000, UInt64(fps) * UInt64(ticksPerFrame))
            segments = [(0, 0, num, max(1, den))]
        case .ticksPerQuarterNote(let ticks):
            let ppq = UInt64(max(1, ticks))
            segments = [(0, 0, 500_000 * 1000, ppq)]
            for tempo in tempos {
                let start = nanoseconds(at: tempo.tick)
                if segments[segments.count - 1].tick == tempo.tick { segments.removeLast() }
                segments.append((tempo.tick, start, tempo.microseconds * 1000, ppq))
            }
        }
    }

    func nanoseconds(at tick: UInt64) -> UInt64 {
        // The last segment starting at or before `tick`, by binary search.
        var low = 0
        var high = segments.count - 1
        while low < high {
            let mid = (low + high + 1) / 2
            if segments[mid].tick <= tick { low = mid } else { high = mid - 1 }
        }
        let s = segments[low]
        let (product, overflow) = (tick - s.tick).multipliedReportingOverflow(by: s.numerator)
        guard !overflow else { return UInt64.max }
        let (sum, overflow2) = s.start.addingReportingOverflow(product / s.denominator)
        return overflow2 ? UInt64.max : sum
    }
}
