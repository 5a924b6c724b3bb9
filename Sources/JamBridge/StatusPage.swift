import Dispatch
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import RouteFile
import Synchronization

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
            server = try StatusPageServer(block, daemon: context.daemon)
        } catch {
            throw PartFailure(problem: "\(block.location): the status page cannot listen on \(block.listen): \(error)",
                              consequence: "there is no status page until a reload")
        }
        context.logger.info("status page: http://\(block.listen)/\(block.control ? " (with start, stop and tempo)" : "")")
    }

    var endpoints: [String: RunningEndpoint] { [:] }

    func apply(_ block: HTTPDeclaration, in configuration: RouteConfiguration) -> PartUpdate {
        block.isSame(as: declaration) ? .applied : .replace
    }

    func report(into status: inout DaemonStatus) {
        status.http = DaemonStatus.HTTP(listen: declaration.listen, control: declaration.control, pages: server.streams.count)
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
///   route file says `control: true`.
///
/// Requests and their bodies are bounded, a connection that sends nothing for 10 s before its request is whole is
/// closed, and a slow page skips events rather than letting them pile up. On loopback, requests must name a
/// loopback host (a web page elsewhere cannot reach it by rebinding a name of its own to 127.0.0.1).
final class StatusPageServer: Sendable {
    /// Longest request body taken (a command is a few dozen bytes).
    static let bodyLimit = 4096
    /// How often `/events` pushes the status.
    static let eventInterval = DispatchTimeInterval.milliseconds(200)

    let streams: StatusStreams
    private let channel: any Channel

    init(_ declaration: HTTPDeclaration, daemon: DaemonAccess) throws {
        let streams = StatusStreams(control: declaration.control, daemon: daemon)
        let rules = StatusPageRules(declaration)
        channel = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: .seconds(10)))
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(
                        StatusPageHandler(rules: rules, streams: streams, daemon: daemon))
                }
            }
            .bind(host: declaration.host, port: Int(declaration.port)).wait()
        self.streams = streams
        streams.start()
    }

    /// Closes the listener and every page's connection; returns once the port is free. Never waits for the
    /// daemon's queues (an event being made may be waiting for them).
    func stop() {
        streams.stop()
        try? channel.close().wait()
    }
}

/// What a request must be to be served, from the `http:` block.
struct StatusPageRules: Sendable {
    var control: Bool
    /// The `Host:` headers taken, when listening on loopback; nil: any.
    var hosts: Set<String>?

    init(_ declaration: HTTPDeclaration) {
        control = declaration.control
        let loopback = ["127.0.0.1", "::1", "localhost"].contains(declaration.host) || declaration.host.hasPrefix("127.")
        hosts = loopback ? Set([declaration.host.contains(":") ? "[\(declaration.host)]" : declaration.host, "localhost"]
            .flatMap { [$0, "\($0):\(declaration.port)"] }) : nil
    }
}

/// The pages reading `/events`, and the timer that pushes them the status. Unchecked: the timer is set and
/// cancelled on the daemon's control queue only; the rest is constant or under the mutex.
final class StatusStreams: @unchecked Sendable {
    /// At most this many pages at once; more are answered 503.
    static let limit = 32

    private let control: Bool
    private let daemon: DaemonAccess
    private let channels = Mutex<[ObjectIdentifier: any Channel]>([:])
    /// Made by `start` (a Dispatch source released before it is activated traps); `start` and `stop` run on the
    /// daemon's control queue.
    private var timer: (any DispatchSourceTimer)?

    init(control: Bool, daemon: DaemonAccess) {
        self.control = control
        self.daemon = daemon
    }

    /// The pages open now.
    var count: Int { channels.withLock { $0.count } }

    func start() {
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "jambridge.status-page", qos: .utility))
        timer.setEventHandler { [self] in push() }
        timer.schedule(deadline: .now(), repeating: StatusPageServer.eventInterval)
        timer.activate()
        self.timer = timer
    }

    /// Stops pushing and closes every page's connection (the page's EventSource tries again, to a new server or
    /// none).
    func stop() {
        timer?.cancel()
        let open = channels.withLock { channels in
            defer { channels.removeAll() }
            return Array(channels.values)
        }
        for channel in open { channel.close(promise: nil) }
    }

    /// Takes `channel`, whose response head is sent, as a page to push to; false if there are too many.
    func add(_ channel: any Channel) -> Bool {
        channels.withLock { channels in
            guard channels.count < Self.limit else { return false }
            channels[ObjectIdentifier(channel)] = channel
            return true
        }
    }

    func remove(_ channel: any Channel) {
        _ = channels.withLock { $0.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// The state as JSON, or nil once the daemon stops.
    func state() -> [UInt8]? {
        guard let status = daemon.report() else { return nil }
        return (try? JSONEncoder.status().encode(StatusPageState(control: control, status: status))).map(Array.init)
    }

    /// Sends every page the status, skipping those whose last events are still unsent.
    private func push() {
        let open = channels.withLock { Array($0.values) }
        guard !open.isEmpty, let state = state() else { return }
        let event = ByteBuffer(bytes: Array("data: ".utf8) + state + Array("\n\n".utf8))
        for channel in open where channel.isWritable {
            channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(event)), promise: nil)
        }
    }
}

