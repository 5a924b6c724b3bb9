import JSON
import Logging
import MIDI
import NIOCore
import NIOHTTP1
import NIOPosix
import RouteFile
import Synchronization
import Transport

/// The `http:` block: the live status page (`StatusPageServer`), a part like any other, so a reload that changes
/// the block moves it and one that drops it closes it.
final class StatusPagePart: Part {
    private let declaration: HTTPDeclaration
    private let server: StatusPageServer

    static func blocks(in configuration: RouteConfiguration) -> [(key: String, block: HTTPDeclaration)] {
        configuration.http.map { [("http", $0)] } ?? []
    }

    init(_ block: HTTPDeclaration, in configuration: RouteConfiguration, context: PartContext) throws(PartFailure) {
        declaration = block
        do {
            server = try StatusPageServer(block, daemon: context.daemon, servers: context.servers, logger: context.logger)
        } catch {
            throw PartFailure(problem: "\(block.location): the status page cannot listen on \(block.listen): \(error)",
                              consequence: "there is no status page until a reload")
        }
        let rules = StatusPageRules(block)
        let from = rules.loopbackOnly ? "" : ", taken from a page at \((block.hosts + ["localhost"]).joined(separator: ", ")) or this machine's addresses"
        context.logger.info("status page: http://\(block.listen)/\(block.control ? " (with start, stop and tempo\(from))" : "")")
    }

    var endpoints: [String: RunningEndpoint] { [:] }

    func apply(_ block: HTTPDeclaration, in configuration: RouteConfiguration) -> PartUpdate {
        block.isSame(as: declaration) ? .applied : .replace
    }

    func report(into status: inout DaemonStatus) {
        status.http = DaemonStatus.HTTP(listen: declaration.listen, control: declaration.control, pages: server.streams.count,
                                        connections: server.connections.count, refused: server.refusals.counts)
    }

    func stop() {
        server.stop()
    }
}

/// What the page reads from `/status` and from each event of `/events`.
struct StatusPageState: Encodable {
    /// True if the page may start, stop and set the tempo (it shows the buttons).
    var control: Bool
    var status: DaemonStatus
}

/// An HTTP/1.1 server (SwiftNIO's codec) for the status page:
/// - `GET /`: the page (`StatusPageHTML`), one file with no request elsewhere;
/// - `GET /status`: `StatusPageState` as JSON;
/// - `GET /events`: the same, pushed as server-sent events five times a second;
/// - `POST /control`: `{"command": "start"}`, `"stop"` or `{"command": "tempo", "bpm": 96}` with
///   `Content-Type: application/json`, answered as the control socket answers (`ControlReply`); 403 unless the
///   route file says `control: true`, and from a page at another host or site (`StatusPageRules`).
///
/// Every flood is bounded: at most `connectionLimit` connections (a newcomer takes the place of the one that has
/// waited longest for its request, else it is closed), each with `requestTimeout` from accept to send its whole
/// request, bodies of `bodyLimit` bytes, `StatusStreams.limit` pages streaming (a new one takes the place of
/// another), and a page that takes no events is dropped. SSRCs and addresses are shown only on loopback
/// (`StatusPageRules.showsNetworkIdentities`). It runs on the servers' event loop (`ServerLoop`, shared with the
/// control socket), where nothing waits: reports and commands are made on the daemon's control queue
/// (`DaemonAccess`) and their replies written when they come.
final class StatusPageServer: Sendable {
    /// Longest request body taken (a command is a few dozen bytes).
    static let bodyLimit = 4096
    /// How often `/events` pushes the status.
    static let eventInterval = TimeAmount.milliseconds(200)
    /// The most connections open at once: far below the daemon's file limit (jambridge.service: `LimitNOFILE=1024`,
    /// of which the control socket holds at most `ControlSocket.clientLimit`).
    static let connectionLimit = 128
    /// Connections the kernel holds for accepting: a burst beyond it has its handshakes dropped and retried a second
    /// later, a real request's among them, while those it holds are accepted (and closed, beyond the limit) at once.
    static let backlog: Int32 = 256
    /// How long a connection has from accept to send its whole request, however it trickles.
    static let requestTimeout = TimeAmount.seconds(10)
    /// Each connection's socket send buffer (the kernel doubles it) and write buffer: small, so that a page that
    /// does not read is found out after a few dozen events rather than megabytes.
    static let sendBuffer = 16384

