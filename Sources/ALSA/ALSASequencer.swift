#if canImport(Glibc)
import Glibc
#endif
import CALSA
import Dispatch
import MIDI
import Transport

/// A port of the ALSA sequencer: which client and port.
public struct SequencerAddress: Hashable, Sendable, CustomStringConvertible {
    public var client: Int32
    public var port: Int32
    public init(client: Int32, port: Int32) {
        self.client = client
        self.port = port
    }
    public var description: String { "\(client):\(port)" }
}

/// A sequencer port as `ports()` lists it.
public struct SequencerPort: Equatable, Sendable {
    public var address: SequencerAddress
    public var clientName: String
    public var portName: String
    /// Others can subscribe to read from it: a MIDI source (a keyboard's output).
    public var isSource: Bool
    /// Others can subscribe to write to it: a MIDI destination (a synth's input).
    public var isDestination: Bool
}

/// What the sequencer reports, on the engine's queue.
public enum SequencerInput {
    /// `message` arrived from `source` at our port `port`.
    case midi(MIDIMessage, from: SequencerAddress, port: Int32)
    /// A piece of a SysEx arrived (see SysExAssembler); the bytes are valid during the call.
    case sysExChunk(UnsafeRawBufferPointer, from: SequencerAddress, port: Int32)
    /// A port appeared (a device plugged in, an app started).
    case portAppeared(SequencerAddress)
    /// A port went away (unplugged, the app quit); its connections are gone with it.
    case portGone(SequencerAddress)
    /// A connection between two ports was made or undone (anyone's: ours, aconnect's).
    case connectionsChanged
    /// Incoming events were lost: the kernel's input buffer overflowed.
    case inputOverrun
}

/// One ALSA sequencer client: its ports, their connections, input (read by a thread of its
/// own blocked in poll(2), handed to the engine's queue) and output (direct for live events,
/// through an ALSA queue for events stamped ahead). Every method but `start`'s thread runs
/// on the engine's queue. The libasound calls that can fail go through `calls`, a seam the
/// tests use to fail them on purpose.
public final class ALSASequencer: @unchecked Sendable {
    /// Our client number.
    public let clientID: Int32
    private let handle: OpaquePointer
    private let calls: SequencerCalls
    private var queueID: Int32 = -1
    private var queueStart = MonotonicInstant(nanoseconds: 0)
    /// Reading, once started; its thread closes the sequencer as it ends.
    private var reader: PollingReader?
    private var isClosed = false
    private var event = snd_seq_event_t()

    /// Opens the sequencer as client `name` and follows the System Announce port.
    public init(clientName name: String, calls: SequencerCalls = .libasound) throws(ALSAError) {
        jambridge_alsa_silence()
        self.calls = calls
        var opened: OpaquePointer?
        let result = calls.open(&opened)
        guard result >= 0, let opened else { throw ALSAError(operation: "open the ALSA sequencer (/dev/snd/seq)", code: result) }
        handle = opened
        _ = snd_seq_set_client_name(handle, name)
        // The largest input pool the kernel allows: a burst (a SysEx dump from a fast
        // device) waits there for the reader instead of being dropped.
        _ = snd_seq_set_client_pool_input(handle, 2000)
        _ = snd_seq_set_input_buffer_size(handle, 65536)
        clientID = snd_seq_client_id(handle)
        let announce = snd_seq_create_simple_port(handle, "announcements",
                                                  UInt32(SND_SEQ_PORT_CAP_WRITE | SND_SEQ_PORT_CAP_NO_EXPORT),
                                                  UInt32(SND_SEQ_PORT_TYPE_APPLICATION))
        if announce >= 0 { _ = snd_seq_connect_from(handle, announce, SND_SEQ_CLIENT_SYSTEM, SND_SEQ_PORT_SYSTEM_ANNOUNCE) }
        queueID = snd_seq_alloc_named_queue(handle, "jambridge")
        if queueID >= 0 {
            if let (start, uncertainty) = Self.start(queueID, in: handle) {
                queueStart = start
                queueStartUncertainty = uncertainty
            } else {
                _ = snd_seq_free_queue(handle, queueID)
                queueID = -1
            }
        }
    }

