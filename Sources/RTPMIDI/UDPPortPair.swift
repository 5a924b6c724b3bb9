#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Transport

/// The two UDP sockets of a session: control on port N, data on N+1, both on one address
/// (all interfaces, IPv4 and IPv6, unless bound to one). Datagrams are read into one reused
/// buffer by a `PollingReader`, which hands each batch to the caller's queue.
public final class UDPPortPair: @unchecked Sendable {
    /// The control port (the data port is one above).
    public let controlPort: UInt16
    private let control: UDPSocket
    private let data: UDPSocket
    private var reader: PollingReader?
    private var isClosed = false
    /// Where datagrams are read to: the largest UDP payload.
    private let buffer: UnsafeMutableRawBufferPointer

    /// Binds control port `port` and data port `port + 1` on `address` (nil: every interface,
    /// IPv4 and IPv6). Port 0 picks a free consecutive pair.
    public init(address: NetworkAddress?, port: UInt16) throws(TransportError) {
        var attempt = 0
        while true {
            attempt += 1
            let control = try Self.bind(address, port)
            do {
                data = try Self.bind(address, control.port &+ 1)
                self.control = control
                controlPort = control.port
                buffer = .allocate(byteCount: 65536, alignment: 8)
                return
            } catch {
                control.close()
                // With a chosen port, N+1 being taken is the answer; with port 0, try another pair.
                guard port == 0, attempt < 50 else { throw error }
            }
        }
    }

    /// One socket, with what to do about the usual reasons it cannot be bound.
    private static func bind(_ address: NetworkAddress?, _ port: UInt16) throws(TransportError) -> UDPSocket {
        do {
            return try UDPSocket(address: address, port: port)
        } catch var error {
            switch error.code {
            case EADDRINUSE: error.hint = "another program, or another jambridge, uses it; choose another 'port:'"
            case EADDRNOTAVAIL: error.hint = "no interface has that 'bind:' address"
            default: break
            }
            throw error
        }
    }

    deinit {
        close()
        buffer.deallocate()
    }

    /// Starts reading: `handler` gets each datagram, the port it came in on and its sender,
    /// on `queue`. The bytes are valid only during the call. If no reader thread can be
    /// started (the process is out of file descriptors or threads), nothing is read.
    public func start(queue: DispatchQueue,
                      _ handler: @escaping (UnsafeRawBufferPointer, SessionPort, NetworkAddress) -> Void) {
        guard reader == nil, !isClosed else { return }
        let (control, data) = (control, data)
        reader = try? PollingReader(
            watching: [control, data].map { pollfd(fd: $0.descriptor, events: Int16(POLLIN), revents: 0) },
            queue: queue,
            ready: { [self] ready in
                drain(ready.fd == control.descriptor ? control : data, ready.fd == control.descriptor ? .control : .data, handler)
            },
            finished: {
                control.close()
                data.close()
            })
    }

    /// Reads every datagram waiting on `socket`.
    private func drain(_ socket: UDPSocket, _ port: SessionPort,
                       _ handler: (UnsafeRawBufferPointer, SessionPort, NetworkAddress) -> Void) {
        // A batch that waited for the queue while it closed us is dropped.
        while !isClosed, let datagram = socket.receive(into: buffer) {
            handler(UnsafeRawBufferPointer(rebasing: buffer[..<datagram.count]), port, datagram.sender)
        }
    }

    /// Sends `bytes` from our `port` to `address`; returns errno if the kernel refused.
    @discardableResult
    public func send(_ bytes: UnsafeRawBufferPointer, from port: SessionPort, to address: NetworkAddress) -> Int32? {
        (port == .control ? control : data).send(bytes, to: address)
    }

    /// Stops reading and closes both sockets (once). Called on the reading queue it does not wait
    /// for the reader thread (which may be waiting for the queue): the thread closes them as it ends.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        if let reader {
            reader.stop()
        } else {
            control.close()
            data.close()
        }
    }

    /// Waits, off the reading queue, until a `close` made on it has closed the sockets (the reader thread closes
    /// them as it ends), so that the ports are free to be bound again.
    public func waitUntilClosed() {
        reader?.waitUntilEnded()
    }
}
