#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import Jam

/// The running daemon's control socket: a Unix stream socket (mode 0660) in the status directory,
/// `control-PID.sock`, taking one request a connection as a line of JSON and answering with one:
/// `{"command": "start" | "stop" | "status"}` or `{"command": "tempo", "bpm": 128}` gets
/// `{"ok": true, "message": "..."}` (`"lines": [...]` for status) or `{"ok": false, "message": "why"}`.
/// `jambridge start|stop|tempo|status` are its clients.
final class ControlSocket: @unchecked Sendable {
    /// The longest request read.
    static let requestLimit = 4096
    /// How long a client may take to send its request, in seconds.
    static let requestTimeout = 2

    private let source: DispatchSourceRead

    /// The socket path of the daemon with process ID `pid`.
    static func path(pid: Int32) -> String { "\(SessionStatus.directory)/control-\(pid).sock" }

    /// Listens at `path(pid: getpid())`, answering each request with `answer` (called on a queue of its own).
    init(answer: @escaping @Sendable (ControlRequest) -> ControlReply) throws(ControlSocketError) {
        let path = Self.path(pid: getpid())
        try? FileManager.default.createDirectory(atPath: SessionStatus.directory, withIntermediateDirectories: true)
        unlink(path)
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw ControlSocketError(path: path, operation: "create", code: errno) }
        guard let bound = withUnixAddress(path, { bind(descriptor, $0, $1) }) else {
            close(descriptor)
            throw ControlSocketError(path: path, operation: "bind", code: ENAMETOOLONG)
        }
        guard bound == 0, chmod(path, 0o660) == 0, listen(descriptor, 8) == 0 else {
            let code = errno
            close(descriptor)
            throw ControlSocketError(path: path, operation: "listen on", code: code)
        }
        let queue = DispatchQueue(label: "jambridge.control-socket")
        source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
        let fd = descriptor
        source.setEventHandler {
            let client = accept(fd, nil, nil)
            guard client >= 0 else { return }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            Self.serve(client, answer: answer)
            close(client)
        }
        source.setCancelHandler {
            close(fd)
            unlink(path)
        }
        source.resume()
    }

    /// Stops answering and removes the socket (without waiting for a request being answered).
    func stop() {
        source.cancel()
    }

    /// Reads one request line from `client` (bounded in size and time), answers it.
    private static func serve(_ client: Int32, answer: (ControlRequest) -> ControlReply) {
        var timeout = timeval(tv_sec: requestTimeout, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var request: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1024)
        while !request.contains(UInt8(ascii: "\n")), request.count < requestLimit {
            let count = read(client, &buffer, buffer.count)
            guard count > 0 else { break }
            request += buffer[..<count]
        }
        let line = request.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).first.map(Array.init) ?? []
        let reply: ControlReply
        if let parsed = ControlRequest(json: line) {
            reply = answer(parsed)
        } else {
            reply = ControlReply(ok: false, message: "not a request: send one line of JSON such as {\"command\": \"status\"}")
        }
        let bytes = reply.json + [UInt8(ascii: "\n")]
        _ = bytes.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }
}

/// What the drum sequencer is told while it plays: a style (built-in or a style file's path) from the next bar
/// line, a level to keep (nil: follow the activity), voices muted or not.
public enum DrumsCommand: Equatable, Sendable {
    case style(String)
    case level(Int?)
    case mute([String], Bool)
}

/// A command to the running jam (`start`, `stop`, `tempo`) or its drums.
public enum ControlCommand: Equatable, Sendable {
    case jam(JamCommand)
    case drums(DrumsCommand)
}

/// A request to the control socket.
public enum ControlRequest: Equatable, Sendable {
    case status
    case command(ControlCommand)

