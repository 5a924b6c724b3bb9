import MIDI

/// What the router has counted since it was made.
public struct RouterCounters: Hashable, Sendable {
    /// Messages handed to sinks.
    public var delivered = 0
    /// Messages a route's stages dropped.
    public var droppedByStages = 0
    /// Note-ons and pedal presses dropped because the held table was full.
    public var heldTableFull = 0
    /// Note-offs and pedal releases for which nothing had been turned on (nothing sent).
    public var unmatchedReleases = 0
    /// Events from an endpoint ID outside the graph.
    public var unknownSource = 0
    /// Pedal presses made by converting a message that has no release of its own (dropped).
    public var untrackable = 0
    /// All counts zero.
    public init() {}
}

/// Sends events through the route graph to sinks and guarantees no note or pedal is left hanging:
/// releases never run through stages but go exactly where their note-on or press went.
///
/// No echo: a delivery goes to every player behind the sink but the one that played the event
/// (`Recipients.allExcept(event.origin)`), unless the route says `echo`; a release goes to the
/// players its note-on went to.
///
/// Every delivery is `deliver(sink, message, recipients)`.
/// Confined to one thread (the engine's). `dispatch` allocates nothing for non-SysEx messages:
/// all tables are allocated when the router is made (or resized on a reload).
public final class Router {
    /// Hands `message` to `sink` for `recipients`.
    public typealias Delivery = (_ sink: EndpointID, _ message: MIDIMessage, _ recipients: Recipients) -> Void

    /// The routes in force.
    public private(set) var graph: RouteGraph
    /// What has been counted.
    public private(set) var counters = RouterCounters()

    private var held: HeldTable

    /// A router over `graph` able to track `heldCapacity` sounding outputs at once.
    public init(graph: RouteGraph, heldCapacity: Int = 4096) {
        self.graph = graph
        held = HeldTable(endpointCount: graph.endpointCount, capacity: heldCapacity)
    }

    /// Routes `event` to its sinks, calling `deliver` once per (sink, message).
    public func dispatch(_ event: MIDIEvent, _ deliver: Delivery) {
        let source = Int(event.source.index)
        guard source < graph.endpointCount else {
            counters.unknownSource += 1
            return
        }
        let player = event.origin
        switch event.message {
        case .noteOff(let channel, let note, let velocity):
            releaseInput(source: source, player: player, channel: channel, slot: Int(note.value), velocity: velocity, deliver)
        case .noteOn(let channel, let note, let velocity) where velocity.value == 0:
            releaseInput(source: source, player: player, channel: channel, slot: Int(note.value), velocity: .zero, deliver)
        case .noteOn(let channel, let note, _):
            let key = held.inputKey(source: source, channel: channel, slot: Int(note.value))
            if held.isHeld(key, by: player) { releaseKey(key, player: player, velocity: .zero, deliver) }
            route(event, source: source, key: key, isPress: true, releaseSent: false, deliver)
        case .controlChange(let channel, let controller, let value):
            // A controller that pressed a pedal somewhere releases it there when it drops below 64.
            let key = held.inputKey(source: source, channel: channel, slot: 128 + Int(controller.value))
            let released = value.value < 64 && held.isHeld(key, by: player)
            if released { releaseKey(key, player: player, velocity: .zero, deliver) }
            route(event, source: source, key: key, isPress: value.value >= 64, releaseSent: released, deliver)
        case .polyPressure(let channel, let note, let pressure):
            let key = held.inputKey(source: source, channel: channel, slot: Int(note.value))
            held.forEachOutput(of: key, player: player) { sink, outChannel, outSlot, recipients in
                guard outSlot < 128 else { return }
                counters.delivered += 1
                deliver(EndpointID(UInt16(sink)), .polyPressure(channel: outChannel, note: UInt7(masking: UInt8(outSlot)), pressure: pressure),
                        recipients)
            }
        default:
            route(event, source: source, key: nil, isPress: false, releaseSent: false, deliver)
        }
    }

    /// Releases every note and pedal any player of `source` holds (it went away, or a song looped or ended).
    public func release(source: EndpointID, _ deliver: Delivery) {
        let index = Int(source.index)
        guard index < held.endpointCount else { return }
        var from = held.inputKey(source: index, channel: UInt4(masking: 0), slot: 0)
        while let key = held.heldKey(of: index, from: from) {
            releaseKey(key, player: nil, velocity: .zero, deliver)
            from = key + 1
        }
    }

    /// Releases every note and pedal held by any source (shutdown).
    public func releaseAll(_ deliver: Delivery) {
        for source in 0..<held.endpointCount { release(source: EndpointID(UInt16(source)), deliver) }
    }

