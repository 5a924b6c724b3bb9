import Dispatch
import MIDI

/// Runs an `RTPMIDISession` on a serial queue over its `UDPPortPair`: reads datagrams there,
/// flushes what each one routed to peers when it is handled, and keeps the pair's timer armed for
/// the session's next deadline. Everything below is used only on `queue`, after `start`.
public final class SessionRunner: @unchecked Sendable {
    /// The session's two sockets.
    public let ports: UDPPortPair
    /// The serial queue the session lives on.
    public let queue: DispatchQueue
    /// The session (use it only on `queue`; after calling into it, call `reschedule`).
    public private(set) var session: RTPMIDISession!
    /// True while a datagram is handled: its output is flushed when that is done.
    public private(set) var isHandlingDatagram = false
    /// True from `start` to `stop`: the timer may be armed.
    private var isRunning = false
    /// The deadline the timer is armed for: re-armed only when the session's moves (a system call).
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
        isRunning = true
        ports.start(queue: queue, timerExpired: { [unowned self] in
            armedDeadline = nil
            session.tick(now: MonotonicClock.now())
            reschedule()
        }) { [unowned self] bytes, port, from in
            isHandlingDatagram = true
            session.receive(bytes, on: port, from: from, now: MonotonicClock.now())
            isHandlingDatagram = false
            session.flush() // what this datagram routed to peers leaves now, one packet per peer
            reschedule()
        }
    }

    /// Arms the timer for the session's next deadline, if it moved.
    public func reschedule() {
        guard isRunning else { return }
        let next = session.nextDeadline
        guard next != armedDeadline else { return }
        armedDeadline = next
        ports.armTimer(at: next)
    }

    /// Sends what is queued, says goodbye to every peer, stops the timer and closes the ports;
    /// call on `queue`.
    public func stop() {
        dispatchPrecondition(condition: .onQueue(queue))
        session?.flush()
        session?.close(now: MonotonicClock.now())
        isRunning = false
        ports.close()
    }
}