    /// Starts the queue `queue` and returns where its time 0 lies on the monotonic clock, never later than it does
    /// (a start placed too late sends every stamped event that much early), and how long the write that started it
    /// took: every stamped event may be up to that late. The queue starts inside the write that drains the START,
    /// so our clock read just before that write bounds it. The START goes again, a millisecond apart and up to
    /// `startAttempts` times, while that write took over `startCertainty`: on a busy machine (two daemons starting
    /// at once in an emulated VM) a write may take milliseconds. A clock read after the start put every event 7 ms
    /// early once in CI's VM (a deschedule between the two), and the queue's own time read afterwards lags by however
    /// late its last timer interrupt ran (3 ms early once there). Nil if the queue cannot be started.
    private static func start(_ queue: Int32, in handle: OpaquePointer) -> (MonotonicInstant, uncertainty: UInt64)? {
        var start: (MonotonicInstant, uncertainty: UInt64)?
        for attempt in 0..<startAttempts {
            if attempt > 0 { usleep(1_000) }
            let before = MonotonicClock.now()
            guard snd_seq_control_queue(handle, queue, Int32(SND_SEQ_EVENT_START.rawValue), 0, nil) >= 0,
                  snd_seq_drain_output(handle) >= 0 else { return nil }
            let uncertainty = MonotonicClock.now().nanoseconds - before.nanoseconds
            start = (before, uncertainty)
            if uncertainty < startCertainty { break }
        }
        return start
    }

    /// The queue's start is tried again while its write takes longer than this (nanoseconds)...
    public static let startCertainty: UInt64 = 200_000
    /// ...at most this many times.
    static let startAttempts = 50

    deinit { close() }

    /// Creates a port others can read from and write to, named `name`; returns its number.
    public func createPort(name: String) throws(ALSAError) -> Int32 {
        let caps = SND_SEQ_PORT_CAP_READ | SND_SEQ_PORT_CAP_SUBS_READ | SND_SEQ_PORT_CAP_WRITE | SND_SEQ_PORT_CAP_SUBS_WRITE
        let port = calls.createPort(handle, name, UInt32(caps), UInt32(SND_SEQ_PORT_TYPE_MIDI_GENERIC | SND_SEQ_PORT_TYPE_APPLICATION))
        guard port >= 0 else { throw ALSAError(operation: "create the ALSA port '\(name)'", code: port) }
        return port
    }

    /// Removes our port `port` and its connections.
    public func deletePort(_ port: Int32) { _ = snd_seq_delete_simple_port(handle, port) }

    /// Every port of every client but ours, as the sequencer lists them now.
    public func ports() -> [SequencerPort] {
        var client: OpaquePointer?, port: OpaquePointer?
        guard snd_seq_client_info_malloc(&client) >= 0, snd_seq_port_info_malloc(&port) >= 0 else { return [] }
        defer {
            snd_seq_client_info_free(client)
            snd_seq_port_info_free(port)
        }
        var found: [SequencerPort] = []
        snd_seq_client_info_set_client(client, -1)
        while snd_seq_query_next_client(handle, client) >= 0 {
            let number = snd_seq_client_info_get_client(client)
            guard number != clientID, number != SND_SEQ_CLIENT_SYSTEM else { continue }
            let clientName = String(cString: snd_seq_client_info_get_name(client))
            snd_seq_port_info_set_client(port, number)
            snd_seq_port_info_set_port(port, -1)
            while snd_seq_query_next_port(handle, port) >= 0 {
                let caps = Int32(bitPattern: snd_seq_port_info_get_capability(port))
                guard caps & SND_SEQ_PORT_CAP_NO_EXPORT == 0 else { continue }
                found.append(SequencerPort(
                    address: SequencerAddress(client: number, port: snd_seq_port_info_get_port(port)),
                    clientName: clientName, portName: String(cString: snd_seq_port_info_get_name(port)),
                    isSource: caps & SND_SEQ_PORT_CAP_READ != 0 && caps & SND_SEQ_PORT_CAP_SUBS_READ != 0,
                    isDestination: caps & SND_SEQ_PORT_CAP_WRITE != 0 && caps & SND_SEQ_PORT_CAP_SUBS_WRITE != 0))
            }
        }
        return found
    }

