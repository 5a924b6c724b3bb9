#if canImport(Glibc)
import Glibc
#endif
import Jam
import JSON
import Logging
import NIOCore
import NIOPosix
import RouteFile
import Synchronization

/// Where control sockets are: `run --control PATH` puts a daemon's where it says; otherwise it is
/// `control-PID.sock` in `directory`.
public enum ControlPath {
    /// The directory of daemons' sockets: `$RUNTIME_DIRECTORY` (systemd's `RuntimeDirectory=`; the first, if it
    /// names several), else `/run/jambridge` for root, else `$XDG_RUNTIME_DIR/jambridge`, else `/tmp/jambridge-UID`.
    public static var directory: String {
        func environment(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
        if let runtime = environment("RUNTIME_DIRECTORY")?.split(separator: ":").first { return String(runtime) }
        if getuid() == 0 { return systemDirectory }
        if let runtime = environment("XDG_RUNTIME_DIR"), !runtime.isEmpty { return runtime + "/jambridge" }
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
/// It is served on the servers' event loop (`ServerLoop`, SwiftNIO), with the status page, so no client can hold up
/// another or the daemon: a client has `timeout` to send its request (at most `requestLimit` bytes) and again to take
/// its reply, and is then dropped; at most `clientLimit` are held at once, and a newcomer beyond that takes the place
/// of the one that has waited longest without finishing its request (others wait in the listen backlog while every
/// place is answering: `ControlGate`). Answers are made on the daemon's control queue, in order, and handed back to the
/// loop (`DaemonAccess`), so a client waiting for its answer costs nothing but its place. When the daemon is out of
/// file descriptors, the listener is left alone for a second (`AcceptBackoff`): accepting again at once would spin.
final class ControlSocket: Sendable {
    /// The longest request read, in bytes.
    static let requestLimit = 4096
    /// How long a client may take to send its request, and then to take its reply.
    static let timeout = TimeAmount.seconds(2)
    /// The most clients held at once.
    static let clientLimit = 64

    /// Where it listens.
    let path: String
    private let servers: ServerLoop
    private let listener: any Channel
    private let gate: NIOLoopBoundBox<ControlGate>
    private let logger: Logger
    private let stopped = Atomic(false)

    /// Listens at `path` (a socket left there by a daemon that is gone is replaced; one a running daemon listens on,
    /// or a file that is not a socket, is not) on `servers`' loop, answering each request through `daemon`; `logger`
    /// hears when it cannot accept.
    init(path: String, servers: ServerLoop, logger: Logger, daemon: DaemonAccess) throws(ControlSocketError) {
        self.path = path
        self.servers = servers
        self.logger = logger
        try Self.clearStale(path)
        // Bound and listening under a name clients never look for (`unready`), then linked to `path`: a client that
        // finds the socket is answered (one that came between bind and listen was refused), and a rival daemon that
        // took `path` meanwhile keeps it (link fails with EEXIST).
        let unready = path + ".new"
        try Self.clearStale(unready)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ControlSocketError(path: path, problem: "cannot create it: \(String(cString: strerror(errno)))") }
        guard let bound = withUnixAddress(unready, { bind(fd, $0, $1) }) else {
            close(fd)
            throw ControlSocketError(path: path, problem: "the path is too long for a Unix socket")
        }
        defer { unlink(unready) }
        // Mode 0660 before it listens: until the chmod it has the umask's, and nobody can connect before `listen`.
        guard bound == 0, chmod(unready, 0o660) == 0 else {
            let code = errno
            close(fd)
            throw ControlSocketError(path: path, problem: "cannot listen there: \(String(cString: strerror(code)))")
        }
        let gate = NIOLoopBoundBox.makeBoxSendingValue(ControlGate(limit: Self.clientLimit), as: ControlGate.self, eventLoop: servers.eventLoop)
        self.gate = gate
        do {
            // The bootstrap listens on the bound socket (withBoundSocket); one connection a read, so that the gate
            // decides before each whether there is a place.
            listener = try servers.wait {
                ServerBootstrap(group: servers.eventLoop)
                    .serverChannelOption(.maxMessagesPerRead, value: 1)
                    .serverChannelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(AcceptBackoff("control socket: cannot accept a client", logger: logger))
                            try channel.pipeline.syncOperations.addHandler(gate.value)
                        }
                    }
                    .childChannelOption(.allowRemoteHalfClosure, value: true)
                    .childChannelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(ControlConnection(gate: gate.value, daemon: daemon, servers: servers))
                        }
                    }
                    .withBoundSocket(fd)
            }
        } catch {
            throw ControlSocketError(path: path, problem: "cannot listen there: \(error)")
        }
        // withBoundSocket listened with a backlog of 128: clients beyond the places wait in the largest there is.
        listen(fd, SOMAXCONN)
        guard link(unready, path) == 0 else {
            let code = errno
            let listener = listener
            try? servers.wait { listener.close() }
            throw ControlSocketError(path: path, problem: code == EEXIST ? "another jambridge took it while this one started"
                : "cannot listen there: \(String(cString: strerror(code)))")
        }
    }

    /// Stops answering, closes every client and removes the socket; answers still being made are thrown away. Waits
    /// for the servers' loop at most `ServerLoop.waitLimit`, never for the daemon's queues.
    func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        let (listener, gate) = (listener, gate)
        do {
            try servers.wait {
                gate.value.closeAll()
                return listener.close().recover { _ in }
            }
        } catch {
            logger.warning("control socket: \(error); its connections close when it does")
        }
        unlink(path)
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
}