    let streams: StatusStreams
    let connections: PageConnections
    let refusals: PageRefusals
    private let servers: ServerLoop
    private let listener: any Channel
    private let logger: Logger

    /// Listens where `declaration` says, on `servers`' loop (waiting for it at most `ServerLoop.waitLimit`).
    init(_ declaration: HTTPDeclaration, daemon: DaemonAccess, servers: ServerLoop, logger: Logger) throws {
        let refusals = PageRefusals(logger: logger)
        let connections = PageConnections(limit: Self.connectionLimit)
        let streams = StatusStreams(control: declaration.control, daemon: daemon, servers: servers, refusals: refusals)
        let rules = StatusPageRules(declaration)
        listener = try servers.wait {
            ServerBootstrap(group: servers.eventLoop)
                .serverChannelOption(.backlog, value: Self.backlog)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .serverChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(AcceptBackoff("status page: cannot accept a connection", logger: logger))
                        try channel.pipeline.syncOperations.addHandler(ConnectionGate(connections: connections, refusals: refusals))
                    }
                }
                .childChannelOption(.socketOption(.so_sndbuf), value: Self.sendBuffer)
                .childChannelOption(.writeBufferWaterMark, value: .init(low: Self.sendBuffer / 2, high: Self.sendBuffer))
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                        try channel.pipeline.syncOperations.addHandler(
                            StatusPageHandler(rules: rules, streams: streams, connections: connections, refusals: refusals, daemon: daemon,
                                              servers: servers))
                    }
                }
                .bind(host: declaration.host, port: Int(declaration.port))
                .map { listener in
                    streams.start()
                    return listener
                }
        }
        self.streams = streams
        self.connections = connections
        self.refusals = refusals
        self.servers = servers
        self.logger = logger
    }

    /// Stops pushing events, closes the listener and every connection; returns once the port is free, or after
    /// `ServerLoop.waitLimit` at most. Never waits for the daemon's queues: replies still being made are dropped.
    func stop() {
        let (listener, streams, connections) = (listener, streams, connections)
        do {
            try servers.wait {
                streams.stop()
                connections.closeAll()
                return listener.close().recover { _ in }
            }
        } catch {
            logger.warning("status page: \(error); its port is free when it closes")
        }
    }
}

/// What a request must be to be served, from the `http:` block.
///
/// Against DNS rebinding (a web page elsewhere pointing a name of its own at this machine, so that the browser
/// sends its requests here as that page's own): on loopback every request must name a loopback host, and on every
/// listener a command must name a loopback host, a name of `hosts:` or one of this machine's addresses, and come
/// from the page at that host (`Origin:`, which browsers send with every POST). SSRCs and addresses are shown only
/// to a client on loopback asking for a loopback host.
struct StatusPageRules: Sendable {
    var control: Bool
    /// The port listened on.
    var port: UInt16
    /// True if it listens on loopback: every request must name a loopback host.
    var loopbackOnly: Bool
    /// `hosts:`, lowercased.
    var hosts: Set<String>

    init(_ declaration: HTTPDeclaration) {
        control = declaration.control
        port = declaration.port
        loopbackOnly = NetworkAddress(numeric: declaration.host, port: 0)?.isLoopback == true
        hosts = Set(declaration.hosts)
    }

    /// The name (lowercased, an IPv6 address without its brackets) and port of a `Host:` header such as
    /// `rack.local:8080` or `[::1]:8080`; nil if it is none.
    static func parseHost(_ header: String?) -> (name: String, port: UInt16?)? {
        guard let header = header?.lowercased(), !header.isEmpty else { return nil }
        var name = Substring(header)
        var port: Substring?
        if name.hasPrefix("[") {
            guard let close = name.firstIndex(of: "]") else { return nil }
            let rest = name[name.index(after: close)...]
            guard rest.isEmpty || rest.hasPrefix(":") else { return nil }
            port = rest.isEmpty ? nil : rest.dropFirst()
            name = name[name.index(after: name.startIndex)..<close]
        } else if let colon = name.firstIndex(of: ":") {
            port = name[name.index(after: colon)...]
            name = name[..<colon]
        }
        guard !name.isEmpty else { return nil }
        guard let port else { return (String(name), nil) }
        guard let number = UInt16(port) else { return nil }
        return (String(name), number)
    }