    /// Subscribes our port `port` to what `source` sends.
    public func connect(from source: SequencerAddress, to port: Int32) throws(ALSAError) {
        let result = calls.connectFrom(handle, port, source.client, source.port)
        guard result >= 0 else { throw ALSAError(operation: "connect \(source) to our port \(port)", code: result) }
    }

    /// Subscribes `destination` to what our port `port` sends.
    public func connect(from port: Int32, to destination: SequencerAddress) throws(ALSAError) {
        let result = calls.connectTo(handle, port, destination.client, destination.port)
        guard result >= 0 else { throw ALSAError(operation: "connect our port \(port) to \(destination)", code: result) }
    }

    /// Sends `message` from our port `port` to its subscribers, or to `destination` alone: at once, or
    /// through the sequencer's queue if `time` lies ahead. A SysEx is refused: it goes by `send(sysExChunk:from:)`.
    public func send(_ message: MIDIMessage, from port: Int32, to destination: SequencerAddress? = nil,
                     at time: MonotonicInstant) throws(ALSAError) -> SendOutcome {
        reset(port: port, to: destination)
        guard SequencerEvent.encode(message, into: &event) else {
            throw ALSAError(operation: "send a SysEx whole (it goes in chunks, see PacedOutput)", code: -EINVAL)
        }
        return try output(at: time)
    }

    /// Sends `chunk`, a piece of a SysEx's bytes (F0 and F7 included where they fall), from our
    /// port `port` now; `PacedOutput` cuts a SysEx into them at the pace its destination takes.
    public func send(sysExChunk chunk: [UInt8], from port: Int32, to destination: SequencerAddress? = nil) throws(ALSAError) -> SendOutcome {
        reset(port: port, to: destination)
        event.type = SequencerEvent.Kind.sysEx
        var chunk = chunk
        let result = chunk.withUnsafeMutableBytes { bytes -> Result<SendOutcome, ALSAError> in
            jambridge_alsa_event_variable(&event, UInt32(bytes.count), bytes.baseAddress)
            return Result { () throws(ALSAError) in try output(at: MonotonicInstant(nanoseconds: 0)) }
        }
        return try result.get()
    }

    /// Clears `event` for sending from `port` to its subscribers, or to `destination` alone.
    private func reset(port: Int32, to destination: SequencerAddress?) {
        jambridge_alsa_event_reset(&event, UInt8(truncatingIfNeeded: port))
        if let destination {
            event.dest.client = UInt8(truncatingIfNeeded: destination.client)
            event.dest.port = UInt8(truncatingIfNeeded: destination.port)
        }
    }

    /// True if events stamped ahead are scheduled through the sequencer's queue (it could be made), and so leave at
    /// their time whatever holds the caller then.
    public var schedulesAhead: Bool { queueID >= 0 }
    /// How long the write that started the queue took, in nanoseconds: events scheduled through it may leave up to
    /// this late (see `start`).
    public private(set) var queueStartUncertainty: UInt64 = 0

    /// Takes back the clock and transport (ticks, Start, Stop, Continue, Song Position) scheduled through the queue
    /// for after `time` that have not left (the jam's song stopped, changed hands or was re-timed: what it hands out
    /// again must not meet what it handed before); false if the sequencer refused.
    @discardableResult
    public func removeScheduledClockAndTransport(after time: MonotonicInstant) -> Bool {
        guard queueID >= 0 else { return true }
        // The kernel takes back what is due at the time given or later: one nanosecond on, what is due after `time`.
        let at = time.nanoseconds >= queueStart.nanoseconds ? time.nanoseconds - queueStart.nanoseconds + 1 : 0
        let types = [SND_SEQ_EVENT_CLOCK, SND_SEQ_EVENT_START, SND_SEQ_EVENT_STOP, SND_SEQ_EVENT_CONTINUE, SND_SEQ_EVENT_SONGPOS]
        return types.allSatisfy { type in
            jambridge_alsa_remove_scheduled(handle, queueID, UInt8(type.rawValue), UInt32(at / 1_000_000_000),
                                            UInt32(at % 1_000_000_000)) >= 0
        }
    }

