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
