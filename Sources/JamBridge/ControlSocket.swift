#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import Jam
import Logging
import MIDI
import Synchronization
import Transport

/// Where control sockets are: `run --control PATH` puts a daemon's where it says; otherwise it is
/// `control-PID.sock` in `directory`.
public enum ControlPath {
    /// The directory of daemons' sockets: `$RUNTIME_DIRECTORY` (systemd's `RuntimeDirectory=`; the first, if it
    /// names several), else `/run/jambridge` for root, else `$XDG_RUNTIME_DIR/jambridge`, else `/tmp/jambridge-UID`.
    public static var directory: String {
        let environment = ProcessInfo.processInfo.environment
        if let runtime = environment["RUNTIME_DIRECTORY"]?.split(separator: ":").first { return String(runtime) }
        if getuid() == 0 { return systemDirectory }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty { return runtime + "/jambridge" }
        return "/tmp/jambridge-\(getuid())"
    }

    /// Where a daemon run by root (or by systemd) puts its socket.
    static let systemDirectory = "/run/jambridge"

    /// Makes `directory` if it is not there: mode 0700, or 0755 for `systemDirectory` (whose sockets the members of
    /// their group may reach). Throws if it is not this user's alone (`distrust(of:)`).
    static func prepare(_ directory: String) throws(ControlDirectoryError) {
        if mkdir(directory, directory == systemDirectory ? 0o755 : 0o700) != 0, errno != EEXIST {
            throw ControlDirectoryError(directory: directory, problem: "cannot be made: \(String(cString: strerror(errno)))")
        }
        if let problem = distrust(of: directory) { throw ControlDirectoryError(directory: directory, problem: problem) }
    }

    /// Why sockets in `directory` cannot be trusted, or nil if they can (or it is not there): it must be a directory
    /// (not a link to one) owned by this user and writable by nobody else, or another user could put a socket of
    /// their own there and answer in a daemon's place (as tmux and ssh-agent check theirs).
    static func distrust(of directory: String) -> String? {
        var info = stat()
        guard lstat(directory, &info) == 0 else { return errno == ENOENT ? nil : "cannot be read: \(String(cString: strerror(errno)))" }
        guard info.st_mode & S_IFMT == S_IFDIR else { return "is not a directory (a link or a file is in its place); remove it" }
        guard info.st_uid == geteuid() else {
            return "belongs to \(user(info.st_uid)), not to you (\(user(geteuid()))): another user could answer in jambridge's place. "
                + "Remove it (sudo rm -r \(directory)), or set XDG_RUNTIME_DIR to a directory of your own"
        }
        let writable = info.st_mode & 0o022
        guard writable == 0 else {
            return "can be written by \(writable == 0o020 ? "its group" : "others") (mode \(String(info.st_mode & 0o7777, radix: 8))): "
                + "another user could put a socket of their own in it and answer in jambridge's place. "
                + "Make it yours alone (chmod 700 \(directory)), or remove it"
        }
        return nil
    }

    /// `user 'nobody' (65534)`, or `user 65534` if it has no name.
    private static func user(_ uid: uid_t) -> String {
        guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else { return "user \(uid)" }
        return "user '\(String(cString: name))' (\(uid))"
    }

    /// The socket of the daemon `pid`, in `directory`.
    public static func socket(pid: Int32) -> String { "\(directory)/control-\(pid).sock" }

    /// Where clients look for running daemons: `directory`, and `systemDirectory` too (a system daemon's socket,
    /// which members of its group may use).
    static var searched: [String] { directory == systemDirectory ? [directory] : [directory, systemDirectory] }
}

/// The running daemon's control socket: a Unix stream socket (mode 0660: its owner and group), taking one request a
/// connection as a line of JSON and answering with one (see `ControlRequest`, `ControlReply`).
///
/// A thread of its own serves every client at once with non-blocking I/O in poll(2), so no client can hold up
/// another or the daemon: a client has `timeout` to send its request (at most `requestLimit` bytes) and again to
/// take its reply, and is then dropped; at most `clientLimit` are held at once, and a newcomer beyond that takes
/// the place of the one that has waited longest without finishing its request (others wait in the listen backlog
/// while every place is answering). Requests are answered one at a time, in order, on a queue of their own, so a
/// client waiting for its answer costs nothing but its place. When the daemon is out of file descriptors, the
/// listener is left alone for `acceptBackoff` (accepting again at once would spin).
final class ControlSocket: @unchecked Sendable { // the clients: on the thread only; the rest is immutable or in `shared`
    /// The longest request read, in bytes.
    static let requestLimit = 4096
    /// How long a client may take to send its request, and then to take its reply, in nanoseconds.
    static let timeout: UInt64 = 2_000_000_000
    /// The most clients held at once.
    static let clientLimit = 64
    /// How long the listener is left alone after `accept` failed for want of file descriptors or memory, in
    /// nanoseconds.
    static let acceptBackoff: UInt64 = 1_000_000_000