/// On the control socket's listener (on the servers' loop): the clients held, at most `limit`. A newcomer beyond the
/// limit takes the place of the client that has waited longest without finishing its request (a real client sends
/// its line at once); while every place is answering or replying the listener is not read, so newcomers wait in the
/// backlog. A client keeps its place until it is closed and its answer made (a client that hangs up cannot have more
/// answers made than there are places).
final class ControlGate: ChannelDuplexHandler {
    typealias InboundIn = any Channel
    typealias InboundOut = any Channel
    typealias OutboundIn = any Channel

    /// Where a client is: sending its request, waiting for its answer, taking its reply.
    enum Stage { case reading, answering, replying }

    private struct Client {
        var channel: any Channel
        /// Its place in the order of accepting.
        var order: Int
        var stage: Stage
        var closed = false
    }

    private let limit: Int
    private var clients: [ObjectIdentifier: Client] = [:]
    private var accepted = 0
    /// Accepted when the place it was read for had gone meanwhile: let in first when one frees.
    private var waiting: [any Channel] = []
    /// A read of the listener held back while there was no place.
    private var readHeldBack = false
    private var context: ChannelHandlerContext?
    private var isClosed = false

    init(limit: Int) {
        self.limit = limit
    }

    private var hasPlace: Bool {
        clients.count < limit || clients.values.contains { $0.stage == .reading }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let channel = unwrapInboundIn(data)
        if isClosed {
            channel.close(promise: nil)
        } else if waiting.isEmpty && hasPlace {
            admit(channel, context)
        } else {
            waiting.append(channel)
        }
    }

    func read(context: ChannelHandlerContext) {
        if waiting.isEmpty && hasPlace {
            context.read()
        } else {
            readHeldBack = true
        }
    }

    /// `channel` sent its request, which is being answered.
    func answering(_ channel: any Channel) {
        clients[ObjectIdentifier(channel)]?.stage = .answering
    }

    /// `channel` is sent its reply (its answer, or why it has none); if it was closed while its answer was made, its
    /// place is free.
    func replying(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        if clients[id]?.closed == true {
            clients[id] = nil
            admitWaiting()
        } else {
            clients[id]?.stage = .replying
        }
    }

    /// Stops: closes every client, those waiting too.
    func closeAll() {
        isClosed = true
        for client in clients.values { client.channel.close(promise: nil) }
        for channel in waiting { channel.close(promise: nil) }
        waiting = []
    }

    private func admit(_ channel: any Channel, _ context: ChannelHandlerContext) {
        if clients.count >= limit, let oldest = clients.values.filter({ $0.stage == .reading }).min(by: { $0.order < $1.order }) {
            clients[ObjectIdentifier(oldest.channel)] = nil
            oldest.channel.close(promise: nil)
        }
        accepted += 1
        clients[ObjectIdentifier(channel)] = Client(channel: channel, order: accepted, stage: .reading)
        channel.closeFuture.assumeIsolated().whenComplete { [self] _ in closed(channel) }
        context.fireChannelRead(wrapInboundOut(channel))
    }

    private func closed(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        guard let client = clients[id] else { return }
        if client.stage == .answering {
            clients[id]?.closed = true
        } else {
            clients[id] = nil
            admitWaiting()
        }
    }

    /// A place freed: lets in those waiting, then reads the listener again if a read was held back.
    private func admitWaiting() {
        guard let context, !isClosed else { return }
        while !waiting.isEmpty && hasPlace { admit(waiting.removeFirst(), context) }
        if readHeldBack && waiting.isEmpty && hasPlace {
            readHeldBack = false
            context.read()
        }
    }
}

