#if canImport(Glibc)
import Glibc
#endif
import JSON
import RouteFile


/// A client of a running daemon's control socket (`jambridge status|reload|start|stop|tempo|drums`).
public enum ControlClient {
    /// A running daemon and its socket.
    public struct Daemon: Equatable, Sendable {
        public var pid: Int32
        public var path: String
    }

    /// The daemons whose sockets are where `run` puts them without `--control` (`ControlPath`), by process ID. Sockets
    /// left by processes that are gone (killed before they could remove them) are removed. Throws if this user's
    /// directory is not theirs alone (`ControlPath.distrust(of:)`): a socket there could be anyone's.
    public static func daemons() throws(ControlClientError) -> [Daemon] {
        let directory = ControlPath.directory
        if directory != ControlPath.systemDirectory, let problem = ControlPath.distrust(of: directory) {
            throw ControlClientError(message: "\(ControlDirectoryError(directory: directory, problem: problem))")
        }
        return ControlPath.searched.flatMap { directory in
            FilePaths.entries(ofFolder: directory).compactMap { file -> Daemon? in
                guard file.hasPrefix("control-"), file.hasSuffix(".sock"),
                      let pid = Int32(file.dropFirst("control-".count).dropLast(".sock".count)) else { return nil }
                guard kill(pid, 0) == 0 || errno == EPERM else {
                    unlink("\(directory)/\(file)")
                    return nil
                }
                return Daemon(pid: pid, path: "\(directory)/\(file)")
            }
        }.sorted { $0.pid < $1.pid }
    }

    /// The socket of the running daemon `pid`, or of the one daemon running if `pid` is nil; throws what stands in the
    /// way (none runs, several do).
    public static func socket(pid: Int32?) throws(ControlClientError) -> String {
        let running = try daemons()
        if let pid {
            guard let daemon = running.first(where: { $0.pid == pid }) else {
                throw ControlClientError(message: "no jambridge \(pid) has a control socket in \(ControlPath.searched.joined(separator: " or "))")
            }
            return daemon.path
        }
        guard running.count == 1 else {
            throw ControlClientError(message: running.isEmpty ? "no jambridge is running (no control socket in \(ControlPath.searched.joined(separator: " or ")))"
                : "\(running.count) jambridge daemons run (\(running.map { String($0.pid) }.joined(separator: ", "))); say which with --pid")
        }
        return running[0].path
    }

    /// Sends `request` to the daemon listening at `path` and returns its reply; throws a message if it cannot.
    public static func send(_ request: ControlRequest, to path: String) throws(ControlClientError) -> ControlReply {
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ControlClientError(message: "cannot open a socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        guard let connected = withUnixAddress(path, { connect(fd, $0, $1) }) else {
            throw ControlClientError(message: "the control socket path \(path) is too long")
        }
        guard connected == 0 else {
            throw ControlClientError(message: "cannot reach jambridge at \(path): \(String(cString: strerror(errno)))")
        }
        var timeout = timeval(tv_sec: request.answerTimeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let line = request.json + [UInt8(ascii: "\n")]
        _ = line.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(fd, &buffer, buffer.count)
            guard count > 0 else { break }
            reply += buffer[..<count]
        }
        guard let answer = ControlReply(json: Array(reply.prefix { $0 != UInt8(ascii: "\n") })) else {
            throw ControlClientError(message: "jambridge at \(path) gave no answer within \(request.answerTimeout) s")
        }
        return answer
    }
}

/// Why a control request could not be made.
public struct ControlClientError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// Calls `body` with the Unix socket address of `path` and its length; nil if `path` is too long for one.
func withUnixAddress<T>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T? {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
}
