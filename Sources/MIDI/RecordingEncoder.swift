/// A recording encoded event by event at the ticks its writer chose, so a file of everything so far costs
/// one copy, not an encoding of the whole take. The recorder's `TakeTimeline` chooses the ticks and the
/// tempo events that make them seconds or the jam's beats.
public struct RecordingEncoder: Sendable {
    private var body = TrackBody()
    private let header: [UInt8]
    /// The tick of the last event appended: deltas count from it.
    private var tick: UInt64 = 0
    /// How many MIDI messages (not tempo events) have been appended.
    public private(set) var count = 0

    /// An empty recording of `ticksPerQuarterNote` (1 to 32767) opening with a tempo event of
    /// `microsecondsPerQuarter` at tick 0.
    public init(ticksPerQuarterNote: UInt16 = 960, microsecondsPerQuarter: UInt32 = 500_000) {
        header = StandardMIDIFile.header(format: 0, division: .ticksPerQuarterNote(max(1, min(ticksPerQuarterNote, 0x7FFF))),
                                         trackCount: 1)
        body.append(StandardMIDIFile.TrackEvent(delta: 0, kind: .tempo(microsecondsPerQuarter: microsecondsPerQuarter)))
    }

    /// Appends `kind` at the absolute tick `tick`; a tick before the last event's is taken as the last event's.
    public mutating func append(_ kind: StandardMIDIFile.TrackEvent.Kind, atTick tick: UInt64) {
        let at = max(tick, self.tick)
        body.append(StandardMIDIFile.TrackEvent(delta: UInt32(clamping: at - self.tick), kind: kind))
        self.tick = at
        if case .midi = kind { count += 1 }
    }

    /// The Standard MIDI File of everything appended so far, ending with End of Track.
    public func file() -> [UInt8] {
        var out = header
        out.reserveCapacity(header.count + 8 + body.bytes.count + TrackBody.endOfTrack.count)
        appendTrackChunk(body.bytes, ending: TrackBody.endOfTrack, to: &out)
        return out
    }
}
