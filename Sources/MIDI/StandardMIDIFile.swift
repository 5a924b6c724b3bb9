/// A Standard MIDI File (SMF, formats 0, 1 and 2): header, tracks, and their events in delta ticks.
public struct StandardMIDIFile: Sendable, Equatable {
    /// How tracks relate: 0 one track, 1 simultaneous tracks, 2 independent songs.
    public var format: UInt16
    /// What a tick is.
    public var division: Division
    /// The tracks, in file order.
    public var tracks: [Track]

    /// What one tick is.
    public enum Division: Sendable, Equatable {
        /// Ticks per quarter note; the tempo map says how long a quarter is.
        case ticksPerQuarterNote(UInt16)
        /// SMPTE time: frames per second (24, 25, 29 for 29.97 drop-frame, 30) and ticks per frame.
        case smpte(framesPerSecond: UInt8, ticksPerFrame: UInt8)
    }

    /// One track: its events in order. The last is normally End of Track (meta 0x2F).
    public struct Track: Sendable, Equatable {
        /// The events, each with its delta time from the one before.
        public var events: [TrackEvent]
        /// A track holding `events`.
        public init(events: [TrackEvent]) { self.events = events }
    }

    /// One event of a track.
    public struct TrackEvent: Sendable, Equatable {
        /// Ticks since the previous event of the track.
        public var delta: UInt32
        /// What happens.
        public var kind: Kind
        /// An event `delta` ticks after the previous one.
        public init(delta: UInt32, kind: Kind) {
            self.delta = delta
            self.kind = kind
        }

        /// What a track event holds.
        public enum Kind: Sendable, Equatable {
            /// A MIDI message (SysEx and escaped system messages included).
            case midi(MIDIMessage)
            /// A meta event (tempo 0x51, end of track 0x2F, text, ...).
            case meta(type: UInt8, data: [UInt8])
            /// An F7 escape holding bytes that are not one system message.
            case escape([UInt8])

            /// A set tempo meta event: `microsecondsPerQuarter` in its 24 bits.
            public static func tempo(microsecondsPerQuarter: UInt32) -> Kind {
                .meta(type: MetaType.tempo, data: [UInt8(microsecondsPerQuarter >> 16 & 0xFF),
                                                   UInt8(microsecondsPerQuarter >> 8 & 0xFF),
                                                   UInt8(microsecondsPerQuarter & 0xFF)])
            }
        }
    }

    /// Meta event types jambridge acts on.
    public enum MetaType {
        /// Set tempo: 3 bytes, microseconds per quarter note.
        public static let tempo: UInt8 = 0x51
        /// End of track: no data.
        public static let endOfTrack: UInt8 = 0x2F
    }

    /// A file of `format` with `division` and `tracks`.
    public init(format: UInt16, division: Division, tracks: [Track]) {
        self.format = format
        self.division = division
        self.tracks = tracks
    }
}

/// Why a Standard MIDI File could not be read, with the byte offset (and track) where it went wrong.
public struct StandardMIDIFileError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Byte offset in the file.
    public var offset: Int
    /// The track (1-based, as musicians count) when the problem is inside one.
    public var track: Int?
    /// What is wrong.
    public var reason: String

    /// An error at `offset` (in `track`, if known) for `reason`.
    public init(offset: Int, track: Int? = nil, reason: String) {
        self.offset = offset
        self.track = track
        self.reason = reason
    }

    public var description: String {
        if let track { return "track \(track) at byte \(offset): \(reason)" }
        return "at byte \(offset): \(reason)"
    }
}
