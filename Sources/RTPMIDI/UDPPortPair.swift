#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Dispatch
import MIDI
import Transport

/// The two UDP sockets of a session: control on port N, data on N+1, both on one address
/// (all interfaces, IPv4 and IPv6, unless bound to one), and the session's timer. Datagrams are
/// read into one reused buffer by a `PollingReader`, which hands each batch to the caller's queue;
/// the same thread wakes when the timer expires. The timer is a timerfd on CLOCK_MONOTONIC: arming
/// it is one system call on the caller's thread, which wakes no other thread (a Dispatch timer
/// source woke Dispatch's manager thread at every re-arm, and at every expiry a worker too).
public final class UDPPortPair: @unchecked Sendable {
    /// The control port (the data port is one above).
    public let controlPort: UInt16
    private let control: UDPSocket
    private let data: UDPSocket
    /// The timerfd.
    private let timer: Int32
    private var reader: PollingReader?
    private var isClosed = false
    /// Where datagrams are read to: the largest UDP payload.
    private let buffer: UnsafeMutableRawBufferPointer

    /// Binds control port `port` and data port `port + 1` on `address` (nil: every interface,
    /// IPv4 and IPv6). Port 0 picks a free consecutive pair.
    public init(address: NetworkAddress?, port: UInt16) throws(TransportError) {
        let timer = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
        guard timer >= 0 else { throw TransportError(operation: "create the session's timer (timerfd)", code: errno) }
        do {
            (control, data) = try Self.bindPair(address, port)
        } catch {
            Glibc.close(timer)
            throw error
        }
        self.timer = timer
        controlPort = control.port
        buffer = .allocate(byteCount: 65536, alignment: 8)
    }

    /// The control and data sockets on `port` and the port above it (port 0: a free consecutive pair).
    private static func bindPair(_ address: NetworkAddress?, _ port: UInt16) throws(TransportError) -> (UDPSocket, UDPSocket) {
        var attempt = 0
        while true {
            attempt += 1
            let control = try bind(address, port)
            do {
                return (control, try bind(address, control.port &+ 1))
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
    /// on `queue`. The bytes are valid only during the call. `timerExpired` is called on `queue`
    /// when the time `armTimer` set comes. If no reader thread can be started (the process is
    /// out of file descriptors or threads), nothing is read and the timer never expires.
    public func start(queue: DispatchQueue, timerExpired: @escaping () -> Void = {},
                      _ handler: @escaping (UnsafeRawBufferPointer, SessionPort, NetworkAddress) -> Void) {
        guard reader == nil, !isClosed else { return }
        let (control, data, timer) = (control, data, timer)
        reader = try? PollingReader(
            watching: [control.descriptor, data.descriptor, timer].map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) },
            queue: queue,
            ready: { [self] ready in
                switch ready.fd {
                case timer: expired(timerExpired)
                case control.descriptor: drain(control, .control, handler)
                default: drain(data, .data, handler)
                }
            },
            finished: {
                control.close()
                data.close()
                Glibc.close(timer)
            })
    }

    /// Sets the timer to expire at `deadline` (at once if it has passed), or stops it (nil); on the reading queue.
    public func armTimer(at deadline: MonotonicInstant?) {
        guard !isClosed else { return }
        var setting = itimerspec() // all zero: stopped
        if let deadline {
            let at = max(deadline.nanoseconds, 1)
            setting.it_value = timespec(tv_sec: Int(at / 1_000_000_000), tv_nsec: Int(at % 1_000_000_000))
        }
        _ = timerfd_settime(timer, Int32(TFD_TIMER_ABSTIME), &setting, nil)
    }

    /// The timer expired: clears it and calls `timerExpired`, unless it was set again since (nothing to read then)
    /// or we closed.
    private func expired(_ timerExpired: () -> Void) {
        var expirations: UInt64 = 0
        guard !isClosed, Glibc.read(timer, &expirations, MemoryLayout<UInt64>.size) == MemoryLayout<UInt64>.size else { return }
        timerExpired()
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

    /// Stops reading and closes both sockets and the timer (once). Called on the reading queue it does
    /// not wait for the reader thread (which may be waiting for the queue): the thread closes them as it ends.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        if let reader {
            reader.stop()
        } else {
            control.close()
            data.close()
            Glibc.close(timer)
        }
    }

    /// Waits, off the reading queue, until a `close` made on it has closed the sockets (the reader thread closes
    /// them as it ends), so that the ports are free to be bound again.
    public func waitUntilClosed() {
        reader?.waitUntilEnded()
    }
}
