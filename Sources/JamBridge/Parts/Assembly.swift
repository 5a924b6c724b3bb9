import Jam
import Logging
import MIDI
import RouteFile
import Routing

/// The kinds of part, in the order they are made and started: a new kind is its own file and a line here.
/// At start, the first group opens ports and the sequencer; if any of them cannot be had, nothing of the second
/// is made, so no take is claimed for nothing. The ALSA client comes first: its sinks pace their output on the
/// engine's queue, which they learn when it starts, before any source does. The drums come after the jam whose song
/// they read.
var partKinds: [[any Part.Type]] {
    [
        [ALSAPart.self, SessionPart.self, OSCPart.self, StatusPagePart.self],
        [FilePlayerPart.self, RecorderPart.self, JamPart.self, DrumsPart.self],
    ]
}

/// The running parts and the engine they play into. Every configuration is put in force by `apply`, the first one
/// included (from an empty configuration), so starting and reloading are one path; `stop` ends everything.
/// Endpoint IDs are given here, by name, kept for as long as an endpoint runs unchanged and given again once nothing
/// is under them (`EndpointIDs`). Used on the daemon's control queue only.
final class Assembly {
    /// What `apply` did.
    struct Outcome {
        /// What could not be opened, with where the route files ask for it (already logged).
        var failures: [String] = []
        /// The endpoints that got a new ID (started, or started again), in declaration order.
        var started: [String] = []
        /// The endpoints taken out of the engine (stopped, or to be started again), in the order of their IDs.
        var stopped: [String] = []
    }

    /// A running part, with its kind and its key within the kind.
    private struct RunningPart {
        var kind: ObjectIdentifier
        var key: String
        var part: any Part
    }

    /// A running endpoint's ID, with the IDs of the routes it enters each under one of its own (by route index).
    private struct Binding {
        var id: EndpointID
        var endpoint: RunningEndpoint
        var routeIDs: [Int: EndpointID] = [:]
    }

    let engine: Engine
    /// The jam's song as the jam publishes it, for the parts that play along it (`Wiring.song`).
    let song = PublishedSong()
    private let context: PartContext
    /// The kinds of part, in groups, in the order they are made and started (`partKinds`).
    private let kinds: [[any Part.Type]]
    private var parts: [RunningPart] = []
    /// The running endpoints, by name.
    private var bindings: [String: Binding] = [:]
    /// The IDs given, by the endpoint each is given to.
    private var ids = EndpointIDs()
    /// The configuration in force.
    private var configuration = RouteConfiguration(endpoints: [], routes: [])

    /// Nothing running yet; the engine routes nothing until the first `apply`, which makes parts of `kinds`.
    init(context: PartContext, kinds: [[any Part.Type]] = partKinds) {
        self.context = context
        self.kinds = kinds
        engine = Engine(graph: RouteGraph(routes: [], endpointCount: 0), sinks: [], names: [], monitor: context.monitor)
    }

    /// Puts `new` in force. Running parts it still asks for are told of it and stay if they take it in place;
    /// the rest, and the endpoints that staying parts no longer offer unchanged, are taken out of the engine (what
    /// they held and what was routed to them released) and stopped, before new parts are made, so that they can
    /// have the ports those held. New endpoints get IDs, the engine takes the new routes, then every part starts
    /// or follows its new IDs, and the new sources start. When `starting` and something cannot be opened, no
    /// later group of kinds is made and nothing starts: the caller stops what was made.
    func apply(_ new: RouteConfiguration, starting: Bool) -> Outcome {
        var outcome = Outcome()
        ids.free(holding: engine.holding)
        var staying: [RunningPart] = [], leaving: [RunningPart] = []
        for running in parts {
            if update(running.part, key: running.key, to: new) == .applied {
                staying.append(running)
            } else {
                leaving.append(running)
            }
        }
        let offered = endpoints(of: staying)
        outcome.stopped = bindings.filter { name, binding in offered[name].map { !$0.isSame(as: binding.endpoint) } ?? true }
            .sorted { $0.value.id.index < $1.value.id.index }.map(\.key)
        takeOut(outcome.stopped, stopping: leaving)
        parts = staying

        for group in kinds {
            for kind in group {
                outcome.failures += make(kind, of: new, starting: starting)
            }
            if starting && !outcome.failures.isEmpty { break }
        }
        let order = kinds.joined().map { ObjectIdentifier($0) }
        parts = order.flatMap { kind in parts.filter { $0.kind == kind } }

        let running = endpoints(of: parts)
        for declaration in new.endpoints where bindings[declaration.name] == nil {
            guard let endpoint = running[declaration.name] else { continue }
            bindings[declaration.name] = Binding(id: ids.give(to: declaration.name), endpoint: endpoint)
            outcome.started.append(declaration.name)
        }
        assignRouteIDs(new)
        configuration = new
        engine.replace(graph: graph(), sinks: sinkTable(), names: ids.names, stopping: [])

        guard !starting || outcome.failures.isEmpty else { return outcome }
        let made = parts
        let wiring = Wiring(engine: engine, configuration: new, ids: bindings.mapValues(\.id),
                            routeIDs: bindings.mapValues(\.routeIDs),
                            identity: { made.lazy.compactMap(\.part.identity).first },
                            song: song)
        for running in parts { running.part.start(wiring) }
        for name in outcome.started {
            if let binding = bindings[name] { binding.endpoint.source?.start(id: binding.id, sink: engine) }
        }
        return outcome
    }

