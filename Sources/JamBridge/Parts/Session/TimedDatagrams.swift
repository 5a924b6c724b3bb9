#if canImport(Glibc)
import Glibc
#endif
import Logging
import MIDI
import RTPMIDI
import Synchronization
import Transport

/// The session's `PacketLane`: datagrams prepared on the engine's queue ahead of their time (the jam's clock ticks),
/// sent at that time by a `ClockThread` of their own at real-time priority. The thread takes no lock and no queue:
/// the engine's queue writes each datagram into a ring of `capacity` slots and publishes it with an atomic store;
/// the thread claims a slot with a compare-and-swap before it sends, and the queue takes one back with another, so
/// that a datagram leaves exactly once or never. Made when the first datagram is prepared ahead, so that a daemon
/// without a jam has no such thread.
final class TimedDatagrams: PacketLane, @unchecked Sendable { // slots: see `Slot`
    /// Slots in the ring (1500 bytes each: 768 KB); beyond, the session sends at once. The jam prepares ticks
    /// `TimedOutput.lead` ahead: 5 a peer at 120 BPM, 13 at 300; but each packet sent to a peer meanwhile takes its
    /// ticks back and posts them again in new slots (a thousand a second under a flood of notes), which the thread
    /// frees only as it passes them: past half full, a post wakes it to.
    static let capacity = 512

    /// One datagram's place. Its fields are written on the engine's queue before `tail` publishes it, and read by the
    /// thread after it read `tail`; `state` is what both change.
    private final class Slot: @unchecked Sendable {
        let state = Atomic<UInt8>(State.done)
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: 1500, alignment: 1)
        var count = 0
        var address = NetworkAddress(ipv4: 0, 0, 0, 0, port: 0)
        var due: UInt64 = 0
        /// The position it holds (its ticket), to tell a reused slot from the one a ticket names.
        var ticket: UInt64 = 0

        deinit { bytes.deallocate() }
    }

    private enum State {
        static let waiting: UInt8 = 0, sending: UInt8 = 1, done: UInt8 = 2
    }

    private let slots = (0..<TimedDatagrams.capacity).map { _ in Slot() }
    /// The next position the queue writes, and the first the thread has not finished with.
    private let tail = Atomic<UInt64>(0), head = Atomic<UInt64>(0)
    /// The instant the thread sleeps towards (UInt64.max: until woken); a datagram due earlier wakes it.
    private let sleepsUntil = Atomic<UInt64>(.max)
    /// Datagrams the kernel refused (sendto's errors), counted by the thread.
    let failures = Atomic<Int>(0)
    private let ports: UDPPortPair
    private var thread: ClockThread?

    /// A lane sending from `ports`' data port, its thread started.
    init(ports: UDPPortPair, logger: Logger) {
        self.ports = ports
        thread = ClockThread(.clock, logger: logger) { [unowned self] now in sendDue(now: now) }
    }

    /// Ends the thread; what waits is not sent. Call before the ports close.
    func stop() {
        thread?.stop()
        thread = nil
    }

    // MARK: On the engine's queue

    var hasRoom: Bool {
        tail.load(ordering: .relaxed) - head.load(ordering: .acquiring) + 2 <= UInt64(Self.capacity)
    }

    func post(_ packet: UnsafeRawBufferPointer, to address: NetworkAddress, at due: MonotonicInstant) -> UInt64 {
        let position = tail.load(ordering: .relaxed)
        let slot = slots[Int(position % UInt64(Self.capacity))]
        precondition(position - head.load(ordering: .acquiring) < UInt64(Self.capacity) && packet.count <= slot.bytes.count)
        slot.bytes.copyMemory(from: packet)
        slot.count = packet.count
        slot.address = address
        slot.due = due.nanoseconds
        slot.ticket = position
        slot.state.store(State.waiting, ordering: .relaxed)
        tail.store(position + 1, ordering: .sequentiallyConsistent)
        if due.nanoseconds < sleepsUntil.load(ordering: .sequentiallyConsistent)
            || position - head.load(ordering: .relaxed) > UInt64(Self.capacity / 2) { thread?.wake() }
        return position
    }

    func takeBack(_ ticket: UInt64) -> Bool {
        guard ticket >= head.load(ordering: .acquiring) else { return false }
        let slot = slots[Int(ticket % UInt64(Self.capacity))]
        guard slot.ticket == ticket else { return false }
        while true {
            let (exchanged, state) = slot.state.compareExchange(expected: State.waiting, desired: State.done,
                                                                ordering: .acquiringAndReleasing)
            if exchanged { return true }
            if state == State.done { return false }
            // The thread is sending it: a moment, at real-time priority, without waiting for anything.
            sched_yield()
        }
    }

    var now: MonotonicInstant { MonotonicClock.now() }

    func isDone(_ ticket: UInt64) -> Bool {
        ticket < head.load(ordering: .acquiring)
            || slots[Int(ticket % UInt64(Self.capacity))].state.load(ordering: .acquiring) == State.done
    }

    // MARK: On the thread

    /// Sends every datagram due by `now` (and a moment after, as the jam hands ticks out), in the order posted;
    /// returns when the next is due.
    private func sendDue(now: MonotonicInstant) -> MonotonicInstant? {
        while true {
            let end = tail.load(ordering: .acquiring)
            var first = head.load(ordering: .relaxed)
            var next = UInt64.max
            var position = first
            let horizon = now.nanoseconds + 50_000
            while position < end {
                let slot = slots[Int(position % UInt64(Self.capacity))]
                if slot.state.load(ordering: .acquiring) == State.waiting {
                    if slot.due <= horizon {
                        if slot.state.compareExchange(expected: State.waiting, desired: State.sending, ordering: .acquiringAndReleasing).exchanged {
                            let datagram = UnsafeRawBufferPointer(rebasing: slot.bytes.prefix(slot.count))
                            if ports.send(datagram, from: .data, to: slot.address) != nil {
                                failures.add(1, ordering: .relaxed)
                            }
                            slot.state.store(State.done, ordering: .releasing)
                        }
                    } else {
                        next = min(next, slot.due)
                    }
                }
                if position == first, slot.state.load(ordering: .acquiring) == State.done { first += 1 }
                position += 1
            }
            head.store(first, ordering: .releasing)
            sleepsUntil.store(next, ordering: .sequentiallyConsistent)
            // A datagram posted while the ring was read, due before `next`, would not wake the thread: read again.
            guard tail.load(ordering: .sequentiallyConsistent) != end else {
                return next == .max ? nil : MonotonicInstant(nanoseconds: next)
            }
        }
    }
}