    /// True if `host` (a `Host:` header) names this page at a loopback name, `localhost` or a loopback address,
    /// with its port or none.
    func isLoopbackHost(_ host: String?) -> Bool {
        guard let (name, port) = Self.parseHost(host), port == nil || port == self.port else { return false }
        return name == "localhost" || NetworkAddress(numeric: name, port: 0)?.isLoopback == true
    }

    /// True if a command may be taken from a request with these `Host:` and `Origin:` headers: the host a loopback
    /// name, one of `hosts` or one of `addresses` (this machine's, asked only if needed), with the page's port or
    /// none; the origin, if the client sent one (browsers do), the page's own.
    func acceptsCommand(host: String?, origin: String?, addresses: () -> [NetworkAddress]) -> Bool {
        guard let host, let (name, port) = Self.parseHost(host), port == nil || port == self.port else { return false }
        if let origin, origin.lowercased() != "http://" + host.lowercased() { return false }
        if isLoopbackHost(host) || hosts.contains(name) { return true }
        guard let address = NetworkAddress(numeric: name, port: 0) else { return false }
        return addresses().contains { $0.family == address.family && $0.bytes == address.bytes }
    }

    /// True if a page asked for by `client` with this `Host:` may show SSRCs and addresses: only a client on
    /// loopback asking for a loopback host (not the room's network, nor a page elsewhere rebinding a name).
    func showsNetworkIdentities(to client: NetworkAddress?, host: String?) -> Bool {
        client?.isLoopback == true && isLoopbackHost(host)
    }
}

/// What a status page turned away, by why: counted (`status --json`: `http.refused`) and logged, the first 20 of
/// each kind, then every 1000th.
final class PageRefusals: Sendable {
    /// Why a connection, a request or a page was turned away.
    enum Reason: String, CaseIterable {
        /// A connection closed at once because `StatusPageServer.connectionLimit` were open.
        case overConnectionLimit
        /// A connection closed because its request was not whole within `StatusPageServer.requestTimeout`.
        case requestTooSlow
        /// A page dropped because it took no events (its buffers full) for `StatusStreams.stallTimeout`, or made
        /// way for a new page while it took none.
        case stalledStream
        /// A page that made way for a new one while `StatusStreams.limit` streamed and all took their events.
        case displacedPage
        /// A request to a loopback listener naming another host (421).
        case foreignHost
        /// A command naming a host the page is not known by, or from a page at another site (403).
        case commandFromElsewhere
    }

    private let tally = Mutex<[Reason: Int]>([:])
    private let logger: Logger

    init(logger: Logger) {
        self.logger = logger
    }

    /// Every reason's count, by name.
    var counts: [String: Int] {
        tally.withLock { tally in Dictionary(uniqueKeysWithValues: Reason.allCases.map { ($0.rawValue, tally[$0] ?? 0) }) }
    }

    /// Counts one refusal and logs `what` if it is among those logged.
    func count(_ reason: Reason, _ what: @autoclosure () -> String) {
        let count = tally.withLock { tally in
            tally[reason, default: 0] += 1
            return tally[reason, default: 0]
        }
        if isLogged(count) { logger.warning("status page: \(what()) (\(count) so far)") }
    }
}

/// The open connections of a status page, at most `limit`. When they are all open, a newcomer takes the place of
/// the one that has waited longest without sending its whole request (a browser sends its request at once); if
/// every connection has sent it (pages streaming, answers on their way), the newcomer is turned away.
final class PageConnections: Sendable {
    private struct Connection {
        var channel: any Channel
        /// Its place in the order of accepting.
        var order: Int
        var requestWhole = false
    }

    private let limit: Int
    private let open = Mutex<(connections: [ObjectIdentifier: Connection], accepted: Int)>(([:], 0))