    /// The ports subscribed to what our port `port` sends (ours and anyone's connections, aconnect's too).
    public func subscribers(of port: Int32) -> [SequencerAddress] {
        var query: OpaquePointer?
        guard snd_seq_query_subscribe_malloc(&query) >= 0, let query else { return [] }
        defer { snd_seq_query_subscribe_free(query) }
        var root = snd_seq_addr_t(client: UInt8(truncatingIfNeeded: clientID), port: UInt8(truncatingIfNeeded: port))
        snd_seq_query_subscribe_set_root(query, &root)
        snd_seq_query_subscribe_set_type(query, SND_SEQ_QUERY_SUBS_READ)
        var found: [SequencerAddress] = []
        snd_seq_query_subscribe_set_index(query, 0)
        while snd_seq_query_port_subscribers(handle, query) >= 0 {
            if let address = snd_seq_query_subscribe_get_addr(query) { found.append(self.address(address.pointee)) }
            snd_seq_query_subscribe_set_index(query, snd_seq_query_subscribe_get_index(query) + 1)
        }
        return found
    }

    /// Writes `event`, scheduled if `time` is more than a millisecond ahead. Never waits for room: this runs on
    /// the engine's queue, where a wait holds every other event (the jam's clock ticks among them, issue 30).
    /// -EAGAIN is `.full`, for the caller to keep the event and send it again later (`OutputBacklog`).
    private func output(at time: MonotonicInstant) throws(ALSAError) -> SendOutcome {
        let now = MonotonicClock.now()
        if queueID >= 0, time.nanoseconds > now.nanoseconds + 1_000_000 {
            let at = time.nanoseconds - queueStart.nanoseconds
            jambridge_alsa_event_schedule(&event, queueID, UInt32(at / 1_000_000_000), UInt32(at % 1_000_000_000))
        } else {
            jambridge_alsa_event_direct(&event)
        }
        let result = calls.outputDirect(handle, &event)
        if result >= 0 { return .sent }
        guard result == -EAGAIN else { throw ALSAError(operation: "send to the ALSA sequencer", code: result) }
        return .full
    }

    /// Starts reading: `handler` gets every input on `queue` (the engine's), from a `PollingReader`; the inputs
    /// waiting at one wake-up are handled inside one call of `batch` (the engine's `routeBatch`, so that their
    /// output leaves together, on this thread, without waking another to send it).
    public func start(queue: DispatchQueue, inBatches batch: @escaping (() -> Void) -> Void = { $0() },
                      _ handler: @escaping (SequencerInput) -> Void) throws(TransportError) {
        guard reader == nil, !isClosed else { return }
        var fds = [pollfd](repeating: pollfd(), count: Int(snd_seq_poll_descriptors_count(handle, Int16(POLLIN))))
        let count = Int(snd_seq_poll_descriptors(handle, &fds, UInt32(fds.count), Int16(POLLIN)))
        nonisolated(unsafe) let handle = handle
        reader = try PollingReader(watching: Array(fds.prefix(count)), queue: queue,
                                   ready: { [self] _ in batch { drainInput(handler) } },
                                   finished: { _ = snd_seq_close(handle) })
    }

    /// Handles the events one read brings from the kernel: every event waiting at the wake-up (up to the input
    /// buffer's 64 KB). One read only: a second one, to learn that nothing more came (-EAGAIN), was a system call
    /// between the last event and the batch's output (a note's packet to the session), 30-50 µs in the test VM; what
    /// comes meanwhile, or did not fit the buffer, makes the reader's poll(2) return again at once.
    private func drainInput(_ handler: (SequencerInput) -> Void) {
        var fetched = false
        while !isClosed {
            // After the first read, only what it left in libasound's buffer: no system call.
            if fetched, snd_seq_event_input_pending(handle, 0) <= 0 { return }
            fetched = true
            var pointer: UnsafeMutablePointer<snd_seq_event_t>?
            let result = snd_seq_event_input(handle, &pointer)
            if result == -ENOSPC { // the kernel dropped events and cleared the FIFO
                handler(.inputOverrun)
                return
            }
            guard result >= 0, let pointer else { return } // -EAGAIN: drained
            let source = SequencerAddress(client: Int32(pointer.pointee.source.client), port: Int32(pointer.pointee.source.port))
            switch pointer.pointee.type {
            case SequencerEvent.Kind.portStart:
                handler(.portAppeared(address(pointer.pointee.data.addr)))
            case SequencerEvent.Kind.portExit:
                handler(.portGone(address(pointer.pointee.data.addr)))
            case SequencerEvent.Kind.portSubscribed, SequencerEvent.Kind.portUnsubscribed:
                handler(.connectionsChanged)
            default:
                let port = Int32(pointer.pointee.dest.port)
                SequencerEvent.decode(pointer, sysEx: { chunk in
                    handler(.sysExChunk(chunk, from: source, port: port))
                }) { message in handler(.midi(message, from: source, port: port)) }
            }
        }
    }

