#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import Synchronization
import RTPMIDI
import Transport

/// The floor: a bare UDP relay on one thread. Four sockets on 127.0.0.1: a front pair
/// (control N, data N+1) that peer A invites, and a back pair (M, M+1) that forwards to peer B's
/// ports. Each datagram is read with `recvfrom` and the same bytes go out of the opposite
/// socket with `sendto`; no parsing, no queue hop. AppleMIDI runs end to end through it, so
/// A and B hold a direct session and the MIDI packets are byte-for-byte what A sends.
final class UDPRelay: @unchecked Sendable {
    private var fds: [Int32] = []           // front control, front data, back control, back data
    private var frontPeer: [sockaddr_in?] = [nil, nil]
    private let target: UInt16
    private let stopping = Atomic<Bool>(false)
    private let finished = Mutex<Bool>(false)
    private(set) var forwarded = 0

    init(frontPort: UInt16, backPort: UInt16, targetControlPort: UInt16) throws {
        target = targetControlPort
        for port in [frontPort, frontPort + 1, backPort, backPort + 1] {
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            var size: Int32 = 1 << 20 // as jambridge's UDPPortPair
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            var address = Self.loopback(port)
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard result == 0 else { throw BenchError("relay: cannot bind 127.0.0.1:\(port): \(String(cString: strerror(errno)))") }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            fds.append(fd)
        }
    }

    static func loopback(_ port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "udp-relay"
        thread.start()
    }

    private func run() {
        var pollfds = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 65536, alignment: 8)
        defer { buffer.deallocate() }
        while !stopping.load(ordering: .relaxed) {
            guard poll(&pollfds, nfds_t(pollfds.count), 100) > 0 else { continue }
            for index in 0..<4 where pollfds[index].revents & Int16(POLLIN) != 0 {
                while true {
                    var from = sockaddr_in()
                    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
                    let count = withUnsafeMutablePointer(to: &from) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            recvfrom(fds[index], buffer, 65536, Int32(MSG_DONTWAIT), $0, &length)
                        }
                    }
                    guard count >= 0 else { break }
                    let side = index % 2 // 0 control, 1 data
                    var to: sockaddr_in
                    let out: Int32
                    if index < 2 { // from A: out of the back socket to B
                        frontPeer[side] = from
                        to = Self.loopback(target + UInt16(side))
                        out = fds[2 + side]
                    } else { // from B: out of the front socket to A
                        guard let peer = frontPeer[side] else { continue }
                        to = peer
                        out = fds[side]
                    }
                    _ = withUnsafePointer(to: &to) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            sendto(out, buffer, count, Int32(MSG_DONTWAIT), $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                        }
                    }
                    forwarded += 1
                }
            }
        }
        for fd in fds { close(fd) }
        finished.withLock { $0 = true }
    }

    func stop() {
        stopping.store(true, ordering: .relaxed)
        _ = waitFor(seconds: 2) { finished.withLock { $0 } }
    }
}

/// The bare relay in a process of its own (this binary's `serve-relay` mode), so it pays the
/// same cross-process wake-ups as jambridge does; the in-process relay shares the peers' process.
final class ProcessRelay: Relay {
    private let process = Process()

    init(frontPort: UInt16, backPort: UInt16, targetControlPort: UInt16) {
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = ["serve-relay", String(frontPort), String(backPort), String(targetControlPort)]
    }

    func start() {
        do { try process.run() } catch { emit("relay process: \(error)"); exit(1) }
        usleep(200_000) // bound before A invites it
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}

/// `serve-relay FRONT BACK TARGET`: runs a `UDPRelay` until killed.
func serveRelay(_ arguments: [String]) -> Never {
    guard arguments.count == 3, let front = UInt16(arguments[0]), let back = UInt16(arguments[1]),
          let target = UInt16(arguments[2]) else { emit("usage: rtpmidi-bench serve-relay FRONT BACK TARGET"); exit(2) }
    do {
        try UDPRelay(frontPort: front, backPort: back, targetControlPort: target).start()
    } catch {
        emit("relay: \(error)")
        exit(1)
    }
    while true { pause() }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A diagnostic relay with jambridge's own I/O path: two `UDPPortPair`s (front, back) read by
/// Dispatch sources on one serial queue, forwarding the bytes verbatim with `UDPPortPair.send`.
/// No session, no router. With `extraHop`, each forward is done in a `queue.async` block (as
/// jambridge flushed before `SessionRunner` flushed at the end of each datagram); with
/// `rescheduleTimer`, a Dispatch timer is re-armed after each datagram (as it did before
/// `SessionRunner` re-armed only when the deadline moved). It isolates what Dispatch costs
/// from what jambridge's session and routing cost.
final class DispatchRelay: @unchecked Sendable {
    private let front: UDPPortPair
    private let back: UDPPortPair
    private let queue = DispatchQueue(label: "dispatch-relay")
    private var frontPeer: [NetworkAddress?] = [nil, nil]
    private let target: UInt16
    private let extraHop: Bool
    private let timer: DispatchSourceTimer?

    init(frontPort: UInt16, backPort: UInt16, targetControlPort: UInt16, extraHop: Bool, rescheduleTimer: Bool = false) throws {
        if rescheduleTimer {
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.setEventHandler {}
            timer.resume()
            self.timer = timer
        } else {
            timer = nil
        }
        let loopback = NetworkAddress(numeric: "127.0.0.1", port: 0)
        front = try UDPPortPair(address: loopback, port: frontPort)
        back = try UDPPortPair(address: loopback, port: backPort)
        target = targetControlPort
        self.extraHop = extraHop
    }

    func start() {
        let b = NetworkAddress(numeric: "127.0.0.1", port: target)!
        queue.sync {
            front.start(queue: queue) { [unowned self] bytes, port, from in
                frontPeer[port == .control ? 0 : 1] = from
                forward(bytes, from: port, through: back, to: b.with(port: target + (port == .control ? 0 : 1)))
            }
            back.start(queue: queue) { [unowned self] bytes, port, _ in
                guard let to = frontPeer[port == .control ? 0 : 1] else { return }
                forward(bytes, from: port, through: front, to: to)
            }
        }
    }

    private func forward(_ bytes: UnsafeRawBufferPointer, from port: SessionPort, through pair: UDPPortPair, to address: NetworkAddress) {
        // Re-arm a timer after every datagram (to a deadline about a second away, like the RS
        // feedback a session schedules): the cost SessionRunner now avoids.
        defer { timer?.schedule(deadline: .now() + .seconds(1)) }
        guard extraHop else {
            pair.send(bytes, from: port, to: address)
            return
        }
        let copy = Array(bytes)
        queue.async { copy.withUnsafeBytes { _ = pair.send($0, from: port, to: address) } }
    }

    func stop() {
        queue.sync {
            front.close()
            back.close()
            timer?.cancel()
        }
    }
}
