import Dispatch
import Jam
import Logging
import MIDI
import Routing

/// The one place routing happens: owns the router and the sinks on a single serial queue;
/// sources route events on it from their own threads (`sync`), and post what is due later to its timed output.
public final class Engine: EventSink, @unchecked Sendable {
    public let queue = DispatchQueue(label: "jambridge.engine", qos: .userInteractive)
    /// "This message at that time", for every part (`TimedOutput`); on the queue.
    public private(set) lazy var timed = TimedOutput(engine: self)
    // Everything below is touched only on `queue`.
    private let router: Router
    private var sinks: [SinkEndpoint?]
    /// Per endpoint ID: the name of the endpoint it is given to; nil if free.
    private var names: [String?]
    private let monitor: EventMonitor?
    /// Per endpoint ID: messages that came from it, and messages handed to it (`jambridge status`).
    private var cameFrom: [Int], handedTo: [Int]
    /// The names players behind shared endpoints gave (session peers), by origin.
    private var playerNames: [EventOrigin: String] = [:]
    /// What the IDs given back or given to another endpoint had counted, by the name they had, while an ID has it.
    private var carried: [String: (in: Int, out: Int)] = [:]
    private var inBatch = false
    private var endOfBatch: [() -> Void] = []

    /// An engine routing by `graph` to `sinks` (indexed by EndpointID), naming endpoints by `names` (nil: a free ID).
    public init(graph: RouteGraph, sinks: [SinkEndpoint?], names: [String?], monitor: EventMonitor?) {
        router = Router(graph: graph)
        self.sinks = sinks
        self.names = names
        self.monitor = monitor
        cameFrom = Array(repeating: 0, count: names.count)
        handedTo = cameFrom
    }

    public func routeOnQueue(_ event: MIDIEvent) {
        dispatchPrecondition(condition: .onQueue(queue))
        route(event, only: nil, ticket: nil)
    }

    /// Routes `event` (to `only` among each sink's players, if given). Posted under `ticket` and ahead of its time
    /// (`TimedOutput`): a sink that sends at a message's time and takes it ahead gets it now, the others when it is
    /// due.
    func route(_ event: MIDIEvent, only: Recipients?, ticket: TimedTicket?) {
        count(event.source, in: &cameFrom)
        let ahead = ticket.map { $0.ahead != .nothing } == true
            && event.time.nanoseconds > MonotonicClock.now().nanoseconds + JamConductor.earlyTolerance
        router.dispatch(event) { sink, message, recipients in
            let index = Int(sink.index)
            guard index < sinks.count, let endpoint = sinks[index] else { return }
            let recipients = only ?? recipients
            guard ahead, let ticket else { return hand(message, routedFrom: event, to: sink, for: recipients) }
            guard let timedSink = endpoint as? TimedSink, timedSink.sendsAtItsTime, timedSink.takesAhead(message) else {
                return timed.keep(message, routedFrom: event, to: sink, for: recipients, ticket: ticket)
            }
            timed.handedAhead(ticket, to: sink)
            hand(message, routedFrom: event, to: sink, for: recipients, aheadUnder: ticket)
        }
    }

    /// Hands `message`, routed from `event`, to the sink `id` for `recipients` (ahead of its time under `ticket`, if
    /// given), counted and shown on the monitor.
    func hand(_ message: MIDIMessage, routedFrom event: MIDIEvent, to id: EndpointID, for recipients: Recipients,
              aheadUnder ticket: TimedTicket? = nil) {
        let index = Int(id.index)
        guard index < sinks.count, let endpoint = sinks[index] else { return }
        count(id, in: &handedTo)
        monitor?.show(message, from: name(event.source), to: name(id), only: recipients.isOnly ? recipients.origin : nil,
                      at: event.time)
        if let ticket, let timedSink = endpoint as? TimedSink {
            timedSink.receiveAhead(message, routedFrom: event, to: recipients, ticket: ticket)
        } else {
            endpoint.receive(message, routedFrom: event, to: recipients)
        }
    }