    /// Stops everything: the sources, then the engine (every held note released, every sink stopped), then the
    /// parts, last made first stopped. Returns what the router counted.
    func stop() -> RouterCounters {
        for binding in bindings.values.sorted(by: { $0.id.index < $1.id.index }) { binding.endpoint.source?.stop() }
        let counters = engine.stop()
        for running in parts.reversed() { running.part.stop() }
        parts = []
        bindings = [:]
        return counters
    }

    /// Has the part whose command it is carry out `command`, which came through `channel`.
    func perform(_ command: ControlCommand, from channel: CommandChannel) -> Result<String, JamRefusal> {
        for running in parts {
            if let result = running.part.perform(command, from: channel) { return result }
        }
        let reason = switch command {
        case .jam: "no jam runs: the route files have no 'clock', 'activity' or 'drums' block"
        case .drums: "no drums play: the route files have no 'drums' block"
        }
        return .failure(JamRefusal(reason: reason))
    }

    /// Has every part fill in its object of `status`, and adds what went in and out of each running endpoint and what
    /// the router counted.
    func report(into status: inout DaemonStatus) {
        for running in parts { running.part.report(into: &status) }
        let traffic = engine.traffic()
        for name in bindings.keys {
            let counted = traffic.endpoints[name] ?? (0, 0)
            status.endpoints[name, default: DaemonStatus.Traffic()].in = counted.in
            status.endpoints[name, default: DaemonStatus.Traffic()].out = counted.out
        }
        let router = traffic.router
        status.router = DaemonStatus.Router(delivered: router.delivered, filtered: router.droppedByStages,
                                            unmatchedReleases: router.unmatchedReleases, heldTableFull: router.heldTableFull,
                                            untrackable: router.untrackable)
    }

    /// Tells `part` of `configuration`; `.replace` too if the configuration no longer asks for it.
    private func update<P: Part>(_ part: P, key: String, to configuration: RouteConfiguration) -> PartUpdate {
        guard let block = P.blocks(in: configuration).first(where: { $0.key == key })?.block else { return .replace }
        return part.apply(block, in: configuration)
    }

    /// Makes the parts of `kind` that `configuration` asks for and are not running; returns what could not be
    /// opened, logged as it happens (on a reload with what it means: the daemon runs on).
    private func make<P: Part>(_ kind: P.Type, of configuration: RouteConfiguration, starting: Bool) -> [String] {
        var failures: [String] = []
        for (key, block) in P.blocks(in: configuration)
        where !parts.contains(where: { $0.kind == ObjectIdentifier(kind) && $0.key == key }) {
            do {
                parts.append(RunningPart(kind: ObjectIdentifier(kind), key: key, part: try P(block, in: configuration, context: context)))
            } catch {
                context.logger.error("\(starting ? error.problem : "\(error.problem); \(error.consequence)")")
                failures.append(error.problem)
            }
        }
        return failures
    }

    /// Takes the endpoints named in `going` out of the engine: their sources stop, what they hold and what was
    /// routed to them is released, their sinks stop (the rest of the configuration in force keeps running), their
    /// IDs are retired; then the parts `leaving` stop, last made first.
    private func takeOut(_ going: [String], stopping leaving: [RunningPart]) {
        let removed = going.compactMap { bindings.removeValue(forKey: $0) }
        if !removed.isEmpty {
            for binding in removed { binding.endpoint.source?.stop() }
            for binding in removed {
                for id in [binding.id] + binding.routeIDs.values {
                    engine.releaseHeld(by: id)
                    ids.retire(id)
                }
            }
            engine.replace(graph: graph(), sinks: sinkTable(), names: ids.names, stopping: removed.compactMap(\.endpoint.sink))
        }
        for running in leaving.reversed() { running.part.stop() }
    }

    /// Every endpoint `parts` offer, by name.
    private func endpoints(of parts: [RunningPart]) -> [String: RunningEndpoint] {
        parts.reduce(into: [:]) { all, running in all.merge(running.part.endpoints) { first, _ in first } }
    }

    /// Gives each route from an endpoint that enters each route under its own ID that ID, kept while the endpoint
    /// runs and the route keeps its place; named as the endpoint. The IDs of routes gone are retired (the endpoint
    /// releases what it held under them when it follows its new IDs).
    private func assignRouteIDs(_ configuration: RouteConfiguration) {
        var assigned: [String: [Int: EndpointID]] = [:]
        for (index, route) in configuration.allRoutes.enumerated() {
            for name in route.from where bindings[name]?.endpoint.entersEachRoute == true {
                assigned[name, default: [:]][index] = bindings[name]?.routeIDs[index] ?? ids.give(to: name)
            }
        }
        for (name, binding) in bindings {
            let kept = assigned[name] ?? [:]
            for id in Set(binding.routeIDs.values).subtracting(kept.values) { ids.retire(id) }
            bindings[name]?.routeIDs = kept
        }
    }

    /// The routes of the configuration in force over the running endpoints (routes to or from others lose them).
    private func graph() -> RouteGraph {
        RouteGraph(routes: configuration.compiledRoutes(endpointID: { bindings[$0]?.id ?? EndpointID(UInt16.max) },
                                                        sourceID: { bindings[$0]?.routeIDs[$1] }),
                   endpointCount: ids.count)
    }

    /// The running endpoints' sinks, by ID.
    private func sinkTable() -> [SinkEndpoint?] {
        var table = [SinkEndpoint?](repeating: nil, count: ids.count)
        for binding in bindings.values { table[Int(binding.id.index)] = binding.endpoint.sink }
        return table
    }
}
