#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Logging
import MIDI
import Synchronization

/// A sink that records what reaches it as a Standard MIDI File (`record:`), so that a crash loses at
/// most the last couple of seconds of the take.
///
/// When made, it claims its file: the `record:` path, or the first free numbered name beside it
/// (`take-2.mid`, `take-3.mid`, ...), created exclusively and holding an empty recording at once, so an
/// earlier take is never overwritten and a path that cannot be written is an error at start. The engine's
/// queue only gives what it receives its tick (arithmetic) and appends it to a pending list; a writer queue
/// of the recorder's own takes that list every `checkpointSeconds`, encodes it onto the take so far and
/// writes the whole file to `PATH.partial`, synced, then renamed over the take: the file on disk is always a
/// complete Standard MIDI File. A checkpoint that cannot be written (a full disk) is logged once, the take goes on in memory,
/// and every later checkpoint tries again. Stop writes the final file.
///
/// A take holds the music: channel messages and SysEx. Clock bytes, Start/Stop/Continue, Song Position and
/// the other system common and real-time messages are counted and left out: written as raw bytes (SMF F7
/// escapes) they made files that readers such as mido refuse, and 24 clock bytes a beat are no tempo. Instead
/// the clock that reaches the recorder is followed, and while it runs the take's beats are its beats, with
/// tempo events and a bar line on its Start (`TakeTimeline`).
public final class MIDIRecorder: SinkEndpoint, @unchecked Sendable { // `timeline` and `leftOut` are touched on the engine's queue only; `take` and `failing` on `writer` only
    /// How often, in seconds, what was received is written to the file.
    static let checkpointSeconds = 2

    /// The endpoint's name in the route file.
    public let name: String
    /// Where this take is written: the `record:` path or the numbered name that was free.
    public let path: String
    private let logger: Logger
    /// Where messages fall in the take, following the clock.
    private var timeline = TakeTimeline()
    /// System common and real-time messages received and not recorded as messages.
    private(set) var leftOut = 0
    /// What the timeline placed since the last checkpoint took it.
    private let pending = Mutex<[TakeEvent]>([])
    private let writer: DispatchQueue
    private let timer: DispatchSourceTimer
    /// The take so far, encoded.
    private var take: RecordingEncoder
    /// True while the file on disk lags behind the take because writing it failed.
    private var failing = false

