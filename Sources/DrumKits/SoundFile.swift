import CKitLibraries
#if canImport(Glibc)
import Glibc
#endif

/// Sound files through libsndfile: samples read (WAV, FLAC, AIFF and whatever else it knows), renders written.
public enum SoundFile {
    /// The longest sound read, 60 s: a cymbal rings for seconds, a longer file is a mistake, not a drum.
    public static let maximumSeconds = 60
    /// The highest sample rate read, 192 kHz: drum samples are recorded at 44.1 to 96 kHz, a few at 192 kHz.
    public static let maximumRate = 192_000
    /// The most channels a sound file read may have (of which the first two are kept).
    public static let maximumChannels = 8

    /// A sound as read: one or two channels (of more, the first two) at the file's rate.
    public struct Audio: Sendable, Equatable {
        /// The frames one after the other, each `channelCount` samples (left then right).
        public var samples: [Float]
        /// 1 (mono) or 2 (stereo).
        public var channelCount: Int
        public var rate: Int

        public var frameCount: Int { samples.count / channelCount }

        /// The samples of channel `index` (0: left or mono, 1: right).
        public func channel(_ index: Int) -> [Float] {
            stride(from: index, to: samples.count, by: channelCount).map { samples[$0] }
        }
    }

    /// What a sound file's header says, within the limits: read before a frame is decoded, so that what decoding
    /// will take is known first.
    public struct Header: Sendable, Equatable {
        public var channelCount: Int
        public var rate: Int
        /// The frames it holds; where the header does not say (`lengthKnown` false), the most it may hold
        /// (`maximumSeconds`), which is then all that is read.
        public var frames: Int
        public var lengthKnown: Bool

        /// The bytes its frames take decoded: every channel of every frame as a 32-bit float.
        public var decodedBytes: Int { frames * channelCount * MemoryLayout<Float>.size }
    }

    /// The header of the sound file at `path`, refused as `read` refuses it before decoding: not a regular file (a
    /// FIFO would make the read wait), not a sound file libsndfile can read, no sound, or more channels, a higher
    /// rate or a greater length than a drum sample may have. A WAV or AIFF file whose header claims more sound than the
    /// file holds is refused here already (libsndfile says so when it opens it); a FLAC file only when decoded.
    public static func header(path: String) throws(SoundFileError) -> Header {
        try opened(path) { file, header, sndfile throws(SoundFileError) in
            guard !headerClaimsMore(file, sndfile) else { throw SoundFileError(path: path, reason: truncated) }
            return header
        }
    }

    /// Why a file shorter than its header says is refused.
    private static let truncated = "it is truncated: its header claims more sound than the file holds"

    /// The sound in the regular file at `path`, refused as `header(path:)` refuses it, or if it holds less than its
    /// header says (a truncated file, or a header claiming gigabytes), or if its header is not `expected` (it
    /// changed since `expected` was read): at most the header's frames are decoded.
    public static func read(path: String, expecting expected: Header? = nil) throws(SoundFileError) -> Audio {
        try opened(path) { file, header, sndfile throws(SoundFileError) in
            guard expected == nil || header == expected else {
                throw SoundFileError(path: path, reason: "it changed while the kit was loading; load the kit again")
            }
            return try decode(file, header, path: path, sndfile)
        }
    }

