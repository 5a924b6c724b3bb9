import Dispatch
import Jam
import Logging
import MIDI
import Routing

/// The one place routing happens: owns the router and the sinks on a single serial queue;
/// sources submit events into it from their own threads.
public final class Engine: EventSink, @unchecked Sendable {
    public let queue = DispatchQueue(label: "jambridge.engine", qos: .userInteractive)
    // Everything below is touched only on `queue`.
    private let router: Router
    private var sinks: [SinkEndpoint?]
    /// Per endpoint ID: the name of the endpoint it is given to; nil if free.
    private var names: [String?]
    private let monitor: EventMonitor?
    /// Per endpoint ID: messages that came from it, and messages handed to it (`jambridge status`).
    private var cameFrom: [Int], handedTo: [Int]
    /// What the IDs given back or given to another endpoint had counted, by the name they had, while an ID has it.
    private var carried: [String: (in: Int, out: Int)] = [:]
    /// Sees every event before the router (the jam): returns true for one it took, which is not routed.
    var tap: ((MIDIEvent) -> Bool)?
    /// Carries out jam commands while a jam runs.
    var commands: ((ControlCommand) -> Result<String, JamRefusal>)?
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

    public func submit(_ event: MIDIEvent) {
        queue.async { [self] in routeOnQueue(event) }
    }

    public func routeOnQueue(_ event: MIDIEvent) {
        dispatchPrecondition(condition: .onQueue(queue))
        count(event.source, in: &cameFrom)
        if let tap, tap(event) { return }
        router.dispatch(event) { sink, message, recipients in
            deliver(message, from: event.source, to: sink, for: recipients, at: event.time)
        }
    }

    public func routeBatch(_ body: () -> Void) {
        dispatchPrecondition(condition: .onQueue(queue))
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

    public func perform(_ command: ControlCommand) -> Result<String, JamRefusal> {
        dispatchPrecondition(condition: .onQueue(queue))
        return commands?(command) ?? .failure(JamRefusal(reason: "no jam runs: the route files have no 'clock' or 'activity' block"))
    }

    public func releaseHeld(by source: EndpointID) {
        queue.async { [self] in
            let now = MonotonicClock.now()
            router.release(source: source) { sink, message, recipients in
                deliver(message, from: source, to: sink, for: recipients, at: now)
            }
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
                deliver(message, from: sink, to: sink, for: recipients, at: now)
            }
            for sink in stopping { sink.stop() }
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
            let now = MonotonicClock.now()
            router.releaseAll { sink, message, recipients in deliver(message, from: sink, to: sink, for: recipients, at: now) }
            for sink in sinks { sink?.stop() }
            return router.counters
        }
    }

    /// Hands `message` to the sink `id` at `time` for every player, shown as coming from `source` (the jam's
    /// clock); on the queue.
    func deliver(_ message: MIDIMessage, to id: EndpointID, from source: String, at time: MonotonicInstant) {
        dispatchPrecondition(condition: .onQueue(queue))
        deliver(message, shownFrom: source, to: id, for: .everyone, at: time)
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

    /// The name of the endpoint `id` (for the jam's log and monitor lines); on the queue.
    func name(_ id: EndpointID) -> String {
        Int(id.index) < names.count ? names[Int(id.index)] ?? id.description : id.description
    }

    private func deliver(_ message: MIDIMessage, from source: EndpointID, to sink: EndpointID, for recipients: Recipients,
                         at time: MonotonicInstant) {
        deliver(message, shownFrom: monitor == nil ? "" : source == sink ? "release" : name(source), to: sink,
                for: recipients, at: time)
    }

    /// Hands `message` to the sink `id` for `recipients`, shown on the monitor as coming from `source`.
    private func deliver(_ message: MIDIMessage, shownFrom source: String, to id: EndpointID, for recipients: Recipients,
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