    /// A recorder for the `record:` path `requested`: claims its file (see the type's description) and starts
    /// checkpointing. Throws if no file can be created there.
    public init(name: String, requested: String, logger: Logger) throws(RecordingError) {
        self.name = name
        self.logger = logger
        take = RecordingEncoder(ticksPerQuarterNote: TakeTimeline.ticksPerQuarter, microsecondsPerQuarter: TakeTimeline.initialTempo)
        path = try Self.claimTake(at: requested, writing: take.file())
        writer = DispatchQueue(label: "jambridge.recorder.\(name)", qos: .utility)
        timer = DispatchSource.makeTimerSource(queue: writer)
        timer.setEventHandler { [weak self] in self?.checkpoint() }
        let interval = DispatchTimeInterval.seconds(Self.checkpointSeconds)
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(100))
        timer.activate()
        logger.info("\(name): recording to \(path)")
    }

    deinit { timer.cancel() }

    public func receive(_ message: MIDIMessage, at time: MonotonicInstant, to recipients: Recipients) {
        guard recipients.include(.none) else { return }
        if message.channel == nil && message.kind != .sysEx { leftOut += 1 }
        timeline.receive(message, at: time) { event in pending.withLock { $0.append(event) } }
    }

    public func stop() {
        timeline.finish { event in pending.withLock { $0.append(event) } }
        if leftOut > 0 {
            logger.info("\(name): \(leftOut) clock, transport and other system messages were not recorded as messages (a take holds channel messages, SysEx and the tempo of a clock that runs)")
        }
        let tempo = timeline.tempoChanges > 0 ? " and \(timeline.tempoChanges) tempo changes from the clock" : ""
        writer.sync {
            timer.cancel()
            checkpoint()
            if failing {
                logger.error("\(name): could not write the end of the recording (\(take.count) events) to \(path); it holds what was written up to the last checkpoint")
            } else {
                logger.info("\(name): recorded \(take.count) events\(tempo) to \(path)")
            }
        }
    }

    /// Encodes what arrived since the last checkpoint onto the take and writes the file, if anything arrived
    /// or the last write failed; on `writer`.
    private func checkpoint() {
        let arrived = pending.withLock { entries in
            // The engine goes on appending to a buffer as large as this one, without growing it again.
            defer { entries.removeAll(keepingCapacity: true) }
            return entries
        }
        for event in arrived { take.append(event.kind, atTick: event.tick) }
        guard !arrived.isEmpty || failing else { return }
        do {
            try Self.writeAtomically(take.file(), to: path)
        } catch {
            if !failing {
                logger.error("\(name): cannot write the recording: \(error); the take is safe in \(path) up to the last checkpoint, recording goes on in memory and writing is tried again every \(Self.checkpointSeconds) s")
                failing = true
            }
            return
        }
        if failing {
            logger.notice("\(name): writing \(path) works again; it holds the whole take so far")
            failing = false
        }
    }

    /// Why a recording cannot be made or written.
    public struct RecordingError: Error, CustomStringConvertible {
        /// What was being done, with the file's path.
        public var step: String
        /// The errno.
        public var code: Int32
        public var description: String { "\(step): \(String(cString: strerror(code)))" }
    }

    /// The most numbered names tried beside a `record:` path before giving up.
    static let maximumTakeNumber = 9999

    /// Creates the first free one of `requested`, `requested` numbered 2, 3, ... (`take-2.mid`) exclusively,
    /// writes `bytes` into it and returns its path.
    static func claimTake(at requested: String, writing bytes: [UInt8]) throws(RecordingError) -> String {
        for number in 1...maximumTakeNumber {
            let candidate = number == 1 ? requested : numbered(requested, number)
            let descriptor = open(candidate, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            if descriptor < 0 {
                if errno == EEXIST { continue }
                throw RecordingError(step: "create \(candidate)", code: errno)
            }
            do {
                try writeAll(bytes, to: descriptor, path: candidate)
                close(descriptor)
            } catch {
                close(descriptor)
                unlink(candidate)
                throw error
            }
            return candidate
        }
        throw RecordingError(step: "create \(numbered(requested, maximumTakeNumber)) (every name up to it is taken)", code: EEXIST)
    }

    /// `path` with `-number` before its extension: `take.mid` -> `take-2.mid`, `take` -> `take-2`.
    static func numbered(_ path: String, _ number: Int) -> String {
        let slash = path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex
        let name = path[slash...]
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "\(path)-\(number)" }
        return "\(path[..<dot])-\(number)\(path[dot...])"
    }

    /// Writes `bytes` to a temporary file beside `path`, syncs it and renames it to `path`.
    static func writeAtomically(_ bytes: [UInt8], to path: String) throws(RecordingError) {
        let temporary = path + ".partial"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw RecordingError(step: "open \(temporary)", code: errno) }
        do throws(RecordingError) {
            try writeAll(bytes, to: descriptor, path: temporary)
            guard fsync(descriptor) == 0 else { throw RecordingError(step: "fsync \(temporary)", code: errno) }
            close(descriptor)
        } catch {
            close(descriptor)
            unlink(temporary)
            throw error
        }
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw RecordingError(step: "rename to \(path)", code: code)
        }
    }

    /// Writes all of `bytes` to `descriptor` (the file at `path`, for messages).
    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32, path: String) throws(RecordingError) {
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + written, bytes.count - written) }
            if count < 0 {
                if errno == EINTR { continue }
                throw RecordingError(step: "write \(path)", code: errno)
            }
            written += count
        }
    }
}