    /// Runs `body` on the sound file at `path`, open for reading, its header once checked against the limits, and
    /// libsndfile's calls.
    private static func opened<Result>(_ path: String, _ body: (OpaquePointer, Header, jambridge_sndfile_calls) throws(SoundFileError) -> Result)
        throws(SoundFileError) -> Result {
        let sndfile = try KitLibraries.sndfile { SoundFileError(path: path, reason: $0) }
        let descriptor: Int32
        do {
            descriptor = try KitFileAccess.openRegularFile(path)
        } catch {
            throw SoundFileError(path: path, reason: error.reason)
        }
        defer { close(descriptor) }
        var info = SF_INFO()
        guard let file = sndfile.sf_open_fd(descriptor, Int32(SFM_READ), &info, Int32(SF_FALSE)) else {
            throw SoundFileError(path: path, reason: "not a sound file libsndfile can read (\(message(sndfile.sf_strerror(nil))))")
        }
        defer { _ = sndfile.sf_close(file) }
        let channelCount = Int(info.channels)
        let rate = Int(info.samplerate)
        guard (1...maximumRate).contains(rate) else {
            throw SoundFileError(path: path, reason: "its sample rate, \(rate) Hz, is not one a drum sample has (1-\(maximumRate) Hz): "
                                 + "convert it to 48 kHz (sox IN.wav -r 48000 OUT.wav)")
        }
        guard (1...maximumChannels).contains(channelCount) else {
            throw SoundFileError(path: path, reason: "it has \(channelCount) channels, more than a drum sample's \(maximumChannels): "
                                 + "keep the first two (sox IN.wav OUT.wav remix 1 2)")
        }
        let maximumFrames = rate * maximumSeconds
        guard info.frames == sf_count_t.max || info.frames <= maximumFrames else {
            throw SoundFileError(path: path, reason: "it is \(info.frames / Int64(rate)) s long, longer than the \(maximumSeconds) s "
                                 + "a drum sample may be: shorten it (sox IN.wav OUT.wav trim 0 \(maximumSeconds))")
        }
        guard info.frames > 0 else { throw SoundFileError(path: path, reason: "it holds no sound (0 frames)") }
        let lengthKnown = info.frames != sf_count_t.max
        return try body(file, Header(channelCount: channelCount, rate: rate, frames: lengthKnown ? Int(info.frames) : maximumFrames,
                                     lengthKnown: lengthKnown), sndfile)
    }

    /// The frames of `file` (at most its `header`'s, which libsndfile never reads past) as `Audio`.
    private static func decode(_ file: OpaquePointer, _ header: Header, path: String,
                               _ sndfile: jambridge_sndfile_calls) throws(SoundFileError) -> Audio {
        let channelCount = header.channelCount
        // One interleaved buffer of the header's frames; of a length the header does not give, doubled as needed up
        // to the most a sample may hold, and a longer sound is refused.
        var capacity = header.lengthKnown ? header.frames : min(header.frames, header.rate * 10)
        var samples = [Float](repeating: 0, count: capacity * channelCount)
        var frames = 0
        while true {
            if frames == capacity {
                guard capacity < header.frames else { break }
                capacity = min(capacity * 2, header.frames)
                samples += repeatElement(0, count: capacity * channelCount - samples.count)
            }
            let count = samples.withUnsafeMutableBufferPointer {
                Int(sndfile.sf_readf_float(file, $0.baseAddress! + frames * channelCount, sf_count_t(capacity - frames)))
            }
            guard count > 0 else { break }
            frames += count
        }
        if !header.lengthKnown && frames == header.frames {
            var next = [Float](repeating: 0, count: channelCount)
            guard sndfile.sf_readf_float(file, &next, 1) == 0 else {
                throw SoundFileError(path: path, reason: "it is longer than \(maximumSeconds) s, too long for a drum sample")
            }
        }
        guard sndfile.sf_error(file) == 0 else { throw SoundFileError(path: path, reason: "it is broken (\(message(sndfile.sf_strerror(file))))") }
        guard frames > 0 else { throw SoundFileError(path: path, reason: "it holds no sound (0 frames)") }
        if header.lengthKnown && frames < header.frames || headerClaimsMore(file, sndfile) {
            throw SoundFileError(path: path, reason: truncated)
        }
        samples.removeLast(samples.count - frames * channelCount)
        guard channelCount > 2 else { return Audio(samples: samples, channelCount: channelCount, rate: header.rate) }
        let stereo = [Float](unsafeUninitializedCapacity: frames * 2) { buffer, count in
            samples.withUnsafeBufferPointer { all in
                for frame in 0..<frames {
                    buffer[2 * frame] = all[frame * channelCount]
                    buffer[2 * frame + 1] = all[frame * channelCount + 1]
                }
            }
            count = frames * 2
        }
        return Audio(samples: stereo, channelCount: 2, rate: header.rate)
    }

    /// How a WAV file's samples are stored.
    public enum WAVEncoding: String, CaseIterable, Sendable {
        /// 16-bit integer PCM: what every tool reads (CDs, Python's `wave`, old samplers).
        case pcm16 = "16"
        /// 24-bit integer PCM: what most tools read, with room below the loudest hit.
        case pcm24 = "24"
        /// 32-bit float (`WAVE_FORMAT_IEEE_FLOAT`): exact, but Python's `wave` cannot read it and sox warns.
        case float