    init(limit: Int) {
        self.limit = limit
    }

    /// The connections open now.
    var count: Int { open.withLock { $0.connections.count } }

    /// Takes `channel`; returns the connection to close: nil if there was room, the one that makes way, or
    /// `channel` itself if none can.
    func admit(_ channel: any Channel) -> (any Channel)? {
        open.withLock { open in
            open.accepted += 1
            var closing: (any Channel)?
            if open.connections.count >= limit {
                guard let oldest = open.connections.values.filter({ !$0.requestWhole }).min(by: { $0.order < $1.order }) else {
                    return channel
                }
                open.connections[ObjectIdentifier(oldest.channel)] = nil
                closing = oldest.channel
            }
            open.connections[ObjectIdentifier(channel)] = Connection(channel: channel, order: open.accepted)
            return closing
        }
    }

    /// `channel` has sent its whole request: it no longer makes way for newcomers.
    func requestIsWhole(_ channel: any Channel) {
        open.withLock { $0.connections[ObjectIdentifier(channel)]?.requestWhole = true }
    }

    /// `channel` closed.
    func remove(_ channel: any Channel) {
        _ = open.withLock { $0.connections.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// Closes every connection (the page stops).
    func closeAll() {
        for connection in open.withLock({ Array($0.connections.values) }) { connection.channel.close(promise: nil) }
    }
}

/// On the listener: lets each accepted connection in through `PageConnections`, closing the one that makes way,
/// or the newcomer when none can.
final class ConnectionGate: ChannelInboundHandler {
    typealias InboundIn = any Channel
    typealias InboundOut = any Channel

    private let connections: PageConnections
    private let refusals: PageRefusals

    init(connections: PageConnections, refusals: PageRefusals) {
        self.connections = connections
        self.refusals = refusals
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let accepted = unwrapInboundIn(data)
        if let closing = connections.admit(accepted) {
            let whom = closing === accepted ? "a new connection" : "the connection that had waited longest for its request"
            refusals.count(.overConnectionLimit, "\(StatusPageServer.connectionLimit) connections are open, the most taken; closed \(whom)")
            closing.close(promise: nil)
            if closing === accepted { return }
        }
        let connections = connections
        accepted.closeFuture.whenComplete { _ in connections.remove(accepted) }
        context.fireChannelRead(data)
    }
}

/// The pages reading `/events`, and the timer that pushes them the status; also asks for the reports `GET /status`
/// answers with. Unchecked: the timer is set and cancelled on the servers' loop only; the rest is constant, atomic or
/// under the mutexes.
///
/// A new page is never turned away: a browser's EventSource gives up for good on an error status, but asks again
/// when its connection closes. When `limit` pages stream, the newcomer takes the place of the one that has taken no
/// events longest, or if all take them, of the oldest page of the client with the most open (a host opening many
/// pages makes way with its own).
final class StatusStreams: @unchecked Sendable {
    /// At most this many pages at once.
    static let limit = 32
    /// How long a page may take no events (its buffers full: it does not read) before it is dropped, in nanoseconds.
    static let stallTimeout: UInt64 = 10_000_000_000

    private struct Stream {
        var channel: any Channel
        /// The client's host (its address without the port).
        var client: String
        /// Its place in the order of arrival.
        var order: Int
        /// True if it is beyond loopback: SSRCs and addresses are withheld.
        var withholding: Bool
        /// When it was first seen not to take events (nil while it takes them).
        var stalledSince: MonotonicInstant?
    }

    private let control: Bool
    private let daemon: DaemonAccess
    private let servers: ServerLoop
    private let refusals: PageRefusals
    private let streams = Mutex<(open: [ObjectIdentifier: Stream], arrived: Int)>(([:], 0))
    /// What waits for the report being made (`report`): one report at a time, shared by those asking meanwhile.
    private let waiting = Mutex<[@Sendable (DaemonStatus?) -> Void]>([])
    /// True from a push's request for a report to its events written: a push is skipped meanwhile (the daemon's
    /// control queue is busy), not queued.
    private let pushing = Atomic(false)
    /// The pushes, on the servers' loop while a page reads `/events` between `start` and `stop`: a page with no
    /// reader wakes nothing (issue 42).
    private var timer: RepeatedTask?
    private var started = false

    init(control: Bool, daemon: DaemonAccess, servers: ServerLoop, refusals: PageRefusals) {
        self.control = control
        self.daemon = daemon
        self.servers = servers
        self.refusals = refusals
    }

    /// The pages open now.
    var count: Int { streams.withLock { $0.open.count } }

    /// Starts pushing, every `StatusPageServer.eventInterval` while a page reads; on the servers' loop.
    func start() {
        started = true
        if count > 0 { startPushing() }
    }

    private func startPushing() {
        guard started, timer == nil else { return }
        timer = servers.eventLoop.scheduleRepeatedTask(initialDelay: .zero, delay: StatusPageServer.eventInterval) { [self] _ in push() }
    }

    /// Stops pushing and closes every page's connection (the page's EventSource tries again, to a new server or
    /// none); on the servers' loop.
    func stop() {
        started = false
        timer?.cancel()
        timer = nil
        let open = streams.withLock { streams in
            defer { streams.open.removeAll() }
            return Array(streams.open.values)
        }
        for stream in open { stream.channel.close(promise: nil) }
    }

    /// Takes `channel`, whose response head is sent, as a page of `client` (a host) to push to (on the servers'
    /// loop), and starts pushing if it is the first; when `limit` are open, closes the one that makes way.
    func add(_ channel: any Channel, client: String, withholding: Bool) {
        let now = MonotonicClock.now()
        let displaced = streams.withLock { streams -> Stream? in
            streams.arrived += 1
            var displaced: Stream?
            if streams.open.count >= Self.limit {
                let pages = Dictionary(grouping: streams.open.values, by: \.client).mapValues(\.count)
                displaced = streams.open.values.filter { !$0.channel.isWritable }.min { $0.stalledSince ?? now < $1.stalledSince ?? now }
                    ?? streams.open.values.max { (pages[$0.client, default: 0], -$0.order) < (pages[$1.client, default: 0], -$1.order) }
                if let displaced { streams.open[ObjectIdentifier(displaced.channel)] = nil }
            }
            streams.open[ObjectIdentifier(channel)] = Stream(channel: channel, client: client, order: streams.arrived, withholding: withholding)
            return displaced
        }
        startPushing()
        guard let displaced else { return }
        if displaced.channel.isWritable {
            refusals.count(.displacedPage, "\(Self.limit) pages are open, the most taken; closed the oldest of \(displaced.client)'s to make way for a new one")
        } else {
            refusals.count(.stalledStream, "closed a page that took no events to make way for a new one")
        }
        displaced.channel.close(promise: nil)
    }

    func remove(_ channel: any Channel) {
        _ = streams.withLock { $0.open.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// Calls `deliver` with the daemon's status (nil once it stops) on the daemon's control queue, where the report is
    /// made, never on the caller's thread. Requests made while one is being made share it.
    func report(_ deliver: @escaping @Sendable (DaemonStatus?) -> Void) {
        let first = waiting.withLock { waiting in
            waiting.append(deliver)
            return waiting.count == 1
        }
        guard first else { return }
        daemon.answer(.status, .statusPage) { [self] reply in
            let delivering = waiting.withLock { waiting in
                defer { waiting = [] }
                return waiting
            }
            for deliver in delivering { deliver(reply.status) }
        }
    }

    /// The page's JSON of `status`, `withholding` SSRCs and addresses for a client beyond loopback.
    func state(_ status: DaemonStatus, withholding: Bool) -> [UInt8] {
        (try? JSONWriter.status(withholding: withholding).bytes(StatusPageState(control: control, status: status))) ?? []
    }

    /// Sends every page that takes events the status, once it is made; drops those that have taken none for
    /// `stallTimeout`. On the servers' loop.
    private func push() {
        let now = MonotonicClock.now()
        guard count > 0 else {
            timer?.cancel()
            timer = nil
            return
        }
        let (taking, stalled) = streams.withLock { streams -> ([Stream], [Stream]) in
            var taking: [Stream] = [], stalled: [Stream] = []
            for (id, stream) in streams.open {
                if stream.channel.isWritable {
                    streams.open[id]?.stalledSince = nil
                    taking.append(stream)
                } else if let since = stream.stalledSince {
                    if since.advanced(byNanoseconds: Self.stallTimeout) <= now {
                        streams.open[id] = nil
                        stalled.append(stream)
                    }
                } else {
                    streams.open[id]?.stalledSince = now
                }
            }
            return (taking, stalled)
        }
        for stream in stalled {
            refusals.count(.stalledStream, "dropped a page that took no events for \(Self.stallTimeout / 1_000_000_000) s")
            stream.channel.close(promise: nil)
        }
        guard !taking.isEmpty, !pushing.exchange(true, ordering: .relaxed) else { return }
        let kinds = Set(taking.map(\.withholding))
        report { [self] status in
            // Encoded here, on the daemon's control queue, once for each kind of page; written on the loop.
            let events = Dictionary(uniqueKeysWithValues: status.map { status in
                kinds.map { ($0, ByteBuffer(bytes: Array("data: ".utf8) + state(status, withholding: $0) + Array("\n\n".utf8))) }
            } ?? [])
            servers.execute { [self] in
                pushing.store(false, ordering: .relaxed)
                for stream in streams.withLock({ Array($0.open.values) }) where stream.channel.isWritable {
                    guard let event = events[stream.withholding] else { continue }
                    stream.channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(event)), promise: nil)
                }
            }
        }
    }
}

/// One connection's requests.
final class StatusPageHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let rules: StatusPageRules
    private let streams: StatusStreams
    private let connections: PageConnections
    private let refusals: PageRefusals
    private let daemon: DaemonAccess
    private let servers: ServerLoop
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    /// Closes the connection if its request is not whole within `StatusPageServer.requestTimeout` of accept.
    private var deadline: Scheduled<Void>?

    init(rules: StatusPageRules, streams: StatusStreams, connections: PageConnections, refusals: PageRefusals, daemon: DaemonAccess,
         servers: ServerLoop) {
        self.rules = rules
        self.streams = streams
        self.connections = connections
        self.refusals = refusals
        self.daemon = daemon
        self.servers = servers
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        let refusals = refusals
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: StatusPageServer.requestTimeout) {
            refusals.count(.requestTooSlow, "closed a connection that had not sent its whole request within "
                           + "\(StatusPageServer.requestTimeout.nanoseconds / 1_000_000_000) s")
            channel.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            head = request
            body = []
        case .body(var chunk):
            guard head != nil else { return }
            guard body.count + chunk.readableBytes <= StatusPageServer.bodyLimit else {
                head = nil
                respond(context, .payloadTooLarge, text: "a request body is at most \(StatusPageServer.bodyLimit) bytes")
                return
            }
            body += chunk.readBytes(length: chunk.readableBytes) ?? []
        case .end:
            guard let request = head else { return }
            head = nil
            deadline?.cancel()
            connections.requestIsWhole(context.channel)
            serve(request, context: context)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        streams.remove(context.channel)
        context.fireChannelInactive()
    }

    /// A request NIO's parser refused has had its 400 with `Connection: close` (the pipeline's error handler): the
    /// connection closes as it says, not at the request's deadline 10 s on.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func serve(_ request: HTTPRequestHead, context: ChannelHandlerContext) {
        let host = request.headers.first(name: "host")
        if rules.loopbackOnly, !rules.isLoopbackHost(host) {
            refusals.count(.foreignHost, "answered 421 to a request for another host on loopback")
            return respond(context, .misdirectedRequest, text: "this page answers only at its loopback address")
        }
        let client = Self.networkAddress(context.channel.remoteAddress)
        let withholding = !rules.showsNetworkIdentities(to: client, host: host)
        let path = request.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.uri
        switch (request.method, path) {
        case (.GET, "/"):
            respond(context, .ok, type: "text/html; charset=utf-8", body: Array(StatusPageHTML.page.utf8))
        case (.GET, "/status"):
            status(context, withholding: withholding)
        case (.GET, "/events"):
            stream(context, client: client?.host ?? "a client", withholding: withholding)
        case (.POST, "/control"):
            command(request, context: context)
        case (_, "/"), (_, "/status"), (_, "/events"), (_, "/control"):
            respond(context, .methodNotAllowed, text: "\(request.method) is not served at \(path)")
        default:
            respond(context, .notFound, text: "nothing at \(path); the page is at /")
        }
    }