/// One connection's requests.
final class StatusPageHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let rules: StatusPageRules
    private let streams: StatusStreams
    private let daemon: DaemonAccess
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    /// True once the connection carries `/events`: it sends nothing more and is never idle-closed.
    private var streaming = false

    init(rules: StatusPageRules, streams: StatusStreams, daemon: DaemonAccess) {
        self.rules = rules
        self.streams = streams
        self.daemon = daemon
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
            serve(request, context: context)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            if !streaming { context.close(promise: nil) }
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if streaming { streams.remove(context.channel) }
        context.fireChannelInactive()
    }

    private func serve(_ request: HTTPRequestHead, context: ChannelHandlerContext) {
        if let hosts = rules.hosts, !hosts.contains(request.headers.first(name: "host")?.lowercased() ?? "") {
            return respond(context, .misdirectedRequest, text: "this page answers only at its loopback address")
        }
        let path = request.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.uri
        switch (request.method, path) {
        case (.GET, "/"):
            respond(context, .ok, type: "text/html; charset=utf-8", body: Array(StatusPageHTML.page.utf8))
        case (.GET, "/status"):
            guard let state = streams.state() else { return respond(context, .serviceUnavailable, text: "jambridge is stopping") }
            respond(context, .ok, type: "application/json", body: state)
        case (.GET, "/events"):
            stream(context)
        case (.POST, "/control"):
            command(request, context: context)
        case (_, "/"), (_, "/status"), (_, "/events"), (_, "/control"):
            respond(context, .methodNotAllowed, text: "\(request.method) is not served at \(path)")
        default:
            respond(context, .notFound, text: "nothing at \(path); the page is at /")
        }
    }

    /// Starts `/events`: the head, then the streams' timer writes each event.
    private func stream(_ context: ChannelHandlerContext) {
        guard streams.add(context.channel) else {
            return respond(context, .serviceUnavailable, text: "too many pages are open (at most \(StatusStreams.limit))")
        }
        streaming = true
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/event-stream")
        headers.add(name: "Cache-Control", value: "no-store")
        context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
    }

    /// `POST /control`: a command of the jam, carried out off the event loop (it waits for the daemon's queue).
    private func command(_ request: HTTPRequestHead, context: ChannelHandlerContext) {
        guard rules.control else {
            return respond(context, .forbidden, text: "the route file does not let the page control the jam ('http: { control: true }')")
        }
        // A form another site posts carries a simple type; JSON needs a preflight this server never grants.
        guard request.headers.first(name: "content-type")?.lowercased().hasPrefix("application/json") == true else {
            return respond(context, .unsupportedMediaType, text: "a command is JSON (Content-Type: application/json)")
        }
        guard case .command(.jam(let command)) = ControlRequest(json: body) else {
            return respond(context, .badRequest, text: #"a command is {"command": "start"}, {"command": "stop"} or {"command": "tempo", "bpm": 96}"#)
        }
        let daemon = daemon
        let channel = context.channel
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        DispatchQueue.global().async {
            let reply = switch daemon.perform(.jam(command)) {
            case .success(let message): ControlReply(ok: true, message: message)
            case .failure(let refusal): ControlReply(ok: false, message: refusal.reason)
            }
            channel.eventLoop.execute {
                let (handler, context) = loopBound.value
                handler.respond(context, reply.ok ? .ok : .conflict, type: "application/json", body: reply.line)
            }
        }
    }

    private func respond(_ context: ChannelHandlerContext, _ status: HTTPResponseStatus, text: String) {
        respond(context, status, type: "text/plain; charset=utf-8", body: Array((text + "\n").utf8))
    }

    /// Sends a whole response and closes the connection (the page opens one per request; nothing is kept alive).
    private func respond(_ context: ChannelHandlerContext, _ status: HTTPResponseStatus, type: String, body: [UInt8]) {
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
}
