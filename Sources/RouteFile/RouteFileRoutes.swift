import MIDI
import OSC
import Routing

/// A `from:` or `to:` entry naming an endpoint, checked once every file's endpoints are known.
struct EndpointReference {
    /// Which side of a route the name is on.
    enum Role { case source, sink }

    /// The endpoint name as written.
    var name: String
    /// Where the name is written.
    var location: SourceLocation
    /// Whether the route reads from it or writes to it.
    var role: Role

    /// What is wrong with this reference given the declared endpoints, or nil if it is fine.
    func problem(endpoints: [EndpointDeclaration], index: [String: Int], declaredNames: [String]) -> String? {
        guard let position = index[name] else {
            let candidates = declaredNames + [RouteFileVocabulary.sessionEndpointName]
            let hint = RouteFileVocabulary.closest(to: name, in: candidates).map { "did you mean '\($0)'? " } ?? ""
            guard !declaredNames.isEmpty else {
                return "unknown endpoint '\(name)'; \(hint)no endpoints are declared (add them under 'endpoints:')"
            }
            return "unknown endpoint '\(name)'; \(hint)declared endpoints: \(declaredNames.joined(separator: ", "))"
        }
        let endpoint = endpoints[position]
        switch role {
        case .source where !endpoint.canSend:
            return "'\(name)' is a recorder and cannot send; use it in 'to:', not 'from:'"
        case .sink where !endpoint.canReceive:
            return endpoint.kind == .drums ? "'\(name)' is the drum sequencer's notes and cannot receive; use it in 'from:', not 'to:'"
                : "'\(name)' is a MIDI file player and cannot receive; use it in 'from:', not 'to:'"
        default:
            return nil
        }
    }
}

/// A route as read from one file, before its endpoint names are checked against all files.
struct PendingRoute {
    /// The `from:` names.
    var from: [EndpointReference]
    /// The `to:` names.
    var to: [EndpointReference]
    /// The stages in their fixed order.
    var stages: [any RouteStage]
    /// The route's `osc:` block, if it has one.
    var osc: OSCRouteMapping?
    /// `echo: true`: what a player sends may come back to it.
    var echo: Bool
    /// `control: true`: the jam's activity level and total pass.
    var control: Bool
    /// Where the route's mapping starts.
    var location: SourceLocation
    /// False if anything in the route was reported as a mistake.
    var isValid: Bool
}

/// The reader of the `routes:` list: each route's endpoint names (checked once every file's endpoints are known),
/// `echo:` and `control:`; its stage keys and its `osc:` block go to readers of their own.
struct RoutesReader: RouteFileReader {
    let file: String
    var errors: [RouteFileError] = []
    var notes: [RouteFileNote] = []

    /// Reads the `routes:` list, its routes in order.
    mutating func read(_ node: Node) -> [PendingRoute] {
        if Self.isEmpty(node) { return [] }
        guard let sequence = node.sequence else {
            fail(node, "'routes' is a list of routes, each starting with '- from:', not \(Self.describe(node))")
            return []
        }
        var routes: [PendingRoute] = []
        routes.reserveCapacity(sequence.count)
        for item in sequence {
            guard let mapping = item.mapping else {
                fail(item, "a route is a mapping with 'from:' and 'to:', not \(Self.describe(item))")
                continue
            }
            routes.append(readRoute(mapping, at: item))
        }
        return routes
    }

    /// Reads one route: its endpoint names, its stages, its `osc:` block, `echo:` and `control:`.
    private mutating func readRoute(_ mapping: Node.Mapping, at node: Node) -> PendingRoute {
        let errorsBefore = errors.count
        var values: [String: (key: Node, value: Node)] = [:]
        for (keyNode, value) in mapping {
            guard let key = scalarKey(keyNode) else { continue }
            if RouteFileVocabulary.routeKeys.contains(key) {
                values[key] = (keyNode, value)
            } else {
                failUnknownKey(keyNode, key, known: RouteFileVocabulary.routeKeys, in: "a route")
            }
        }
        let from = values["from"].map { readReferences($0.value, key: $0.key, role: .source) } ?? []
        if values["from"] == nil {
            fail(node, "a route from nowhere: add 'from:' with an endpoint name or a list of names")
        }
        let to = values["to"].map { readReferences($0.value, key: $0.key, role: .sink) } ?? []
        if values["to"] == nil {
            fail(node, "a route to nowhere: add 'to:' with an endpoint name or a list of names")
        }

        var stageReader = RouteStageReader(file: file)
        let stages = stageReader.read(values)
        stageReader.report(into: &errors, &notes)
        // Not a stage: how the OSC endpoint at either end of the route translates.
        var osc: OSCRouteMapping?
        if let block = values["osc"] {
            var oscReader = OSCMappingReader(file: file)
            osc = oscReader.read(block.value, key: block.key)
            oscReader.report(into: &errors, &notes)
        }
        let echo = values["echo"].flatMap { readBool($0.value, key: "echo") } ?? false
        let control = values["control"].flatMap { readBool($0.value, key: "control") } ?? false
        return PendingRoute(from: from, to: to, stages: stages, osc: osc, echo: echo, control: control,
                            location: location(node), isValid: errors.count == errorsBefore)
    }
}
