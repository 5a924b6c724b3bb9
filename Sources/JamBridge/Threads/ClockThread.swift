#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Logging
import MIDI
import Synchronization
import Transport

/// The thread that sends the jam's clock to the session at its time (`TimedDatagrams`), and the drums' timer: a
/// thread of its own that sleeps until the next deadline on the monotonic clock (clock_nanosleep with TIMER_ABSTIME,
/// so a late wake-up never shifts the deadlines after it) and then calls `fire`, which hands out what is due and
/// returns the next deadline. It runs at its role's real-time priority
/// (SCHED_FIFO) where the system allows, so other work on the machine delays a tick less; where it does not,
/// it says so once and runs at normal priority.
///
/// Long waits sleep on a semaphore that `wake` signals (a start command, a master's first tick), until 1 ms
/// before the deadline; the last stretch is clock_nanosleep's.
final class ClockThread: Sendable {
    /// The real-time priority asked for: above ordinary threads, below the kernel's own (IRQ threads run at 50).
    static let priority: Int32 = 20

    /// What a thread is for, as its log lines say, and the real-time priority it asks for.
    struct Role: Sendable {
        /// "clock": the thread's name in its log lines.
        var name: String
        var priority: Int32
        /// What goes without the thread, if it cannot start.
        var withoutIt: String
        /// What jitters more at normal priority.
        var jitters: String

        /// The jam's clock to the session.
        static let clock = Role(name: "clock", priority: ClockThread.priority,
                                withoutIt: "for the jam's clock: its ticks to the session's peers stay unsent", jitters: "clock ticks")
    }

    /// Deadlines further than this are waited for on the semaphore first.
    private static let semaphoreMargin: UInt64 = 2_000_000

    /// What the thread and its owner share.
    private final class Shared: Sendable {
        let wakeup = DispatchSemaphore(value: 0)
        let stopped = Atomic<Bool>(false)
        let ended = DispatchSemaphore(value: 0)
        /// What raising the thread's priority gave (0, or the error number), and its signal to the starter.
        let raised = Atomic<Int32>(0)
        let started = DispatchSemaphore(value: 0)
    }

    private let shared = Shared()

    /// Starts the thread; it calls `fire` at once, then at each deadline `fire` returns (nil: when woken).
    init(_ role: Role = .clock, logger: Logger, fire: @escaping @Sendable (MonotonicInstant) -> MonotonicInstant?) {
        let loop = Loop(shared: shared, role: role, fire: fire)
        switch startThread({ loop.run() }) {
        case .success(let thread):
            pthread_detach(thread)
            // Said here, by the starter: a real-time thread writes no log line (writing one may wait).
            shared.started.wait()
            let result = shared.raised.load(ordering: .acquiring)
            if result == 0 {
                logger.info("\(role.name) thread runs at real-time priority (SCHED_FIFO \(role.priority))")
            } else {
                logger.notice("\(role.name) thread runs at normal priority: real-time priority refused (\(String(cString: strerror(result)))); \(role.jitters) may jitter more under load (allow it with LimitRTPRIO= or an rtprio limit for the user)")
            }
        case .failure(let error):
            logger.error("\(error) \(role.withoutIt)")
            shared.ended.signal()
        }
    }

    /// Makes the thread ask `fire` for the next deadline now (something earlier may be due).
    func wake() {
        shared.wakeup.signal()
    }

    /// Stops the thread and waits until it ended (call off the queue `fire` waits for).
    func stop() {
        guard !shared.stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        shared.wakeup.signal()
        shared.ended.wait()
    }

    private final class Loop: @unchecked Sendable {
        let shared: Shared
        let role: Role
        let fire: (MonotonicInstant) -> MonotonicInstant?

        init(shared: Shared, role: Role, fire: @escaping (MonotonicInstant) -> MonotonicInstant?) {
            self.shared = shared
            self.role = role
            self.fire = fire
        }

        func run() {
            shared.raised.store(raiseToRealTimePriority(role.priority), ordering: .releasing)
            shared.started.signal()
            var deadline = fire(MonotonicClock.now())
            while !shared.stopped.load(ordering: .acquiring) {
                if let due = deadline {
                    let now = MonotonicClock.now()
                    if due > now.advanced(byNanoseconds: ClockThread.semaphoreMargin) {
                        let wait = due.nanoseconds - now.nanoseconds - ClockThread.semaphoreMargin / 2
                        if shared.wakeup.wait(timeout: .now() + .nanoseconds(Int(wait))) == .success {
                            deadline = fire(MonotonicClock.now())
                            continue
                        }
                    }
                    sleep(until: due)
                } else {
                    shared.wakeup.wait()
                }
                if shared.stopped.load(ordering: .acquiring) { break }
                deadline = fire(MonotonicClock.now())
            }
            shared.ended.signal()
        }

        private func sleep(until instant: MonotonicInstant) {
            var time = timespec(tv_sec: Int(instant.nanoseconds / 1_000_000_000),
                                tv_nsec: Int(instant.nanoseconds % 1_000_000_000))
            while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &time, nil) == EINTR {}
        }
    }
}
