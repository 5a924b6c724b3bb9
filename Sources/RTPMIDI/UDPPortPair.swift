#if canImport(Glibc)
import Glibc
#endif
import Dispatch

/// A socket call that failed, with errno and what was attempted.
public struct TransportError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What was attempted, e.g. "bind UDP port 5004".
    public var operation: String
    /// errno after the failed call.
    public var code: Int32

    /// The failure of `operation` with errno `code`.
    public init(operation: String, code: Int32) {
        self.operation = operation
        self.code = code
    }

    public var description: String {
        let reason = String(cString: strerror(code))
        switch code {
        case EADDRINUSE: return "cannot \(operation): \(reason) (another program, or another jambridge, uses it; choose another 'port:')"
        case EADDRNOTAVAIL: return "cannot \(operation): \(reason) (no interface has that 'bind:' address)"
        case EACCES: return "cannot \(operation): \(reason)"
        default: return "cannot \(operation): \(reason)"
        }
    }
}

/// The two UDP sockets of a session: control on port N, data on N+1, both on one address
/// (all interfaces, IPv4 and IPv6, unless bound to one). Datagrams are read into one reused
/// buffer by a thread of their own that blocks in poll(2) and hands each batch to the caller's
/// queue with `sync`, which runs it on that thread when the queue is idle: measured, this
/// saves the two thread wake-ups a Dispatch read source costs per datagram (manager thread,
/// then a worker), the larger part of the forwarding latency on loopback.
public final class UDPPortPair: @unchecked Sendable {
    /// The control port (the data port is one above).
    public let controlPort: UInt16
    private let control: Int32
    private let data: Int32
    private let family: Int32
    /// The write end of the reader thread's wake-up pipe (-1 before `start`).
    private var wakeReader: Int32 = -1
    private var isClosed = false
    /// Where datagrams are read to: the largest UDP payload.
    private let buffer: UnsafeMutableRawBufferPointer

    /// Binds control port `port` and data port `port + 1` on `address` (nil: every interface,
    /// IPv4 and IPv6). Port 0 picks a free consecutive pair.
    public init(address: NetworkAddress?, port: UInt16) throws(TransportError) {
        family = address?.family == .ipv4 ? AF_INET : AF_INET6
        var attempt = 0
        while true {
            attempt += 1
            let control = try Self.openSocket(family: family)
            let controlPort: UInt16
            do {
                controlPort = try Self.bind(control, address: address, port: port, family: family)
            } catch {
                Glibc.close(control)
                throw error
            }
            let data = try Self.openSocket(family: family)
            do {
                _ = try Self.bind(data, address: address, port: controlPort &+ 1, family: family)
                self.control = control
                self.data = data
                self.controlPort = controlPort
                buffer = .allocate(byteCount: 65536, alignment: 8)
                return
            } catch {
                Glibc.close(control)
                Glibc.close(data)
                // With a chosen port, N+1 being taken is the answer; with port 0, try another pair.
                guard port == 0, attempt < 50 else { throw error }
            }
        }
    }

    deinit {
        close()
        buffer.deallocate()
    }

