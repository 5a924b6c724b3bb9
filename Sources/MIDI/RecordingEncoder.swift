/// A recording encoded as its messages arrive, so a file of everything so far costs one copy, not
/// an encoding of the whole take: the bytes of `StandardMIDIFile.recording` for the same messages.
public struct RecordingEncoder: Sendable {
    private var clock: RecordingClock
    private var body = TrackBody()
    private let header: [UInt8]
    /// How many messages have been appended.
    public private(set) var count = 0

    /// An empty recording at `ticksPerQuarterNote` and `microsecondsPerQuarter`, as `recording` takes them.
    public init(ticksPerQuarterNote: UInt16 = 960, microsecondsPerQuarter: UInt32 = 500_000) {
        clock = RecordingClock(ticksPerQuarterNote: ticksPerQuarterNote, microsecondsPerQuarter: microsecondsPerQuarter)
        header = StandardMIDIFile.header(format: 0, division: clock.division, trackCount: 1)
        body.append(clock.tempoEvent)
    }

    /// Appends `entries`, whose offsets are nanoseconds from the recording's start.
    public mutating func append(contentsOf entries: some Sequence<TimedSong.Entry>) {
        for entry in entries {
            body.append(StandardMIDIFile.TrackEvent(delta: clock.delta(to: entry.offset), kind: .midi(entry.message)))
            count += 1
        }
    }

    /// The Standard MIDI File of everything appended so far, ending with End of Track.
    public func file() -> [UInt8] {
        var out = header
        out.reserveCapacity(header.count + 8 + body.bytes.count + TrackBody.endOfTrack.count)
        appendTrackChunk(body.bytes, ending: TrackBody.endOfTrack, to: &out)
        return out
    }
}