    /// Where it listens.
    let path: String
    private let listener: Int32
    private let wake: (read: Int32, write: Int32)
    private let answer: @Sendable (ControlRequest) -> ControlReply
    private let logger: Logger
    private let answering = DispatchQueue(label: "jambridge.control-answers")
    /// Replies made on `answering` for the thread to send, by client; and whether `stop` was called.
    private let shared = Mutex<(replies: [(client: Int, line: [UInt8])], stopping: Bool)>(([], false))
    private var thread: pthread_t?

    /// Listens at `path` (a socket left there by a daemon that is gone is replaced; one a running daemon listens on,
    /// or a file that is not a socket, is not), answering each request with `answer`, called on a queue of its own;
    /// `logger` hears when it cannot accept.
    init(path: String, logger: Logger, answer: @escaping @Sendable (ControlRequest) -> ControlReply) throws(ControlSocketError) {
        self.path = path
        self.logger = logger
        self.answer = answer
        try Self.clearStale(path)
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw ControlSocketError(path: path, problem: "cannot create it: \(String(cString: strerror(errno)))") }
        guard let bound = withUnixAddress(path, { bind(listener, $0, $1) }) else {
            close(listener)
            throw ControlSocketError(path: path, problem: "the path is too long for a Unix socket")
        }
        guard bound == 0, chmod(path, 0o660) == 0, listen(listener, SOMAXCONN) == 0 else {
            let code = errno
            close(listener)
            if bound == 0 { unlink(path) }
            throw ControlSocketError(path: path, problem: "cannot listen there: \(String(cString: strerror(code)))")
        }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            let code = errno
            close(listener)
            unlink(path)
            throw ControlSocketError(path: path, problem: "cannot open a wake-up pipe: \(String(cString: strerror(code)))")
        }
        for end in ends { Self.makeNonBlocking(end) }
        self.listener = listener
        wake = (ends[0], ends[1])
        switch startThread({ [self] in serve() }) {
        case .success(let thread):
            self.thread = thread
        case .failure(let error):
            close(listener)
            unlink(path)
            throw ControlSocketError(path: path, problem: "\(error)")
        }
    }

    deinit {
        close(wake.read)
        close(wake.write)
    }

    /// Stops answering, drops every client and removes the socket; answers still being made are thrown away.
    func stop() {
        guard let thread else { return }
        self.thread = nil
        shared.withLock { $0.stopping = true }
        wakeUp()
        pthread_join(thread, nil)
    }

    /// Removes a socket at `path` that nobody listens on; throws if a daemon listens there or it is not a socket.
    private static func clearStale(_ path: String) throws(ControlSocketError) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard info.st_mode & S_IFMT == S_IFSOCK else {
            throw ControlSocketError(path: path, problem: "a file that is not a socket is in the way")
        }
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(probe) }
        if withUnixAddress(path, { connect(probe, $0, $1) }) == 0 {
            throw ControlSocketError(path: path, problem: "another jambridge is listening there")
        }
        unlink(path)
    }

    /// Sets `fd` non-blocking and closed on exec (glibc's `pipe2` and `accept4` do not reach Swift).
    private static func makeNonBlocking(_ fd: Int32) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }

    private func wakeUp() {
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
    }

    /// One connection, from accept to close.
    private final class Client {
        enum State { case reading, answering, replying, done }
        let id: Int
        let fd: Int32
        var state = State.reading
        /// When it must have sent its request (reading), or taken its reply (replying).
        var deadline: MonotonicInstant
        var request: [UInt8] = []
        var reply: [UInt8] = []
        var sent = 0

        init(id: Int, fd: Int32, deadline: MonotonicInstant) {
            self.id = id
            self.fd = fd
            self.deadline = deadline
        }
    }

    /// The thread: polls the listener, the clients and the wake-up pipe until `stop`.
    private func serve() {
        var clients: [Client] = []
        var nextID = 0
        var buffer = [UInt8](repeating: 0, count: Self.requestLimit + 1)
        /// While out of file descriptors: when to try `accept` again.
        var acceptResumes: MonotonicInstant?
        /// True from a failed `accept` to the next that succeeds; such spells are logged once each.
        var acceptFailing = false
        var acceptSpells = 0
        while true {
            let (replies, stopping) = shared.withLock { shared in
                defer { shared.replies = [] }
                return (shared.replies, shared.stopping)
            }
            if stopping { break }
            let now = MonotonicClock.now()
            for (id, line) in replies {
                if let client = clients.first(where: { $0.id == id }) { startReplying(client, line, now: now) }
            }
            clients.removeAll { $0.state == .done }
            if let resumes = acceptResumes, resumes <= now { acceptResumes = nil }
            let accepting = acceptResumes == nil && (clients.count < Self.clientLimit || clients.contains { $0.state == .reading })
            // A client waiting for its answer is not polled: a hang-up would be reported at once, again and again.
            var fds = [pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: accepting ? listener : -1, events: Int16(POLLIN), revents: 0)]
                + clients.map { client in
                    switch client.state {
                    case .reading: pollfd(fd: client.fd, events: Int16(POLLIN), revents: 0)
                    case .replying: pollfd(fd: client.fd, events: Int16(POLLOUT), revents: 0)
                    case .answering, .done: pollfd(fd: -1, events: 0, revents: 0)
                    }
                }
            let waits = clients.filter { $0.state == .reading || $0.state == .replying }.map(\.deadline) + (acceptResumes.map { [$0] } ?? [])
            let timeout = waits.min().map { Int32(clamping: ($0.nanoseconds &- min($0.nanoseconds, now.nanoseconds) + 999_999) / 1_000_000) } ?? -1
            guard poll(&fds, nfds_t(fds.count), timeout) >= 0 || errno == EINTR else { break }
            if fds[0].revents != 0 { while Glibc.read(wake.read, &buffer, buffer.count) > 0 {} }
            let later = MonotonicClock.now()
            for (index, client) in clients.enumerated() where fds[index + 2].revents != 0 {
                switch client.state {
                case .reading: read(client, into: &buffer, now: later)
                case .replying: send(client)
                case .answering, .done: break
                }
            }
            if fds[1].revents != 0 {
                while clients.count < Self.clientLimit || clients.contains(where: { $0.state == .reading }) {
                    let fd = accept(listener, nil, nil)
                    guard fd >= 0 else {
                        let code = errno
                        if [EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(code) {
                            acceptResumes = later.advanced(byNanoseconds: Self.acceptBackoff)
                            if !acceptFailing {
                                acceptFailing = true
                                acceptSpells += 1
                                if isLogged(acceptSpells) {
                                    let reason = String(cString: strerror(code))
                                    logger.warning("control socket: cannot accept a client: \(reason); trying again every second (\(counted(acceptSpells, "time")) so far)")
                                }
                            }
                        }
                        break
                    }
                    acceptFailing = false
                    Self.makeNonBlocking(fd)
                    if clients.count >= Self.clientLimit,
                       let oldest = clients.filter({ $0.state == .reading }).min(by: { $0.deadline < $1.deadline }) {
                        finish(oldest)
                        clients.removeAll { $0 === oldest }
                    }
                    let client = Client(id: nextID, fd: fd, deadline: later.advanced(byNanoseconds: Self.timeout))
                    nextID += 1
                    clients.append(client)
                    read(client, into: &buffer, now: later)
                }
            }
            for client in clients where client.deadline <= later {
                switch client.state {
                case .reading: startReplying(client, ControlReply(ok: false, message: "no request within \(Self.timeout / 1_000_000_000) s").line, now: later)
                case .replying: finish(client)
                case .answering, .done: break
                }
            }
        }
        for client in clients where client.state != .done { close(client.fd) }
        close(listener)
        unlink(path)
    }

    /// Reads what `client` sent; a whole line (or all it sent before closing its end) is its request.
    private func read(_ client: Client, into buffer: inout [UInt8], now: MonotonicInstant) {
        while client.state == .reading {
            let count = Glibc.read(client.fd, &buffer, buffer.count)
            if count > 0 {
                client.request += buffer[..<count]
                let end = client.request.firstIndex(of: UInt8(ascii: "\n"))
                if (end ?? client.request.count) > Self.requestLimit {
                    startReplying(client, ControlReply(ok: false, message: "a request is one line of at most \(Self.requestLimit) bytes").line, now: now)
                } else if let end {
                    take(Array(client.request[..<end]), from: client, now: now)
                }
            } else if count == 0 {
                if client.request.isEmpty { finish(client) } else { take(client.request, from: client, now: now) }
            } else if errno != EINTR {
                if errno != EAGAIN { finish(client) }
                return
            }
        }
    }

    /// Has `line` answered on the answering queue, or answers at once that it is not a request.
    private func take(_ line: [UInt8], from client: Client, now: MonotonicInstant) {
        guard let request = ControlRequest(json: line) else {
            startReplying(client, ControlReply(ok: false, message: "not a request: send one line of JSON such as {\"command\": \"status\"}").line,
                          now: now)
            return
        }
        client.state = .answering
        let id = client.id
        answering.async { [self] in
            let line = answer(request).line
            shared.withLock { if !$0.stopping { $0.replies.append((id, line)) } }
            wakeUp()
        }
    }

    private func startReplying(_ client: Client, _ line: [UInt8], now: MonotonicInstant) {
        client.state = .replying
        client.reply = line + [UInt8(ascii: "\n")]
        client.deadline = now.advanced(byNanoseconds: Self.timeout)
        send(client)
    }

    /// Sends what the socket takes of `client`'s reply; closes the connection once it is all sent, or on an error.
    private func send(_ client: Client) {
        while client.sent < client.reply.count {
            let count = client.reply.withUnsafeBytes {
                Glibc.send(client.fd, $0.baseAddress! + client.sent, $0.count - client.sent, Int32(MSG_NOSIGNAL))
            }
            if count > 0 {
                client.sent += count
            } else if errno == EAGAIN {
                return
            } else if errno != EINTR {
                break
            }
        }
        finish(client)
    }

    private func finish(_ client: Client) {
        close(client.fd)
        client.state = .done
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

/// A request to the control socket, as a line of JSON: `{"command": "status"}`, `{"command": "reload"}`,
/// `{"command": "start"}`, `{"command": "stop"}`, `{"command": "tempo", "bpm": 128}`,
/// `{"command": "drums-style", "style": "funk"}`, `{"command": "drums-level", "level": 2}` (0: follow the activity),
/// `{"command": "drums-mute", "voices": ["clap"], "on": true}`.
public enum ControlRequest: Equatable, Sendable {
    case status
    case reload
    case command(ControlCommand)

    /// The request in a line of JSON, or nil if it is none.
    public init?(json: [UInt8]) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json)) as? [String: Any],
              let command = object["command"] as? String else { return nil }
        switch command {
        case "start": self = .command(.jam(.start))
        case "stop": self = .command(.jam(.stop))
        case "status": self = .status
        case "reload": self = .reload
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
        case .reload: object = ["command": "reload"]
        case .command(.jam(.start)): object = ["command": "start"]
        case .command(.jam(.stop)): object = ["command": "stop"]
        case .command(.jam(.tempo(let bpm))): object = ["command": "tempo", "bpm": bpm]
        case .command(.drums(.style(let style))): object = ["command": "drums-style", "style": style]
        case .command(.drums(.level(let level))): object = ["command": "drums-level", "level": level ?? 0]
        case .command(.drums(.mute(let voices, let on))): object = ["command": "drums-mute", "voices": voices, "on": on]
        }
        return Array((try? JSONSerialization.data(withJSONObject: object)) ?? Data())
    }

    /// How long a client waits for the answer: a reload may stop and start parts (a session saying goodbye).
    var answerTimeout: Int { self == .reload ? 60 : 5 }
}