    /// True if anything is held under `endpoint`: a note or pedal its inputs turned on, or one sounding on it.
    public func holds(_ endpoint: EndpointID) -> Bool {
        let index = Int(endpoint.index)
        return index < held.endpointCount && (held.holdsInputs(of: index) || held.holdsOutputs(on: index))
    }

    /// Puts `newGraph` in force. Held notes survive and are released later along the paths their
    /// note-ons took; outputs on endpoints that no route of `newGraph` delivers to are released now,
    /// and so is what endpoints beyond its range hold, whose room the held table then gives back.
    public func replace(graph newGraph: RouteGraph, _ deliver: Delivery) {
        held.resize(endpointCount: max(held.endpointCount, newGraph.endpointCount))
        for source in newGraph.endpointCount..<held.endpointCount { release(source: EndpointID(UInt16(source)), deliver) }
        for sink in 0..<held.endpointCount where sink >= newGraph.endpointCount || !newGraph.isSink[sink] {
            held.removeOutputs(toSink: sink) { channel, slot, recipients in
                counters.delivered += 1
                deliver(EndpointID(UInt16(sink)), Self.release(channel: channel, slot: slot, velocity: .zero), recipients)
            }
        }
        held.resize(endpointCount: newGraph.endpointCount)
        graph = newGraph
    }

    /// Runs `message` through `route`'s stages; false if a stage dropped it (counted if the route counts drops).
    @inline(__always)
    private func passes(_ message: inout MIDIMessage, through route: CompiledRoute) -> Bool {
        for index in route.stages.indices where !route.stages[index].apply(&message) {
            if route.countsDrops && route.stages[index].countsDrops { counters.droppedByStages += 1 }
            return false
        }
        return true
    }

    /// Routes `event` through every route reading `source`. Outputs that hold something at their
    /// sink (a sounding note, a pressed pedal) are recorded under the input's `key` when the input
    /// is a press; ones that cannot be recorded are dropped, never sent untracked. Pedal releases
    /// are dropped too: only the held table sends them, to where the press went (`releaseSent`
    /// says it just did, so the drop is not counted as unmatched).
    private func route(_ event: MIDIEvent, source: Int, key: Int?, isPress: Bool, releaseSent: Bool,
                       _ deliver: Delivery) {
        for routeIndex in graph.routesBySource[source] {
            let route = graph.routes[routeIndex]
            var message = event.message
            guard route.carriesClockAndTransport || !message.isClockOrTransport,
                  passes(&message, through: route) else { continue }
            let left = route.echo ? EventOrigin.none : event.origin
            let output = HeldTable.heldOutput(of: message)
            if output == nil && HeldTable.isPedalRelease(message) {
                if !releaseSent { counters.unmatchedReleases += 1 }
                continue
            }
            for sink in route.sinks {
                if let (channel, slot) = output {
                    guard isPress, let key else {
                        counters.untrackable += 1
                        continue
                    }
                    let sinkIndex = Int(sink.index)
                    if !held.extendOutput(key: key, player: event.origin, left: left, sink: sinkIndex, channel: channel, slot: slot)
                        && !held.record(key: key, player: event.origin, left: left, sink: sinkIndex, channel: channel, slot: slot) {
                        counters.heldTableFull += 1
                        continue
                    }
                }
                counters.delivered += 1
                deliver(sink, message, .allExcept(left))
            }
        }
    }

    /// Releases what `player`'s input (source, channel, slot) turned on, or counts an unmatched release.
    private func releaseInput(source: Int, player: EventOrigin, channel: UInt4, slot: Int, velocity: UInt7,
                              _ deliver: Delivery) {
        let key = held.inputKey(source: source, channel: channel, slot: slot)
        guard held.isHeld(key, by: player) else {
            counters.unmatchedReleases += 1
            return
        }
        releaseKey(key, player: player, velocity: velocity, deliver)
    }

    /// Releases what `player` (nil: every player) holds under `key`.
    private func releaseKey(_ key: Int, player: EventOrigin?, velocity: UInt7, _ deliver: Delivery) {
        held.removeOutputs(of: key, player: player) { sink, channel, slot, recipients in
            counters.delivered += 1
            deliver(EndpointID(UInt16(sink)), Self.release(channel: channel, slot: slot, velocity: velocity), recipients)
        }
    }

    /// The message releasing an output slot: a note-off, or a pedal controller set to 0.
    private static func release(channel: UInt4, slot: Int, velocity: UInt7) -> MIDIMessage {
        slot < 128
            ? .noteOff(channel: channel, note: UInt7(masking: UInt8(slot)), velocity: velocity)
            : .controlChange(channel: channel, controller: UInt7(masking: UInt8(slot - 128)), value: .zero)
    }
}