        var subtype: Int32 {
            switch self {
            case .pcm16: Int32(SF_FORMAT_PCM_16)
            case .pcm24: Int32(SF_FORMAT_PCM_24)
            case .float: Int32(SF_FORMAT_FLOAT)
            }
        }
    }

    /// Writes a stereo WAV at `rate` in `encoding` to `path`, replacing what was there, from the frames `body` hands
    /// its writer one block after another: only a block is ever held, however long the file. Integer PCM clips what
    /// lies beyond -1...1 instead of wrapping round; the same samples make the same bytes. The file is finished when
    /// `body` returns, and closed as far as it got if `body` throws.
    public static func writingWAV<Result>(path: String, rate: Int, encoding: WAVEncoding = .float,
                                          _ body: (WAVWriter) throws(SoundFileError) -> Result) throws(SoundFileError) -> Result {
        let sndfile = try KitLibraries.sndfile { SoundFileError(path: path, reason: $0) }
        var info = SF_INFO()
        info.samplerate = Int32(clamping: rate)
        info.channels = 2
        info.format = Int32(SF_FORMAT_WAV) | encoding.subtype
        guard rate > 0, sndfile.sf_format_check(&info) != 0 else { throw SoundFileError(path: path, reason: "\(rate) Hz is not a rate a WAV can have") }
        guard let file = sndfile.sf_open(path, Int32(SFM_WRITE), &info) else {
            throw SoundFileError(path: path, reason: "cannot be written (\(message(sndfile.sf_strerror(nil))))")
        }
        // No PEAK chunk: it carries the time of writing, and the same render must be the same file.
        _ = sndfile.sf_command(file, Int32(SFC_SET_ADD_PEAK_CHUNK), nil, Int32(SF_FALSE))
        if encoding != .float { _ = sndfile.sf_command(file, Int32(SFC_SET_CLIPPING), nil, Int32(SF_TRUE)) }
        let result: Result
        do {
            result = try body(WAVWriter(file: file, path: path, sndfile: sndfile))
        } catch {
            _ = sndfile.sf_close(file)
            throw error
        }
        guard sndfile.sf_close(file) == 0 else { throw SoundFileError(path: path, reason: "could not be finished (\(message(sndfile.sf_strerror(nil))))") }
        return result
    }

    /// Appends frames to the WAV file `writingWAV` opened; valid only inside its `body`.
    public struct WAVWriter {
        fileprivate let file: OpaquePointer
        fileprivate let path: String
        fileprivate let sndfile: jambridge_sndfile_calls

        /// Appends `frames`, interleaved stereo (left then right).
        public func write(_ frames: UnsafeBufferPointer<Float>) throws(SoundFileError) {
            let count = frames.count / 2
            guard sndfile.sf_writef_float(file, frames.baseAddress, sf_count_t(count)) == count else {
                throw SoundFileError(path: path, reason: "could not be written whole (\(SoundFile.message(sndfile.sf_strerror(file))))")
            }
        }
    }

    /// True if libsndfile noted, opening `file`, that a WAV's `data` or an AIFF's `SSND` chunk claims more bytes than
    /// the file holds: it then reads what is there and says so only in its log ("data : 176400 (should be 99956)").
    private static func headerClaimsMore(_ file: OpaquePointer, _ sndfile: jambridge_sndfile_calls) -> Bool {
        var log = [CChar](repeating: 0, count: 1 << 14)
        let length = log.withUnsafeMutableBytes { sndfile.sf_command(file, Int32(SFC_GET_LOG_INFO), $0.baseAddress, Int32($0.count - 1)) }
        guard length > 0 else { return false }
        let text = String(decoding: log.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return text.split(separator: "\n").contains { line in
            let trimmed = line.drop { $0 == " " }
            return (trimmed.hasPrefix("data") || trimmed.hasPrefix("SSND")) && trimmed.contains("(should be")
        }
    }

    /// libsndfile's message, without its final full stop.
    private static func message(_ text: UnsafePointer<CChar>?) -> String {
        let message = text.map { String(cString: $0) } ?? "unknown error"
        return message.hasSuffix(".") ? String(message.dropLast()) : message
    }
}

/// Why a sound file could not be read or written.
public struct SoundFileError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file's path as given.
    public var path: String
    /// What is wrong, for the musician: "No such file or directory", "it holds no sound (0 frames)".
    public var reason: String

    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    /// `'path': reason`.
    public var description: String { "'\(path)': \(reason)" }
}
