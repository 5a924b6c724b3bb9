#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import MIDI

/// A sink that records what reaches it and writes it as a Standard MIDI File on stop
/// (`record:`). The file is written to a temporary name, synced and renamed into place, so a
/// crash while writing never leaves half a file.
public final class MIDIRecorder: SinkEndpoint, @unchecked Sendable {
    /// The endpoint's name in the route file.
    public let name: String
    /// Where the recording is written.
    public let path: String
    private let logger: Logger
    private var first: MonotonicInstant?
    private var entries: [TimedSong.Entry] = []

    /// A recorder writing to `path` on stop.
    public init(name: String, path: String, logger: Logger) {
        self.name = name
        self.path = path
        self.logger = logger
    }

    public func receive(_ message: MIDIMessage, at time: MonotonicInstant) {
        let start = first ?? time
        first = start
        entries.append(TimedSong.Entry(offset: time.nanoseconds &- min(start.nanoseconds, time.nanoseconds), message: message))
    }

    public func stop() {
        let bytes = StandardMIDIFile.recording(entries).encoded()
        do {
            try Self.writeAtomically(bytes, to: path)
            logger.info("\(name): recorded \(entries.count) events to \(path)")
        } catch {
            logger.error("\(name): could not write the recording to \(path): \(error)")
        }
    }

    /// Why a file could not be written.
    struct WriteError: Error, CustomStringConvertible {
        var step: String
        var code: Int32
        var description: String { "\(step): \(String(cString: strerror(code)))" }
    }

    /// Writes `bytes` to a temporary file beside `path`, syncs it and renames it to `path`.
    static func writeAtomically(_ bytes: [UInt8], to path: String) throws {
        let temporary = path + ".partial"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw WriteError(step: "open \(temporary)", code: errno) }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, bytes.count - written) }
            if n < 0 {
                if errno == EINTR { continue }
                let code = errno
                close(fd)
                unlink(temporary)
                throw WriteError(step: "write \(temporary)", code: code)
            }
            written += n
        }
        if fsync(fd) != 0 {
            let code = errno
            close(fd)
            unlink(temporary)
            throw WriteError(step: "fsync \(temporary)", code: code)
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw WriteError(step: "rename to \(path)", code: code)
        }
    }
}
