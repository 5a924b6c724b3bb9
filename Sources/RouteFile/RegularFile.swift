#if canImport(Glibc)
import Glibc
#endif
import MIDI

/// Reads the files a route file names, and route files themselves, with a bound: only regular files
/// (a FIFO, a terminal or /dev/zero would make a read wait or run forever) and only up to a size limit
/// (a huge or growing file would fill memory).
public enum RegularFile {
    /// The UTF-8 text of the `what` (such as "style file") at `path`, at most `routeFileLimit` bytes; what stops it
    /// being read is one error at 1:1.
    static func text(atPath path: String, what: String) throws(RouteFileErrors) -> String {
        let start = SourceLocation(file: path, line: 1, column: 1)
        let bytes: [UInt8]
        do {
            bytes = try contents(atPath: path, limit: routeFileLimit)
        } catch {
            throw RouteFileErrors(errors: [RouteFileError(location: start, message: "cannot read the \(what): \(error)")])
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw RouteFileErrors(errors: [RouteFileError(location: start, message: "the \(what) is not UTF-8 text")])
        }
        return text
    }

    /// The largest route file read, 1 MiB: some 10,000 routes, far more than anyone writes by hand,
    /// and checked in under a second.
    public static let routeFileLimit = 1 << 20
    /// The largest song (`file:`) read, 4 MiB: about a million events, several times the largest
    /// ordinary Standard MIDI File; a song is held in memory as some 40 bytes per event.
    public static let songLimit = 4 << 20

    /// The bytes of the regular file at `path`, refused if it is anything else or holds more than `limit` bytes.
    /// Opening never waits (a FIFO without a writer opens at once and is refused), and at most `limit` + 1
    /// bytes are read, so a file that grows meanwhile is refused too.
    public static func contents(atPath path: String, limit: Int) throws(RegularFileError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { throw .system(errno) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw .system(errno) }
        guard status.st_mode & S_IFMT == S_IFREG else { throw .notRegular(RegularFileError.kind(of: status.st_mode)) }
        guard status.st_size <= limit else { throw .tooLarge(limit: limit) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(status.st_size) + 1)
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while bytes.count <= limit {
            let wanted = min(chunk.count, limit + 1 - bytes.count)
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, wanted) }
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw .system(errno)
            }
            bytes += chunk[..<count]
        }
        guard bytes.count <= limit else { throw .tooLarge(limit: limit) }
        return bytes
    }

    /// The Standard MIDI File at `path` (a song for a `file:` endpoint), at most `songLimit` bytes.
    public static func song(atPath path: String) throws(SongFileError) -> StandardMIDIFile {
        let bytes: [UInt8]
        do {
            bytes = try contents(atPath: path, limit: songLimit)
        } catch {
            throw .unreadable(error)
        }
        do {
            return try StandardMIDIFile(bytes: bytes)
        } catch {
            throw .notMIDI(error)
        }
    }
}

/// Why a file could not be read by `RegularFile`.
public enum RegularFileError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The operating system refused (open, fstat or read), with its errno.
    case system(Int32)
    /// It is not a regular file but what is named: "a directory", "a FIFO", "a character device", ...
    case notRegular(String)
    /// It holds more than `limit` bytes.
    case tooLarge(limit: Int)

    public var description: String {
        switch self {
        case .system(let code):
            String(cString: strerror(code))
        case .notRegular(let kind):
            "it is \(kind), not a regular file"
        case .tooLarge(let limit):
            "it is larger than \(limit % (1 << 20) == 0 ? "\(limit >> 20) MiB" : "\(limit) bytes"), the most jambridge reads"
        }
    }

    /// What a file of `mode` is, for messages.
    static func kind(of mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: "a directory"
        case S_IFIFO: "a FIFO"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        default: "a special file"
        }
    }
}

/// Why a song (a `file:` endpoint's Standard MIDI File) cannot be played.
public enum SongFileError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file could not be read.
    case unreadable(RegularFileError)
    /// The file was read but is not a Standard MIDI File jambridge can play.
    case notMIDI(StandardMIDIFileError)

    public var description: String {
        switch self {
        case .unreadable(let error): error.description
        case .notMIDI(let error): error.description
        }
    }
}