    /// `GET /status`: answered once a report is made, on the daemon's control queue.
    private func status(_ context: ChannelHandlerContext, withholding: Bool) {
        let (streams, servers) = (streams, servers)
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        streams.report { status in
            let state = status.map { streams.state($0, withholding: withholding) }
            servers.execute {
                let (handler, context) = loopBound.value
                guard let state else { return handler.respond(context, .serviceUnavailable, text: "jambridge is stopping") }
                handler.respond(context, .ok, type: "application/json", body: state)
            }
        }
    }

    /// Starts `/events`: the head, then the streams' timer writes each event.
    private func stream(_ context: ChannelHandlerContext, client: String, withholding: Bool) {
        streams.add(context.channel, client: client, withholding: withholding)
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/event-stream")
        headers.add(name: "Cache-Control", value: "no-store")
        context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
    }

    /// `POST /control`: a command of the jam, carried out on the daemon's control queue, answered as the control socket
    /// answers it.
    private func command(_ request: HTTPRequestHead, context: ChannelHandlerContext) {
        guard rules.control else {
            return respond(context, .forbidden, text: "the route file does not let the page control the jam ('http: { control: true }')")
        }
        let host = request.headers.first(name: "host"), origin = request.headers.first(name: "origin")
        guard rules.acceptsCommand(host: host, origin: origin, addresses: NetworkAddress.interfaceAddresses) else {
            refusals.count(.commandFromElsewhere, "refused a command from \(context.channel.remoteAddress.map { "\($0)" } ?? "a client") "
                           + "naming host '\((host ?? "").prefix(64))' from '\((origin ?? "").prefix(64))' (403)")
            return respond(context, .forbidden, text: "commands are taken only from the page at this machine's address or at a name "
                           + "'http: { hosts: [...] }' lists")
        }
        // A form another site posts carries a simple type; JSON needs a preflight this server never grants.
        guard request.headers.first(name: "content-type")?.lowercased().hasPrefix("application/json") == true else {
            return respond(context, .unsupportedMediaType, text: "a command is JSON (Content-Type: application/json)")
        }
        guard case .command(.jam(let command)) = ControlRequest(json: body) else {
            return respond(context, .badRequest, text: #"a command is {"command": "start"}, {"command": "stop"} or {"command": "tempo", "bpm": 96}"#)
        }
        let servers = servers
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        daemon.answer(.command(.jam(command)), .statusPage) { reply in
            let line = reply.line
            servers.execute {
                let (handler, context) = loopBound.value
                handler.respond(context, reply.ok ? .ok : .conflict, type: "application/json", body: line)
            }
        }
    }

    private func respond(_ context: ChannelHandlerContext, _ status: HTTPResponseStatus, text: String) {
        respond(context, status, type: "text/plain; charset=utf-8", body: Array((text + "\n").utf8))
    }

    /// Sends a whole response and closes the connection (the page opens one per request; nothing is kept alive);
    /// nothing if the client has gone meanwhile.
    private func respond(_ context: ChannelHandlerContext, _ status: HTTPResponseStatus, type: String, body: [UInt8]) {
        guard context.channel.isActive else { return }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: type)
        headers.add(name: "Content-Length", value: "\(body.count)")
        headers.add(name: "Cache-Control", value: "no-store")
        headers.add(name: "Connection", value: "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }

    /// A client's address as `NetworkAddress` (an IPv4-mapped IPv6 one as IPv4); nil if it is not IP.
    private static func networkAddress(_ address: SocketAddress?) -> NetworkAddress? {
        guard let address else { return nil }
        var storage = sockaddr_storage()
        address.withSockAddr { pointer, size in
            withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: pointer, count: min(size, $0.count))) }
        }
        return NetworkAddress(socketAddress: storage)
    }
}
