import Dispatch
import Jam
import Logging
import MIDI

/// Where events enter the engine: the engine hands this to sources when it starts them.
public protocol EventSink: AnyObject, Sendable {
    /// The serial queue routing runs on: adapters that read their sockets on it route
    /// with `routeOnQueue`, without a hop.
    var queue: DispatchQueue { get }
    /// Routes `event` now; call only on `queue`.
    func routeOnQueue(_ event: MIDIEvent)
    /// Releases every note and pedal `source` holds (it looped, ended or went away).
    func releaseHeld(by source: EndpointID)
    /// Runs `body` as one batch (call only on `queue`): a sink that gathers output (the RTP-MIDI session) sends
    /// what the batch routed once, when it ends, instead of waking another thread to send it.
    func routeBatch(_ body: () -> Void)
    /// Adds `work` to the end of the running batch and returns true; false if no batch is running.
    func atEndOfBatch(_ work: @escaping () -> Void) -> Bool
    /// The player `origin` behind a shared endpoint (a session peer) is there, called `name` (self-declared), or
    /// went away (nil): sinks that keep something per player (the jam) are told it left. Call only on `queue`.
    func player(_ origin: EventOrigin, named name: String?)
    /// Where a source posts what is due later (`TimedOutput`); use only on `queue`.
    var timed: TimedOutput { get }
}

/// An endpoint that produces events (a file player, an OSC endpoint; ALSA ports and session peers come in through their clients).
public protocol SourceEndpoint: AnyObject, Sendable {
    /// Starts producing events into `sink`, tagged with `id`.
    func start(id: EndpointID, sink: EventSink)
    /// Stops producing events; returns once no more will be submitted.
    func stop()
}

/// An endpoint that consumes messages (a recorder, ALSA ports, network peers, OSC controllers).
/// Called only on the engine's queue.
public protocol SinkEndpoint: AnyObject, Sendable {
    /// Takes `message`, delivered at `time`, for `recipients`: a sink that several players share (the session's
    /// peers, the ports an `alsa:` endpoint connects) leaves out or picks the player named; a sink that is one
    /// player takes what `recipients.include(.none)`.
    func receive(_ message: MIDIMessage, at time: MonotonicInstant, to recipients: Recipients)
    /// Takes `message`, routed from `event` (its source, its player, when its sender meant it), for `recipients`.
    /// By default, `receive(_:at:to:)` at the event's time: what the sink needs of most.
    func receive(_ message: MIDIMessage, routedFrom event: MIDIEvent, to recipients: Recipients)
    /// The player `origin`, called `name`, came (`EventSink.player(_:named:)`: a session peer joined); nothing to do by
    /// default.
    func playerJoined(_ origin: EventOrigin, named name: String)
    /// The player `origin`, called `name`, went away (`EventSink.player(_:named:)`); nothing to do by default.
    func playerLeft(_ origin: EventOrigin, named name: String)
    /// Finishes: the engine has released every held note to it and will deliver nothing more.
    func stop()
}

extension SinkEndpoint {
    public func receive(_ message: MIDIMessage, routedFrom event: MIDIEvent, to recipients: Recipients) {
        receive(message, at: event.time, to: recipients)
    }

    public func playerJoined(_ origin: EventOrigin, named name: String) {}

    public func playerLeft(_ origin: EventOrigin, named name: String) {}
}