/// The control socket's answer, as a line of JSON: `{"ok": true, "message": "..."}` with `status` for a status
/// request and `reload` for a reload, or `{"ok": false, "message": "why"}` with the route files' mistakes in
/// `errors` when a reload is refused.
public struct ControlReply: Codable, Equatable, Sendable {
    public var ok: Bool
    public var message: String
    /// What the daemon is doing (`status`).
    public var status: DaemonStatus?
    /// What a reload changed.
    public var reload: ReloadOutcome?
    /// Why a reload was refused: every mistake, `file:line:column: message`.
    public var errors: [String]?

    public init(ok: Bool, message: String, status: DaemonStatus? = nil, reload: ReloadOutcome? = nil, errors: [String]? = nil) {
        self.ok = ok
        self.message = message
        self.status = status
        self.reload = reload
        self.errors = errors
    }

    /// The reply in a line of JSON, or nil if it is none.
    public init?(json: [UInt8]) {
        guard let reply = try? JSONDecoder().decode(Self.self, from: Data(json)) else { return nil }
        self = reply
    }

    /// The reply as a line of JSON (without the newline).
    var line: [UInt8] {
        Array((try? JSONEncoder.status().encode(self)) ?? Data(#"{"ok":false,"message":"the reply could not be encoded"}"#.utf8))
    }
}

/// The directory of control sockets cannot be made or trusted.
struct ControlDirectoryError: Error, CustomStringConvertible {
    var directory: String
    var problem: String
    var description: String { "the control socket's directory \(directory) \(problem)" }
}

/// The control socket could not be opened.
struct ControlSocketError: Error, CustomStringConvertible {
    var path: String
    var problem: String
    var description: String { "the control socket \(path): \(problem)" }
}

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
            ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).compactMap { file -> Daemon? in
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
