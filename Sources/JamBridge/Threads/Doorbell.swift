#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Dispatch
import Transport

/// How a real-time thread wakes a Dispatch queue without calling Dispatch: it adds to an eventfd (one non-blocking
/// write), and a read source on the queue runs the handler. Dispatch called from a SCHED_FIFO thread may start a worker
/// from it, which inherits its priority (the drums' thread did so, with a log line through a global queue: issue 42).
final class Doorbell: @unchecked Sendable { // the descriptor is constant; the source is cancelled once
    private let descriptor: Int32
    private let source: DispatchSourceRead

    /// A doorbell whose ring runs `handler` on `queue`; fails if no eventfd can be made.
    init(queue: DispatchQueue, handler: @escaping () -> Void) throws(TransportError) {
        let descriptor = eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC))
        guard descriptor >= 0 else { throw TransportError(operation: "make an eventfd", code: errno) }
        self.descriptor = descriptor
        source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
        source.setEventHandler {
            var rings: UInt64 = 0
            _ = read(descriptor, &rings, MemoryLayout<UInt64>.size)
            handler()
        }
        source.setCancelHandler { close(descriptor) }
        source.resume()
    }

    /// Wakes the queue (any thread): rings are merged until the handler runs.
    func ring() {
        var one: UInt64 = 1
        _ = write(descriptor, &one, MemoryLayout<UInt64>.size)
    }

    /// Stops listening; the descriptor closes once the source is done with it.
    func cancel() {
        source.cancel()
    }
}