    /// Starts reading: `handler` gets each datagram, the port it came in on and its sender,
    /// on `queue`. The bytes are valid only during the call.
    public func start(queue: DispatchQueue,
                      _ handler: @escaping (UnsafeRawBufferPointer, SessionPort, NetworkAddress) -> Void) {
        var wake: [Int32] = [-1, -1]
        guard wakeReader < 0, !isClosed, pipe(&wake) == 0 else { return }
        for fd in wake { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        wakeReader = wake[1]
        let reader = Reader(pair: self, queue: queue, wake: wake[0], handler: handler)
        var thread = pthread_t()
        let started = pthread_create(&thread, nil, { context in
            Unmanaged<Reader>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, Unmanaged.passRetained(reader).toOpaque())
        if started == 0 { pthread_detach(thread) }
    }

    /// The reader thread's state: it owns the sockets' closing once started.
    private final class Reader: @unchecked Sendable {
        let pair: UDPPortPair
        let queue: DispatchQueue
        let wake: Int32
        let handler: (UnsafeRawBufferPointer, SessionPort, NetworkAddress) -> Void

        init(pair: UDPPortPair, queue: DispatchQueue, wake: Int32,
             handler: @escaping (UnsafeRawBufferPointer, SessionPort, NetworkAddress) -> Void) {
            self.pair = pair
            self.queue = queue
            self.wake = wake
            self.handler = handler
        }

        func run() {
            var fds = [pollfd(fd: pair.control, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: pair.data, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            while true {
                guard poll(&fds, nfds_t(fds.count), -1) >= 0 || errno == EINTR else { break }
                if fds[2].revents != 0 { break } // close() wrote to the pipe
                let (control, data) = (fds[0].revents != 0, fds[1].revents != 0)
                queue.sync {
                    if control { pair.drain(pair.control, .control, handler) }
                    if data { pair.drain(pair.data, .data, handler) }
                }
            }
            Glibc.close(pair.control)
            Glibc.close(pair.data)
            Glibc.close(wake)
        }
    }

    /// Reads every datagram waiting on `socket`.
    private func drain(_ socket: Int32, _ port: SessionPort,
                       _ handler: (UnsafeRawBufferPointer, SessionPort, NetworkAddress) -> Void) {
        var storage = sockaddr_storage()
        while !isClosed { // a batch that waited for the queue while it closed us is dropped
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let count = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    recvfrom(socket, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT), $0, &length)
                }
            }
            guard count >= 0 else { return } // EAGAIN: drained (other errors: the source fires again)
            guard let from = NetworkAddress(socketAddress: storage) else { continue }
            handler(UnsafeRawBufferPointer(rebasing: buffer[..<count]), port, from)
        }
    }

    /// Sends `bytes` from our `port` to `address`; returns errno if the kernel refused.
    @discardableResult
    public func send(_ bytes: UnsafeRawBufferPointer, from port: SessionPort, to address: NetworkAddress) -> Int32? {
        var storage = address.socketAddress(family: family)
        let socket = port == .control ? control : data
        let length = socklen_t(family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size)
        let sent = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(socket, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT), $0, length)
            }
        }
        return sent < 0 ? errno : nil
    }

    /// Stops reading and closes both sockets (once); the reader thread, if started, closes them
    /// as it ends, so this never waits for it (it may be waiting for the caller's queue).
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        if wakeReader >= 0 {
            var byte: UInt8 = 1
            _ = Glibc.write(wakeReader, &byte, 1)
            Glibc.close(wakeReader)
        } else {
            Glibc.close(control)
            Glibc.close(data)
        }
    }

    private static func openSocket(family: Int32) throws(TransportError) -> Int32 {
        let fd = socket(family, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw TransportError(operation: "open a UDP socket", code: errno) }
        var off: Int32 = 0
        if family == AF_INET6 { // dual stack: IPv4 peers arrive as ::ffff:a.b.c.d
            setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &off, socklen_t(MemoryLayout<Int32>.size))
        }
        var size: Int32 = 1 << 20 // bursts of 100k messages/s must not overflow the queue
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
    }

    /// Binds `fd`; returns the port bound (the kernel's choice for port 0).
    private static func bind(_ fd: Int32, address: NetworkAddress?, port: UInt16, family: Int32) throws(TransportError) -> UInt16 {
        var storage = (address ?? NetworkAddress(ipv6: 0, 0, port: port)).with(port: port).socketAddress(family: family)
        let length = socklen_t(family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size)
        let result = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) }
        }
        let shown = address.map { $0.with(port: port).description } ?? "port \(port)"
        guard result == 0 else { throw TransportError(operation: "bind UDP \(shown)", code: errno) }
        var bound = sockaddr_storage()
        var boundLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &boundLength) }
        }
        return NetworkAddress(socketAddress: bound)?.port ?? port
    }
}

extension NetworkAddress {
    /// The address in a socket API sockaddr (IPv4-mapped IPv6 becomes IPv4); nil for other families.
    public init?(socketAddress storage: sockaddr_storage) {
        var storage = storage
        switch Int32(storage.ss_family) {
        case AF_INET:
            let v4 = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee } }
            let host = UInt32(bigEndian: v4.sin_addr.s_addr)
            self.init(ipv4: UInt8(host >> 24), UInt8(host >> 16 & 0xFF), UInt8(host >> 8 & 0xFF), UInt8(host & 0xFF),
                      port: UInt16(bigEndian: v4.sin_port))
        case AF_INET6:
            let v6 = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee } }
            var bytes = v6.sin6_addr.__in6_u.__u6_addr8
            let (high, low) = withUnsafeBytes(of: &bytes) { raw in
                (raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self).bigEndian,
                 raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self).bigEndian)
            }
            let port = UInt16(bigEndian: v6.sin6_port)
            if high == 0, low >> 32 == 0xFFFF { // ::ffff:a.b.c.d
                self.init(ipv4: UInt8(low >> 24 & 0xFF), UInt8(low >> 16 & 0xFF), UInt8(low >> 8 & 0xFF), UInt8(low & 0xFF), port: port)
            } else {
                self.init(ipv6: high, low, port: port, scopeID: v6.sin6_scope_id)
            }
        default:
            return nil
        }
    }

    /// The sockaddr for sending to this address from a socket of `family` (IPv4 through a
    /// dual-stack IPv6 socket becomes ::ffff:a.b.c.d).
    func socketAddress(family: Int32) -> sockaddr_storage {
        var storage = sockaddr_storage()
        if family == AF_INET {
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                    v4.pointee.sin_family = sa_family_t(AF_INET)
                    v4.pointee.sin_port = port.bigEndian
                    v4.pointee.sin_addr.s_addr = UInt32(truncatingIfNeeded: bytes.0 >> 32).bigEndian
                }
            }
            return storage
        }
        let (high, low) = self.family == .ipv4 ? (UInt64(0), UInt64(0xFFFF) << 32 | bytes.0 >> 32) : bytes
        withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                v6.pointee.sin6_family = sa_family_t(AF_INET6)
                v6.pointee.sin6_port = port.bigEndian
                v6.pointee.sin6_scope_id = scopeID
                withUnsafeMutableBytes(of: &v6.pointee.sin6_addr) { raw in
                    raw.storeBytes(of: high.bigEndian, toByteOffset: 0, as: UInt64.self)
                    raw.storeBytes(of: low.bigEndian, toByteOffset: 8, as: UInt64.self)
                }
            }
        }
        return storage
    }
}