/// One client of the control socket, on the servers' loop: its request read (one line), answered through the daemon,
/// its reply sent, then closed.
final class ControlConnection: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let gate: ControlGate
    private let daemon: DaemonAccess
    private let servers: ServerLoop
    private var stage = ControlGate.Stage.reading
    private var request: [UInt8] = []
    /// When it must have sent its request (reading), or taken its reply (replying).
    private var deadline: Scheduled<Void>?

    init(gate: ControlGate, daemon: DaemonAccess, servers: ServerLoop) {
        self.gate = gate
        self.daemon = daemon
        self.servers = servers
    }

    func handlerAdded(context: ChannelHandlerContext) {
        setDeadline(context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
    }

    /// Reads what the client sent; a whole line (or all it sent before closing its end) is its request.
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard stage == .reading else { return }
        var bytes = unwrapInboundIn(data)
        request += bytes.readBytes(length: bytes.readableBytes) ?? []
        let end = request.firstIndex(of: UInt8(ascii: "\n"))
        if (end ?? request.count) > ControlSocket.requestLimit {
            reply(ControlReply(ok: false, message: "a request is one line of at most \(ControlSocket.requestLimit) bytes").line, context)
        } else if let end {
            take(Array(request[..<end]), context)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event as? ChannelEvent == .inputClosed else { return context.fireUserInboundEventTriggered(event) }
        guard stage == .reading else { return }
        if request.isEmpty { context.close(promise: nil) } else { take(request, context) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    /// Has `line` answered by the daemon, or answers at once that it is not a request.
    private func take(_ line: [UInt8], _ context: ChannelHandlerContext) {
        guard let request = ControlRequest(json: line) else {
            return reply(ControlReply(ok: false, message: "not a request: send one line of JSON such as {\"command\": \"status\"}").line, context)
        }
        stage = .answering
        stopReading(context)
        deadline?.cancel()
        gate.answering(context.channel)
        let connection = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let servers = servers
        daemon.answer(request, .controlSocket) { answer in
            let line = answer.line
            servers.execute {
                let (connection, context) = connection.value
                connection.reply(line, context)
            }
        }
    }

    /// Sends `line` and closes the connection once it is sent (or when the client has not taken it in `timeout`).
    private func reply(_ line: [UInt8], _ context: ChannelHandlerContext) {
        stage = .replying
        gate.replying(context.channel)
        guard context.channel.isActive else { return }
        stopReading(context)
        setDeadline(context)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: line + [UInt8(ascii: "\n")]))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }

    private func setDeadline(_ context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: ControlSocket.timeout) { [self] in
            switch stage {
            case .reading:
                reply(ControlReply(ok: false, message: "no request within \(ControlSocket.timeout.nanoseconds / 1_000_000_000) s").line, context)
            case .replying:
                context.close(promise: nil)
            case .answering:
                break
            }
        }
    }

    /// Reads no more of the client: what it sends after its request is left in the kernel until it is closed.
    private func stopReading(_ context: ChannelHandlerContext) {
        try? context.channel.syncOptions?.setOption(.autoRead, value: false)
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
        guard let object = try? JSONValue(parsing: json), let command = object["command"]?.string else { return nil }
        switch command {
        case "start": self = .command(.jam(.start))
        case "stop": self = .command(.jam(.stop))
        case "status": self = .status
        case "reload": self = .reload
        case "tempo":
            guard let bpm = object["bpm"]?.double else { return nil }
            self = .command(.jam(.tempo(bpm)))
        case "drums-style":
            guard let style = object["style"]?.string else { return nil }
            self = .command(.drums(.style(style)))
        case "drums-level":
            guard let level = object["level"]?.int else { return nil }
            self = .command(.drums(.level(level == 0 ? nil : level)))
        case "drums-mute":
            guard let items = object["voices"]?.array, case let voices = items.compactMap(\.string), voices.count == items.count,
                  let on = object["on"]?.bool else { return nil }
            self = .command(.drums(.mute(voices, on)))
        default: return nil
        }
    }

    /// The request as a line of JSON (without the newline).
    public var json: [UInt8] {
        func request(_ command: String, _ arguments: (key: String, value: JSONValue)...) -> [UInt8] {
            Array(JSONValue.object([("command", .string(command))] + arguments).text().utf8)
        }
        switch self {
        case .status: return request("status")
        case .reload: return request("reload")
        case .command(.jam(.start)): return request("start")
        case .command(.jam(.stop)): return request("stop")
        case .command(.jam(.tempo(let bpm))): return request("tempo", ("bpm", bpm.isFinite ? .number("\(bpm)") : .null))
        case .command(.drums(.style(let style))): return request("drums-style", ("style", .string(style)))
        case .command(.drums(.level(let level))): return request("drums-level", ("level", .number(String(level ?? 0))))
        case .command(.drums(.mute(let voices, let on))):
            return request("drums-mute", ("voices", .array(voices.map(JSONValue.string))), ("on", .bool(on)))
        }
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
        guard let reply = try? JSONReader().value(Self.self, from: json) else { return nil }
        self = reply
    }

    /// The reply as a line of JSON (without the newline).
    var line: [UInt8] {
        (try? JSONWriter.status().bytes(self)) ?? Array(#"{"message":"the reply could not be encoded","ok":false}"#.utf8)
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