    /// The request in a line of JSON, or nil if it is none.
    init?(json: [UInt8]) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json)) as? [String: Any],
              let command = object["command"] as? String else { return nil }
        switch command {
        case "start": self = .command(.jam(.start))
        case "stop": self = .command(.jam(.stop))
        case "status": self = .status
        case "tempo":
            guard let bpm = object["bpm"] as? Double else { return nil }
            self = .command(.jam(.tempo(bpm)))
        case "drums-style":
            guard let style = object["style"] as? String else { return nil }
            self = .command(.drums(.style(style)))
        case "drums-level":
            guard let level = object["level"] as? Int else { return nil }
            self = .command(.drums(.level(level == 0 ? nil : level)))
        case "drums-mute":
            guard let voices = object["voices"] as? [String], let on = object["on"] as? Bool else { return nil }
            self = .command(.drums(.mute(voices, on)))
        default: return nil
        }
    }

    /// The request as a line of JSON (without the newline).
    public var json: [UInt8] {
        let object: [String: Any]
        switch self {
        case .status: object = ["command": "status"]
        case .command(.jam(.start)): object = ["command": "start"]
        case .command(.jam(.stop)): object = ["command": "stop"]
        case .command(.jam(.tempo(let bpm))): object = ["command": "tempo", "bpm": bpm]
        case .command(.drums(.style(let style))): object = ["command": "drums-style", "style": style]
        case .command(.drums(.level(let level))): object = ["command": "drums-level", "level": level ?? 0]
        case .command(.drums(.mute(let voices, let on))): object = ["command": "drums-mute", "voices": voices, "on": on]
        }
        return Array((try? JSONSerialization.data(withJSONObject: object)) ?? Data())
    }
}

/// The control socket's answer.
public struct ControlReply: Equatable, Sendable {
    public var ok: Bool
    public var message: String
    /// Status lines (for `status`).
    public var lines: [String] = []

    public init(ok: Bool, message: String, lines: [String] = []) {
        self.ok = ok
        self.message = message
        self.lines = lines
    }

    /// The reply in a line of JSON, or nil if it is none.
    public init?(json: [UInt8]) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json)) as? [String: Any],
              let ok = object["ok"] as? Bool, let message = object["message"] as? String else { return nil }
        self.ok = ok
        self.message = message
        lines = object["lines"] as? [String] ?? []
    }

    var json: [UInt8] {
        let object: [String: Any] = ["ok": ok, "message": message, "lines": lines]
        return Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data())
    }
}

/// The control socket could not be opened.
struct ControlSocketError: Error, CustomStringConvertible {
    var path: String
    var operation: String
    var code: Int32
    var description: String { "cannot \(operation) the control socket \(path): \(String(cString: strerror(code)))" }
}

/// A client of a running daemon's control socket (`jambridge start|stop|tempo|status`).
public enum ControlClient {
    /// The control sockets of running daemons, by process ID.
    public static func daemons() -> [Int32] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: SessionStatus.directory)) ?? []
        return files.compactMap { file -> Int32? in
            guard file.hasPrefix("control-"), file.hasSuffix(".sock"),
                  let pid = Int32(file.dropFirst("control-".count).dropLast(".sock".count)) else { return nil }
            return kill(pid, 0) == 0 || errno == EPERM ? pid : nil
        }.sorted()
    }

    /// Sends `request` to the daemon `pid` and returns its reply; throws a message if it cannot.
    public static func send(_ request: ControlRequest, to pid: Int32) throws(ControlClientError) -> ControlReply {
        let path = ControlSocket.path(pid: pid)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ControlClientError(message: "cannot open a socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        guard let connected = withUnixAddress(path, { connect(fd, $0, $1) }) else {
            throw ControlClientError(message: "the control socket path \(path) is too long")
        }
        guard connected == 0 else {
            throw ControlClientError(message: "cannot reach jambridge \(pid) at \(path): \(String(cString: strerror(errno)))")
        }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let line = request.json + [UInt8(ascii: "\n")]
        _ = line.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(fd, &buffer, buffer.count)
            guard count > 0 else { break }
            reply += buffer[..<count]
        }
        guard let answer = ControlReply(json: Array(reply.prefix { $0 != UInt8(ascii: "\n") })) else {
            throw ControlClientError(message: "jambridge \(pid) gave no answer")
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
private func withUnixAddress<T>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T? {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
}
