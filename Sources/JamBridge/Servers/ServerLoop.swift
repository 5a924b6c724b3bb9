import Dispatch
import NIOCore
import NIOPosix
import Synchronization

/// The event loop the daemon's servers share (the control socket and the status page, docs/internals.md "The
/// control socket"): one SwiftNIO loop on one thread of its own, made by the daemon at start and shut down at its
/// stop, so that it outlives the status pages a reload replaces. Nothing run on it waits: answers that need the
/// daemon's state are made on the daemon's control queue (`DaemonAccess`) and handed back with `execute`.
///
/// Threads other than the loop's reach it only through here, so that nothing is scheduled on it once it has shut
/// down (SwiftNIO complains, and will trap): an answer made after the servers are gone is dropped.
final class ServerLoop: Sendable {
    /// The longest a thread waits for the loop (`wait`, `shutDown`): what it is asked is done in microseconds, since
    /// nothing on the loop waits; this bounds a stop even if the loop's thread is starved.
    static let waitLimit = TimeAmount.seconds(2)

    let eventLoop: any EventLoop
    private let group: MultiThreadedEventLoopGroup
    /// False once `shutDown` began.
    private let isOpen = Mutex(true)

    init() {
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        eventLoop = group.next()
    }

    /// Runs `task` on the loop; nothing once it has shut down.
    func execute(_ task: @escaping @Sendable () -> Void) {
        isOpen.withLock { isOpen in
            if isOpen { eventLoop.execute(task) }
        }
    }

    /// Runs `operation` on the loop and waits for the future it makes, from another thread (the daemon's control
    /// queue), at most `waitLimit`. Throws what the future failed with, or `ServerLoopError`.
    func wait<Value: Sendable>(for operation: @escaping @Sendable () -> EventLoopFuture<Value>) throws -> Value {
        precondition(!eventLoop.inEventLoop, "the servers' loop cannot wait for itself")
        let result = Mutex<Result<Value, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let started = isOpen.withLock { isOpen in
            if isOpen {
                eventLoop.execute {
                    operation().whenComplete { outcome in
                        result.withLock { $0 = outcome }
                        done.signal()
                    }
                }
            }
            return isOpen
        }
        guard started else { throw ServerLoopError.shutDown }
        guard done.wait(timeout: .now() + .nanoseconds(Int(Self.waitLimit.nanoseconds))) == .success else {
            throw ServerLoopError.timedOut
        }
        return try result.withLock { $0! }.get()
    }

    /// Shuts the loop down, once its servers have stopped: closes what is still open on it and ends its thread.
    /// Waits at most `waitLimit`; false if the thread had not ended by then.
    @discardableResult
    func shutDown() -> Bool {
        let wasOpen = isOpen.withLock { isOpen in
            defer { isOpen = false }
            return isOpen
        }
        guard wasOpen else { return true }
        let done = DispatchSemaphore(value: 0)
        group.shutdownGracefully(queue: .global()) { _ in done.signal() }
        return done.wait(timeout: .now() + .nanoseconds(Int(Self.waitLimit.nanoseconds))) == .success
    }
}

/// Why the servers' loop did not do what it was asked.
enum ServerLoopError: Error, CustomStringConvertible {
    /// It has shut down (the daemon is stopping).
    case shutDown
    /// It did not within `ServerLoop.waitLimit`.
    case timedOut

    var description: String {
        switch self {
        case .shutDown: "the servers' event loop has shut down"
        case .timedOut: "the servers' event loop did not answer within \(ServerLoop.waitLimit.nanoseconds / 1_000_000_000) s"
        }
    }
}
