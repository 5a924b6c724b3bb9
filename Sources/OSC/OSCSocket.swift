#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Transport

/// An OSC endpoint's UDP socket: receives controllers' datagrams on a queue and sends to them.
/// Apart from `init`, use it on the queue given to `start`.
public final class OSCSocket: @unchecked Sendable {
    /// What arrived in one datagram.
    public enum Datagram {
        /// The datagram's bytes, valid only during the handler call.
        case bytes(UnsafeRawBufferPointer)
        /// A datagram longer than the largest accepted (`byteCount`), dropped unread.
        case oversized(byteCount: Int)
    }

    /// Why a message could not be sent.
    public enum SendError: Error, Equatable, Sendable, CustomStringConvertible {
        /// The message cannot be encoded.
        case encoding(OSCEncodeError)
        /// The kernel refused the datagram.
        case transport(TransportError)

        /// The encoding or transport error's own text.
        public var description: String {
            switch self {
            case .encoding(let error): error.description
            case .transport(let error): error.description
            }
        }
    }

    /// The address and port listened on (the kernel's port if 0 was asked for).
    public let address: NetworkAddress
    private let socket: UDPSocket
    private var reader: PollingReader?
    private var isClosed = false
    /// Where datagrams are read to: the largest accepted.
    private let buffer: UnsafeMutableRawBufferPointer
    /// Where messages are encoded to, reused.
    private var encoded: [UInt8] = []

    /// Listens on `address` (`0.0.0.0`: every IPv4 interface; `::`: every interface, IPv4 and
    /// IPv6; port 0 picks one). Datagrams longer than `maxDatagram` bytes are reported as oversized.
    public init(listeningOn address: NetworkAddress, maxDatagram: Int = 65535) throws(TransportError) {
        do {
            socket = try UDPSocket(address: address, port: address.port)
        } catch var error {
            error.operation = "listen for OSC on \(address)"
            if error.code == EADDRINUSE { error.hint = "another program, or another jambridge, uses it; choose another 'listen:' port" }
            throw error
        }
        self.address = address.with(port: socket.port)
        buffer = .allocate(byteCount: maxDatagram, alignment: 8)
    }

    deinit {
        close()
        buffer.deallocate()
    }

    /// Starts reading (once; later calls, or calls after `close`, do nothing): `handler` gets
    /// each datagram and its sender on `queue`; the datagrams waiting at one wake-up are handled
    /// inside one call of `batch` (the engine's `routeBatch`, so their output leaves together).
    public func start(queue: DispatchQueue, inBatches batch: @escaping (() -> Void) -> Void = { $0() },
                      _ handler: @escaping (Datagram, NetworkAddress) -> Void) throws(TransportError) {
        guard reader == nil, !isClosed else { return }
        let socket = socket
        reader = try PollingReader(
            watching: [pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)], queue: queue,
            ready: { [self] _ in
                // A batch that waited for the queue while it closed us is dropped.
                batch {
                    while !isClosed, let datagram = socket.receive(into: buffer) {
                        let bytes = UnsafeRawBufferPointer(rebasing: buffer[..<datagram.count])
                        handler(datagram.isTruncated ? .oversized(byteCount: datagram.length) : .bytes(bytes), datagram.sender)
                    }
                }
            },
            finished: { socket.close() })
    }

    /// Sends an encoded packet to `target`.
    public func send(_ bytes: UnsafeRawBufferPointer, to target: NetworkAddress) throws(TransportError) {
        if let code = socket.send(bytes, to: target) {
            throw TransportError(operation: "send OSC to \(target)", code: code)
        }
    }

    /// Encodes `message` and sends it to `target`.
    public func send(_ message: OSCMessage, to target: NetworkAddress) throws(SendError) {
        do {
            try OSCPacket.encode(message, into: &encoded)
        } catch {
            throw .encoding(error)
        }
        do {
            try encoded.withUnsafeBytes { bytes in Result { () throws(TransportError) in try send(bytes, to: target) } }.get()
        } catch {
            throw .transport(error)
        }
    }

    /// Stops reading and closes the socket (once). Called on the reading queue it does not wait
    /// for the reader thread (which may be waiting for the queue): the thread closes it as it ends.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        if let reader { reader.stop() } else { socket.close() }
    }

    /// Waits, off the reading queue, until a `close` made on it has closed the socket (the reader thread closes
    /// it as it ends), so that the port is free to be bound again.
    public func waitUntilClosed() {
        reader?.waitUntilEnded()
    }

    /// Waits as `waitUntilClosed` does, at most `timeout`: false if the socket is still open then.
    public func waitUntilClosed(within timeout: Duration) -> Bool {
        reader?.waitUntilEnded(within: timeout) ?? true
    }
}