    /// Runs `body` as one batch; inside a batch, as part of it.
    public func routeBatch(_ body: () -> Void) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !inBatch else { return body() }
        inBatch = true
        body()
        inBatch = false
        while let work = endOfBatch.popLast() { work() }
    }

    public func atEndOfBatch(_ work: @escaping () -> Void) -> Bool {
        guard inBatch else { return false }
        endOfBatch.append(work)
        return true
    }

    public func player(_ origin: EventOrigin, named name: String?) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let name else {
            guard let left = playerNames.removeValue(forKey: origin) else { return }
            for sink in sinks { sink?.playerLeft(origin, named: left) }
            return
        }
        guard playerNames.updateValue(name, forKey: origin) == nil else { return }
        for sink in sinks { sink?.playerJoined(origin, named: name) }
    }

    public func releaseHeld(by source: EndpointID) {
        queue.async { [self] in release(source: source, at: MonotonicClock.now()) }
    }

    /// Releases every note and pedal `source` holds, stamped `time`; on the queue.
    func release(source: EndpointID, at time: MonotonicInstant) {
        router.release(source: source) { sink, message, recipients in
            release(message, to: sink, for: recipients, at: time)
        }
    }

    /// Puts a new graph in force with a new set of sinks and names (reload); held notes survive.
    /// Sinks in `stopping` (no longer declared) are stopped once their notes are released. An ID whose name
    /// changes leaves what it counted to the name it had.
    public func replace(graph: RouteGraph, sinks newSinks: [SinkEndpoint?], names newNames: [String?],
                        stopping: [SinkEndpoint]) {
        queue.sync {
            let now = MonotonicClock.now()
            // Releases for sinks leaving the graph go to the sinks as they were.
            router.replace(graph: graph) { sink, message, recipients in
                release(message, to: sink, for: recipients, at: now)
            }
            for sink in stopping { sink.stop() }
            let changed = sinks.indices.filter { $0 >= newSinks.count || newSinks[$0] !== sinks[$0] }
            timed.forget(sinks: Set(changed.map { EndpointID(UInt16($0)) }))
            sinks = newSinks
            for index in names.indices where index >= newNames.count || newNames[index] != names[index] {
                if let name = names[index] {
                    carried[name, default: (0, 0)].in += cameFrom[index]
                    carried[name, default: (0, 0)].out += handedTo[index]
                }
                (cameFrom[index], handedTo[index]) = (0, 0)
            }
            let named = Set(newNames.compactMap { $0 })
            carried = carried.filter { named.contains($0.key) }
            names = newNames
            let size = { (counts: [Int]) in Array(counts.prefix(newNames.count)) + Array(repeating: 0, count: max(0, newNames.count - counts.count)) }
            cameFrom = size(cameFrom)
            handedTo = size(handedTo)
        }
    }

    /// The IDs among `ids` the router holds anything under: a note or pedal as source or sink.
    func holding(_ ids: [EndpointID]) -> Set<EndpointID> {
        queue.sync { Set(ids.filter(router.holds)) }
    }

    /// Releases every held note to the sinks, then stops them (recorders write their files).
    public func stop() -> RouterCounters {
        queue.sync {
            timed.stop()
            let now = MonotonicClock.now()
            router.releaseAll { sink, message, recipients in release(message, to: sink, for: recipients, at: now) }
            for sink in sinks { sink?.stop() }
            return router.counters
        }
    }

    /// Messages that came from and were handed to each endpoint, by name (the IDs of one name summed: an OSC
    /// endpoint's routes, an endpoint started again), and what the router counted.
    func traffic() -> (endpoints: [String: (in: Int, out: Int)], router: RouterCounters) {
        queue.sync {
            var endpoints = carried
            for (index, name) in names.enumerated() {
                guard let name else { continue }
                endpoints[name, default: (0, 0)].in += cameFrom[index]
                endpoints[name, default: (0, 0)].out += handedTo[index]
            }
            return (endpoints, router.counters)
        }
    }

    /// Has the sinks `ids` take back what they were handed ahead under `ticket` for after `time` (`TimedOutput`).
    func takeBack(after time: MonotonicInstant, ticket: TimedTicket, from ids: Set<EndpointID>) {
        for id in ids where Int(id.index) < sinks.count { (sinks[Int(id.index)] as? TimedSink)?.takeBack(after: time, ticket: ticket) }
    }

    /// The name of the endpoint `id` (the jam's players are named by it); on the queue.
    func name(_ id: EndpointID) -> String {
        Int(id.index) < names.count ? names[Int(id.index)] ?? id.description : id.description
    }

    /// Hands a release to the sink `id` for `recipients` (a source or sink went, or everything stops), shown on the
    /// monitor as from `release`: jambridge's own, whichever source's note it ends (jambridge(1), `--monitor`).
    private func release(_ message: MIDIMessage, to id: EndpointID, for recipients: Recipients, at time: MonotonicInstant) {
        hand(message, from: "release", to: id, for: recipients, at: time)
    }

    private func hand(_ message: MIDIMessage, from source: String, to id: EndpointID, for recipients: Recipients,
                      at time: MonotonicInstant) {
        let index = Int(id.index)
        guard index < sinks.count, let endpoint = sinks[index] else { return }
        count(id, in: &handedTo)
        monitor?.show(message, from: source, to: name(id), only: recipients.isOnly ? recipients.origin : nil, at: time)
        endpoint.receive(message, at: time, to: recipients)
    }

    private func count(_ id: EndpointID, in counts: inout [Int]) {
        let index = Int(id.index)
        if index < counts.count { counts[index] += 1 }
    }

}
