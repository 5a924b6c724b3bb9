#if canImport(Glibc)
import Glibc
#endif
import Logging
import NIOCore

/// On a listener, first: when `accept` fails (out of file descriptors or memory), the connection stays in the backlog
/// and the listener readable, so accepting again at once would spin; the listener is not read for `backoff` instead.
/// NIO's `AcceptBackoffHandler` means to do this but does not here: it holds back the next read, yet the listener's read
/// is still pending after the failure, so it stays registered with epoll and the loop spins (measured: a core, with a
/// connection waiting at a limit of 64 descriptors). Turning `autoRead` off takes it out of epoll. Each spell of
/// failures is logged once, as `what: why; trying again every second (N times so far)` (the first 20 spells, then
/// every 1000th). The control socket's and the status page's.
final class AcceptBackoff: ChannelInboundHandler {
    typealias InboundIn = any Channel
    typealias InboundOut = any Channel

    static let backoff = TimeAmount.seconds(1)

    private let what: String
    private let logger: Logger
    /// True from a failed accept to the next that succeeds.
    private var failing = false
    private var spells = 0
    /// True while the listener is not read.
    private var paused = false

    /// `what` begins the log line: `control socket: cannot accept a client`.
    init(_ what: String, logger: Logger) {
        self.what = what
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        failing = false
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let error = error as? IOError else { return context.fireErrorCaught(error) }
        if !failing {
            failing = true
            spells += 1
            if isLogged(spells) {
                logger.warning("\(what): \(String(cString: strerror(error.errnoCode))); trying again every second (\(counted(spells, "time")) so far)")
            }
        }
        guard !paused else { return }
        paused = true
        let channel = context.channel
        try? channel.syncOptions?.setOption(.autoRead, value: false)
        context.eventLoop.assumeIsolated().scheduleTask(in: Self.backoff) { [self] in
            paused = false
            try? channel.syncOptions?.setOption(.autoRead, value: true)
        }
    }
}
