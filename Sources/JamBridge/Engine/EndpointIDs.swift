import MIDI

/// The endpoint IDs `Assembly` gives (docs/internals.md, "Events and endpoints"): dense indices into the engine's
/// tables and the router's held table (24 KiB an ID), each given to one endpoint (or one of an OSC endpoint's
/// routes) at a time, and given again only once nothing can be under it any more.
///
/// An ID is given by `give` and keeps its name after `retire` (its endpoint is out of the engine, or its route is
/// gone): what it counted stays its name's, and the monitor names releases still delivered under it. `free`, at the
/// start of each `Assembly.apply`, makes free the IDs retired before that apply (every part has followed its new IDs
/// since, so no event is tagged with them and no route refers to them) under which the router holds nothing as
/// source or sink (a part may let go later of a key pressed under a route that is gone). Free IDs are given lowest
/// first and free IDs at the end are dropped, so IDs stay below the endpoints and routes running plus the IDs retired
/// by the last reload (and any still held under); none is ever given to two endpoints at once.
struct EndpointIDs {
    /// Per ID: the name of the endpoint it is given to (running or retired); nil if free.
    private(set) var names: [String?] = []
    /// The IDs retired and not yet free.
    private var retired: [EndpointID] = []

    /// How many IDs there are, free ones included: the size of the engine's tables.
    var count: Int { names.count }

    /// The lowest free ID, given to the endpoint `name`.
    mutating func give(to name: String) -> EndpointID {
        let index = names.firstIndex(of: nil) ?? names.endIndex
        // UInt16.max stands for an endpoint without an ID in the route graph.
        precondition(index < Int(UInt16.max), "every endpoint ID is in use")
        if index == names.endIndex { names.append(name) } else { names[index] = name }
        return EndpointID(UInt16(index))
    }

    /// Takes back `id`: free at a later apply's `free`, once the router holds nothing under it.
    mutating func retire(_ id: EndpointID) {
        retired.append(id)
    }

    /// Makes free the IDs retired by earlier applies (call it at the start of an apply, before any `retire`), but for
    /// those `holding` says the router holds anything under.
    mutating func free(holding: ([EndpointID]) -> Set<EndpointID>) {
        guard !retired.isEmpty else { return }
        let held = holding(retired)
        for id in retired where !held.contains(id) { names[Int(id.index)] = nil }
        retired.removeAll { !held.contains($0) }
        while let last = names.last, last == nil { names.removeLast() }
    }
}
