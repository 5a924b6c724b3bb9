#if canImport(Glibc)
import Glibc
#endif

/// Opening and reading kit files without waiting or filling memory: only regular files (a FIFO without a writer
/// would make a read wait forever), read up to a limit. RouteFile's `RegularFile` does the same for route files;
/// DrumKits does not depend on RouteFile.
enum KitFileAccess {
    /// A descriptor of the regular file at `path`, open for reading; the caller closes it.
    static func openRegularFile(_ path: String) throws(KitFileAccessError) -> Int32 {
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { throw KitFileAccessError(reason: String(cString: strerror(errno))) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw KitFileAccessError(reason: reason)
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            throw KitFileAccessError(reason: status.st_mode & S_IFMT == S_IFDIR ? "it is a directory" : "it is not a regular file")
        }
        return descriptor
    }

    /// The bytes of the regular file at `path`, refused if it holds more than `limit` (at most `limit` + 1 are read,
    /// so a file growing meanwhile is refused too).
    static func contents(of path: String, limit: Int) throws(KitFileAccessError) -> [UInt8] {
        let descriptor = try openRegularFile(path)
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while bytes.count <= limit {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, min($0.count, limit + 1 - bytes.count)) }
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw KitFileAccessError(reason: String(cString: strerror(errno)))
            }
            bytes += chunk[..<count]
        }
        guard bytes.count <= limit else { throw KitFileAccessError(reason: "it is larger than \(limit >> 20) MiB, too large for a kit's description") }
        return bytes
    }

    /// True if something exists at `path`.
    static func exists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }

    /// True if `path` is a directory.
    static func isDirectory(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFDIR
    }
}

/// Why a kit file could not be opened or read: the operating system's reason or what the file is instead.
struct KitFileAccessError: Error {
    var reason: String
}