    private func address(_ addr: snd_seq_addr_t) -> SequencerAddress {
        SequencerAddress(client: Int32(addr.client), port: Int32(addr.port))
    }

    /// Stops reading and closes the sequencer (our ports and their connections go with it).
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        if let reader {
            reader.stop()
        } else {
            _ = snd_seq_close(handle)
        }
    }
}

/// Why an ALSA call failed, for the log.
public struct ALSAError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What was being done.
    public var operation: String
    /// The negative errno libasound returned.
    public var code: Int32

    public init(operation: String, code: Int32) {
        self.operation = operation
        self.code = code
    }

    public var description: String { "cannot \(operation): \(String(cString: snd_strerror(code)))" }
}

/// What a send did with an event.
public enum SendOutcome: Equatable, Sendable {
    /// The sequencer took it.
    case sent
    /// The sequencer had no room for it (-EAGAIN) and took nothing: to be sent again later. A direct event finds
    /// the destination's input pool full (a client not reading), one stamped ahead our own output pool (the queue
    /// holds too many). Sent to every subscriber, it still reached those that had room: the kernel delivers to
    /// each and reports the first refusal, not whose.
    case full
}

/// The libasound calls that can fail, as values: `.libasound` makes them; tests make
/// failing ones (the way swift-system's MockingDriver fails syscalls) to exercise every
/// failure path without a broken device.
public struct SequencerCalls: Sendable {
    public var open: @Sendable (_ handle: inout OpaquePointer?) -> Int32
    public var createPort: @Sendable (_ handle: OpaquePointer, _ name: String, _ caps: UInt32, _ type: UInt32) -> Int32
    public var connectFrom: @Sendable (_ handle: OpaquePointer, _ port: Int32, _ client: Int32, _ sourcePort: Int32) -> Int32
    public var connectTo: @Sendable (_ handle: OpaquePointer, _ port: Int32, _ client: Int32, _ destinationPort: Int32) -> Int32
    public var outputDirect: @Sendable (_ handle: OpaquePointer, _ event: UnsafeMutablePointer<snd_seq_event_t>) -> Int32

    public init(open: @escaping @Sendable (inout OpaquePointer?) -> Int32,
                createPort: @escaping @Sendable (OpaquePointer, String, UInt32, UInt32) -> Int32,
                connectFrom: @escaping @Sendable (OpaquePointer, Int32, Int32, Int32) -> Int32,
                connectTo: @escaping @Sendable (OpaquePointer, Int32, Int32, Int32) -> Int32,
                outputDirect: @escaping @Sendable (OpaquePointer, UnsafeMutablePointer<snd_seq_event_t>) -> Int32) {
        self.open = open
        self.createPort = createPort
        self.connectFrom = connectFrom
        self.connectTo = connectTo
        self.outputDirect = outputDirect
    }

    /// The real calls.
    public static let libasound = SequencerCalls(
        open: { handle in snd_seq_open(&handle, "default", Int32(SND_SEQ_OPEN_DUPLEX), Int32(SND_SEQ_NONBLOCK)) },
        createPort: { handle, name, caps, type in snd_seq_create_simple_port(handle, name, caps, type) },
        connectFrom: { handle, port, client, sourcePort in snd_seq_connect_from(handle, port, client, sourcePort) },
        connectTo: { handle, port, client, destinationPort in snd_seq_connect_to(handle, port, client, destinationPort) },
        outputDirect: { handle, event in snd_seq_event_output_direct(handle, event) })
}
