#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import MIDI
import RTPMIDI
import Transport
import Synchronization

/// One benchmark peer: an `RTPMIDISession` with its own `UDPPortPair` on 127.0.0.1, driven
/// on its own serial queue by a `SessionRunner`, as jambridge's `NetworkSession` drives its own.
final class BenchPeer: RTPMIDISessionDelegate, @unchecked Sendable {
    let name: String
    let runner: SessionRunner
    var queue: DispatchQueue { runner.queue }
    var ports: UDPPortPair { runner.ports }
    // Touched only on `queue`.
    var session: RTPMIDISession { runner.session }
    private var joined: Set<String> = []
    private(set) var dropped = 0
    private(set) var left = 0
    /// Called on `queue` for every MIDI message received, with the receive instant
    /// (taken right after `recvfrom`, before the session parsed the datagram).
    var onMessage: ((MIDIMessage, PeerInfo, MonotonicInstant) -> Void)?

    init(name: String, port: UInt16) throws {
        self.name = name
        runner = SessionRunner(ports: try UDPPortPair(address: NetworkAddress(numeric: "127.0.0.1", port: 0), port: port),
                               queue: DispatchQueue(label: "bench.peer.\(name)"))
    }

    func start() {
        queue.sync { runner.start(configuration: SessionConfiguration(name: name), delegate: self) }
    }

    func invite(port: UInt16, label: String) {
        queue.sync {
            session.invite(NetworkAddress(numeric: "127.0.0.1", port: port)!, label: label, now: MonotonicClock.now())
            runner.reschedule()
        }
    }

    var joinedNames: Set<String> { queue.sync { joined } }
    var counters: SessionCounters { queue.sync { session.counters } }

    func close() {
        queue.sync { runner.stop() }
    }

    func session(send datagram: UnsafeRawBufferPointer, from port: SessionPort, to address: NetworkAddress) {
        _ = ports.send(datagram, from: port, to: address)
    }

    func session(received message: MIDIMessage, from peer: PeerInfo, at time: MonotonicInstant) {
        onMessage?(message, peer, time)
    }

    func session(peerJoined peer: PeerInfo) { joined.insert(peer.name) }

    func session(peerLeft peer: PeerInfo, reason: PeerLeaveReason) {
        joined.remove(peer.name)
        left += 1
        log("peer \(name): '\(peer.name)' left: \(reason)")
    }

    func session(peerReturned peer: PeerInfo) {
        joined.insert(peer.name)
        log("peer \(name): '\(peer.name)' is back")
    }

    func session(dropped reason: String, from address: NetworkAddress) {
        dropped += 1
        if dropped <= 5 { log("peer \(name): dropped a datagram from \(address): \(reason)") }
    }

    func session(invitationFailed target: String, at address: NetworkAddress, reason: String) {
        log("peer \(name): invitation to \(target) failed: \(reason)")
    }
}

/// Sequence numbers carried in note-ons: channel (4 bits) x note (7 bits) x velocity 1...127
/// (velocity 0 would be a note-off), so 260,096 distinct values before wrapping.
enum SequenceCode {
    static let modulus = 16 * 128 * 127

    static func message(_ sequence: Int) -> MIDIMessage {
        let v = sequence % modulus
        let channel = v / (128 * 127), rest = v % (128 * 127)
        return .noteOn(channel: UInt4(masking: UInt8(channel)), note: UInt7(masking: UInt8(rest / 127)),
                       velocity: UInt7(masking: UInt8(1 + rest % 127)))
    }

    static func sequence(_ message: MIDIMessage) -> Int? {
        guard case .noteOn(let c, let n, let v) = message, v.value > 0 else { return nil }
        return Int(c.value) * 128 * 127 + Int(n.value) * 127 + Int(v.value) - 1
    }
}

/// Send instants by sequence number, shared between the sender's queue and the receiver's.
final class Timestamps: Sendable {
    private let storage: Mutex<[UInt64]>
    init(count: Int) { storage = Mutex(Array(repeating: 0, count: count)) }
    func set(_ index: Int, _ value: UInt64) { storage.withLock { $0[index] = value } }
    func set(_ range: Range<Int>, _ value: UInt64) { storage.withLock { for i in range { $0[i] = value } } }
    func get(_ index: Int) -> UInt64 { storage.withLock { $0[index] } }
}

func log(_ text: String) { writeLine(text, to: 2) }

/// Prints a result line, unbuffered (stdout may be a pipe to tee).
func emit(_ text: String) { writeLine(text, to: 1) }

private func writeLine(_ text: String, to fd: Int32) {
    var line = text + "\n"
    line.withUTF8 { _ = write(fd, $0.baseAddress, $0.count) }
}

/// Sleeps until `ns` on CLOCK_MONOTONIC.
func sleepUntil(_ ns: UInt64) {
    var ts = timespec(tv_sec: Int(ns / 1_000_000_000), tv_nsec: Int(ns % 1_000_000_000))
    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
}

func nowNanoseconds() -> UInt64 { MonotonicClock.now().nanoseconds }

/// Waits up to `seconds` for `condition`; returns whether it held.
func waitFor(seconds: Double, _ condition: () -> Bool) -> Bool {
    let end = nowNanoseconds() + UInt64(seconds * 1e9)
    while nowNanoseconds() < end {
        if condition() { return true }
        usleep(20_000)
    }
    return condition()
}
