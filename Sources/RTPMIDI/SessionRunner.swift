import Dispatch
import MIDI

/// Runs an `RTPMIDISession` on a serial queue over its `UDPPortPair`: reads datagrams there,
/// flushes what each one routed to peers when it is handled, and keeps a timer armed for the
/// session's next deadline. Everything below is used only on `queue`, after `start`.
public final class SessionRunner: @unchecked Sendable {
    /// The session's two sockets.
    public let ports: UDPPortPair
    /// The serial queue the session lives on.
    public let queue: DispatchQueue
    /// The session (use it only on `queue`; after calling into it, call `reschedule`).
    public private(set) var session: RTPMIDISession!
    /// True while a datagram is handled: its output is flushed when that is done.
    public private(set) var isHandlingDatagram = false
    private var timer: DispatchSourceTimer?
    /// The deadline the timer is armed for: re-armed only when the session's moves, since
    /// every re-arm wakes Dispatch's manager thread.
    private var armedDeadline: MonotonicInstant?

    /// A runner for a session on `ports`, living on `queue`.
    public init(ports: UDPPortPair, queue: DispatchQueue) {
        self.ports = ports
        self.queue = queue
    }

    /// Creates the session answering through `delegate` and starts reading; call on `queue`.
    public func start(configuration: SessionConfiguration, delegate: RTPMIDISessionDelegate) {
        dispatchPrecondition(condition: .onQueue(queue))
        session = RTPMIDISession(configuration: configuration, delegate: delegate)
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.setEventHandler { [unowned self] in
            armedDeadline = nil
            session.tick(now: MonotonicClock.now())
            reschedule()
        }
        timer.resume()
        self.timer = timer
        ports.start(queue: queue) { [unowned self] bytes, port, from in
            isHandlingDatagram = true
            session.receive(bytes, on: port, from: from, now: MonotonicClock.now())
            isHandlingDatagram = false
            session.flush() // what this datagram routed to peers leaves now, one packet per peer
            reschedule()
        }
    }

    /// Arms the timer for the session's next deadline, if it moved.
    public func reschedule() {
        guard let timer else { return }
        let next = session.nextDeadline
        guard next != armedDeadline else { return }
        armedDeadline = next
        guard let deadline = next else {
            timer.schedule(deadline: .distantFuture)
            return
        }
        let now = MonotonicClock.now()
        let wait = deadline > now ? deadline.nanoseconds - now.nanoseconds : 0
        timer.schedule(deadline: .now() + .nanoseconds(Int(min(wait, 3_600_000_000_000))))
    }

    /// Sends what is queued, says goodbye to every peer, stops the timer and closes the ports;
    /// call on `queue`.
    public func stop() {
        dispatchPrecondition(condition: .onQueue(queue))
        session?.flush()
        session?.close(now: MonotonicClock.now())
        timer?.cancel()
        timer = nil
        ports.close()
    }
}
