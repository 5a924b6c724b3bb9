import MIDI

/// One route as the router runs it: endpoint IDs instead of names, stages in their fixed order.
public struct CompiledRoute: Sendable {
    /// The endpoints whose messages enter the route (merged).
    public var sources: [EndpointID]
    /// The endpoints that receive what leaves the route (fan-out).
    public var sinks: [EndpointID]
    /// The stages, applied in order.
    public var stages: [any RouteStage]
    /// True: a message also goes back to the player that sent it, when a sink is the endpoint it
    /// came from (`echo: true`); false: every player but that one receives it.
    public var echo: Bool
    /// True if what its stages drop is counted (`RouterCounters.droppedByStages`): false for a route that only picks
    /// what it carries (the one into the jam).
    public var countsDrops: Bool
    /// False if clock and transport are not the route's to carry (they are the jam's while it runs): they do not
    /// enter it, and are not counted as dropped.
    public var carriesClockAndTransport: Bool

    /// A route from `sources` to `sinks` through `stages`.
    public init(sources: [EndpointID], sinks: [EndpointID], stages: [any RouteStage], echo: Bool = false,
                countsDrops: Bool = true, carriesClockAndTransport: Bool = true) {
        self.carriesClockAndTransport = carriesClockAndTransport
        self.sources = sources
        self.sinks = sinks
        self.stages = stages
        self.echo = echo
        self.countsDrops = countsDrops
    }
}

/// The compiled routes, indexed by source so dispatch touches only the routes that read an event.
public struct RouteGraph: Sendable {
    /// The routes, as given.
    public let routes: [CompiledRoute]
    /// Endpoint IDs range over 0..<endpointCount.
    public let endpointCount: Int
    /// For each source index, the indices of the routes reading it.
    let routesBySource: [[Int]]
    /// For each endpoint index, true if some route delivers to it.
    let isSink: [Bool]

    /// A graph of `routes` over endpoints 0..<endpointCount; IDs outside that range are ignored.
    public init(routes: [CompiledRoute], endpointCount: Int) {
        let count = max(0, min(endpointCount, Int(UInt16.max)))
        self.endpointCount = count
        self.routes = routes.map { route in
            var route = route
            route.sources.removeAll { Int($0.index) >= count }
            route.sinks.removeAll { Int($0.index) >= count }
            return route
        }
        var bySource = Array(repeating: [Int](), count: count)
        var isSink = Array(repeating: false, count: count)
        for (index, route) in self.routes.enumerated() {
            for source in Set(route.sources) { bySource[Int(source.index)].append(index) }
            for sink in route.sinks { isSink[Int(sink.index)] = true }
        }
        routesBySource = bySource
        self.isSink = isSink
    }
}
