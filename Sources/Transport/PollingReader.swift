#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization

/// A thread of its own blocked in poll(2) on a set of file descriptors, handing each readiness
/// to a serial queue with `sync`, which runs it on that thread when the queue is idle. Measured
/// (BENCHMARKS.md), this saves the two thread wake-ups a Dispatch read source costs per
/// datagram (manager thread, then a worker): most of the forwarding latency on loopback.
public final class PollingReader: Sendable {
    private let queue: DispatchQueue
    /// Set on `queue` while reading, so `stop` knows whether it may wait for the thread.
    private let onQueue = DispatchSpecificKey<Bool>()
    private let thread: pthread_t
    /// The write end of the thread's wake-up pipe.
    private let wake: Int32
    /// Shared with the thread.
    private let stopFlag = StopFlag()
    /// Left by the thread as it ends, after `finished`.
    private let ended = DispatchGroup()

    /// Starts a thread polling `descriptors` (each with the events to wait for) until `stop`.
    /// When some are ready it calls `ready` on `queue`, once per ready descriptor with its
    /// `revents` set, all in one `sync`. `finished` runs on the thread as it ends, after the
    /// last `ready`: close the descriptors there, since `stop` may return before the thread ends.
    public init(watching descriptors: [pollfd], queue: DispatchQueue,
                ready: @escaping (pollfd) -> Void, finished: @escaping @Sendable () -> Void) throws(TransportError) {
        var pipeEnds: [Int32] = [-1, -1]
        guard pipe(&pipeEnds) == 0 else { throw TransportError(operation: "open a wake-up pipe", code: errno) }
        for fd in pipeEnds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        self.queue = queue
        wake = pipeEnds[1]
        queue.setSpecific(key: onQueue, value: true)
        ended.enter()
        let loop = Loop(fds: descriptors + [pollfd(fd: pipeEnds[0], events: Int16(POLLIN), revents: 0)],
                        queue: queue, stopFlag: stopFlag, ready: ready, finished: finished, ended: ended)
        switch startThread({ loop.run() }) {
        case .success(let thread):
            self.thread = thread
        case .failure(let error):
            ended.leave()
            queue.setSpecific(key: onQueue, value: nil)
            Glibc.close(pipeEnds[0])
            Glibc.close(pipeEnds[1])
            throw error
        }
    }

    deinit { stop() }

    /// Stops the thread (once); no `ready` call starts after this returns. Called off `queue`, it waits
    /// for the thread to end (`finished` has run); on `queue` (or from `ready`) it cannot, since
    /// the thread may be waiting for the queue, and the thread ends as soon as the queue lets it.
    public func stop() {
        guard !stopFlag.value.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var byte: UInt8 = 1
        _ = Glibc.write(wake, &byte, 1)
        Glibc.close(wake)
        if DispatchQueue.getSpecific(key: onQueue) == true || pthread_equal(pthread_self(), thread) != 0 {
            pthread_detach(thread)
        } else {
            pthread_join(thread, nil)
        }
        queue.setSpecific(key: onQueue, value: nil)
    }

    /// Waits, off `queue`, for the thread to end (`finished` has run): after a `stop` on the queue, which cannot
    /// wait, when its owner needs the descriptors closed (a port free to be bound again).
    public func waitUntilEnded() {
        ended.wait()
    }

    /// Waits as `waitUntilEnded` does, at most `timeout`: false if the thread has not ended by then (it is waiting for
    /// a busy queue, and closes the descriptors when the queue lets it).
    public func waitUntilEnded(within timeout: Duration) -> Bool {
        let (seconds, attoseconds) = timeout.components
        return ended.wait(timeout: .now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))) == .success
    }

    private final class StopFlag: Sendable {
        let value = Atomic<Bool>(false)
        var isSet: Bool { value.load(ordering: .acquiring) }
    }

    /// The thread's loop and what it calls: owned by the thread, released when it ends.
    private final class Loop: @unchecked Sendable {
        var fds: [pollfd]
        let queue: DispatchQueue
        let stopFlag: StopFlag
        let ready: (pollfd) -> Void
        let finished: @Sendable () -> Void
        let ended: DispatchGroup

        init(fds: [pollfd], queue: DispatchQueue, stopFlag: StopFlag,
             ready: @escaping (pollfd) -> Void, finished: @escaping @Sendable () -> Void, ended: DispatchGroup) {
            self.fds = fds
            self.queue = queue
            self.stopFlag = stopFlag
            self.ready = ready
            self.finished = finished
            self.ended = ended
        }

        func run() {
            let wakeIndex = fds.count - 1
            while !stopFlag.isSet {
                guard poll(&fds, nfds_t(fds.count), -1) >= 0 else {
                    if errno == EINTR { continue }
                    break
                }
                if fds[wakeIndex].revents != 0 { break } // stop() wrote to the pipe
                queue.sync {
                    for fd in fds[..<wakeIndex] where fd.revents != 0 {
                        if stopFlag.isSet { return }
                        ready(fd)
                    }
                }
            }
            Glibc.close(fds[wakeIndex].fd)
            finished()
            ended.leave()
        }
    }
}
