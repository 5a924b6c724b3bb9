#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// One nonblocking UDP socket bound to a local address and port, IPv4 or IPv6.
public final class UDPSocket: Sendable {
    /// The socket's file descriptor, to watch with `PollingReader`; invalid after `close`.
    public let descriptor: Int32
    /// The local port (the kernel's choice if 0 was asked for).
    public let port: UInt16
    /// AF_INET, or AF_INET6 (dual stack: IPv4 peers arrive as ::ffff:a.b.c.d).
    private let family: Int32
    private let isClosed = Atomic<Bool>(false)

    /// One datagram read by `receive(into:)`.
    public struct Datagram: Sendable {
        /// The bytes read into the buffer (at most its size).
        public var count: Int
        /// The datagram's whole length: more than `count` if it did not fit the buffer.
        public var length: Int
        /// Who sent it.
        public var sender: NetworkAddress
        /// True if the datagram was longer than the buffer: only its first `count` bytes were read.
        public var isTruncated: Bool { length > count }
    }

    /// Binds a UDP socket on `address` at `port`: nil listens on every interface, IPv4 and IPv6;
    /// an IPv4 address (0.0.0.0 for every interface) makes an IPv4-only socket. Port 0 lets the kernel choose.
    public init(address: NetworkAddress?, port: UInt16) throws(TransportError) {
        family = address?.family == .ipv4 ? AF_INET : AF_INET6
        let fd = socket(family, Int32(SOCK_DGRAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TransportError(operation: "open a UDP socket", code: errno) }
        var off: Int32 = 0
        if family == AF_INET6 {
            setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &off, socklen_t(MemoryLayout<Int32>.size))
        }
        var size: Int32 = 1 << 20 // bursts of 100k messages/s must not overflow the queue
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        let local = (address ?? NetworkAddress(ipv6: 0, 0, port: port)).with(port: port)
        var (storage, length) = local.socketAddress(family: family)
        let result = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) }
        }
        guard result == 0 else {
            let code = errno
            Glibc.close(fd)
            throw TransportError(operation: "bind UDP " + (address == nil ? "port \(port)" : local.description), code: code)
        }
        var bound = sockaddr_storage()
        var boundLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &boundLength) }
        }
        descriptor = fd
        self.port = NetworkAddress(socketAddress: bound)?.port ?? port
    }

    deinit { close() }

    /// Sends `bytes` to `address` without waiting; returns errno if the kernel refused (EAGAIN:
    /// the send queue is full; EAFNOSUPPORT: an IPv6 address from an IPv4 socket).
    @discardableResult
    public func send(_ bytes: UnsafeRawBufferPointer, to address: NetworkAddress) -> Int32? {
        guard family == AF_INET6 || address.family == .ipv4 else { return EAFNOSUPPORT }
        var (storage, length) = address.socketAddress(family: family)
        let sent = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT), $0, length)
            }
        }
        return sent < 0 ? errno : nil
    }

    /// Reads the next waiting datagram into `buffer`; nil when none is waiting (or reading failed).
    public func receive(into buffer: UnsafeMutableRawBufferPointer) -> Datagram? {
        var storage = sockaddr_storage()
        while true {
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            // MSG_TRUNC: the datagram's real length, even when longer than the buffer.
            let count = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    recvfrom(descriptor, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT | MSG_TRUNC), $0, &length)
                }
            }
            guard count >= 0 else { return nil } // EAGAIN: none waiting
            guard let sender = NetworkAddress(socketAddress: storage) else { continue } // not IP: cannot happen here
            return Datagram(count: min(count, buffer.count), length: count, sender: sender)
        }
    }

    /// Closes the socket (once; later calls do nothing).
    public func close() {
        guard !isClosed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Glibc.close(descriptor)
    }
}
