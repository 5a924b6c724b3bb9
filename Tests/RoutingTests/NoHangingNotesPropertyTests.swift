import MIDI
import MIDITestSupport
import Routing
import Testing

/// What a sink hears: notes sounding and pedals down, and every release that found nothing to release.
private struct SinkState {
    var notes: Set<Int> = []     // channel * 128 + note
    var pedals: Set<Int> = []    // channel * 128 + controller
    var strayReleases: [String] = []

    mutating func hear(_ message: MIDIMessage) {
        switch message {
        case .noteOn(let c, let n, let v) where v.value > 0:
            notes.insert(Int(c.value) * 128 + Int(n.value))
        case .noteOn(let c, let n, _), .noteOff(let c, let n, _):
            if notes.remove(Int(c.value) * 128 + Int(n.value)) == nil { strayReleases.append("\(message)") }
        case .controlChange(let c, let n, let v) where [64, 66, 69].contains(n.value):
            let key = Int(c.value) * 128 + Int(n.value)
            if v.value >= 64 {
                pedals.insert(key)
            } else if pedals.remove(key) == nil {
                strayReleases.append("\(message)")
            }
        default:
            break
        }
    }
}

extension RandomNumberGenerator {
    mutating func stage() -> any RouteStage {
        switch Int.random(in: 0..<10, using: &self) {
        case 0:
            let kinds = MIDIMessageKind.allCases.filter { _ in Bool.random(using: &self) }
            return KindFilter(passing: kinds.reduce(into: MIDIMessageKinds()) { $0.insert(MIDIMessageKinds($1)) })
        case 1: return ChannelFilter(channels: Set((0..<3).map { _ in UInt4(masking: UInt8.random(in: 0...3, using: &self)) }))
        case 2: return ChannelRemap(mapping: [UInt4(masking: UInt8.random(in: 0...3, using: &self)): UInt4(masking: UInt8.random(in: 0...3, using: &self))])
        case 3:
            let a = UInt7(masking: UInt8.random(in: 0...127, using: &self)), b = UInt7(masking: UInt8.random(in: 0...127, using: &self))
            return NoteRangeFilter(range: min(a, b)...max(a, b))
        case 4: return Transpose(semitones: Int.random(in: -30...30, using: &self))
        case 5: return Bool.random(using: &self)
            ? VelocityMap(curve: ValueCurve(output: (low: Int.random(in: 0...127, using: &self), high: Int.random(in: 0...127, using: &self)), exponent: Double.random(in: 0.2...4, using: &self)))
            : VelocityMap(fixed: UInt7(masking: UInt8.random(in: 0...127, using: &self)))
        case 6: return ControllerRenumber(mapping: [UInt7(masking: UInt8([1, 4, 64, 66].randomElement(using: &self) ?? 1)): UInt7(masking: UInt8([1, 64, 66, 69, 74].randomElement(using: &self) ?? 1))])
        case 7: return ControllerRange(controller: UInt7(masking: UInt8([1, 4, 64].randomElement(using: &self) ?? 1)), curve: ValueCurve(output: (low: 127, high: 0)))
        case 8:
            let kinds: [ConvertibleKind] = [.controller(UInt7(masking: 64)), .controller(UInt7(masking: 1)), .channelPressure, .pitchBend, .program]
            return KindConversion(from: kinds.randomElement(using: &self) ?? .pitchBend, to: kinds.randomElement(using: &self) ?? .pitchBend)
        default: return Transpose(semitones: 0)
        }
    }

    /// Routes among sources 0...2 and sinks 3...5, or (`shared`) among endpoints 0...3 that are sources and
    /// sinks at once (a session, its `peer:` endpoints), some routes with `echo` if `echoes`. One graph in four
    /// covers only the first endpoints (the daemon's IDs were given back): what the others hold is released.
    mutating func graph(shared: Bool = false, echoes: Bool = false) -> RouteGraph {
        let (sources, sinks) = shared ? (0...3, 0...3) : (0...2, 3...5)
        let routes = (0..<Int.random(in: 1...5, using: &self)).map { _ in
            CompiledRoute(sources: sources.filter { _ in Bool.random(using: &self) }.map { EndpointID(UInt16($0)) },
                          sinks: sinks.filter { _ in Bool.random(using: &self) }.map { EndpointID(UInt16($0)) },
                          stages: (0..<Int.random(in: 0...4, using: &self)).map { _ in stage() },
                          echo: echoes && Int.random(in: 0..<4, using: &self) == 0)
        }
        let all = shared ? 4 : 6
        return RouteGraph(routes: routes, endpointCount: Int.random(in: 0..<4, using: &self) == 0 ? Int.random(in: 1..<all, using: &self) : all)
    }
}

@Suite struct NoHangingNotesPropertyTests {
    @Test(arguments: 0..<40)
    func everySinkEndsWithNothingHeld(seed: UInt64) {
        var random = SeededGenerator(seed: 1000 + seed)
        let router = Router(graph: random.graph())
        var sinks = Array(repeating: SinkState(), count: 6)
        let deliver: Router.Delivery = { sink, message, _ in sinks[Int(sink.index)].hear(message) }
        // What each source is holding, so it can let go of everything at the end.
        var heldNotes: Set<[Int]> = []
        var raisedControllers: Set<[Int]> = []
        func play(_ message: MIDIMessage, from source: Int) {
            switch message {
            case .noteOn(let c, let n, let v) where v.value > 0: heldNotes.insert([source, Int(c.value), Int(n.value)])
            case .noteOn(let c, let n, _), .noteOff(let c, let n, _): heldNotes.remove([source, Int(c.value), Int(n.value)])
            case .controlChange(let c, let n, let v):
                if v.value >= 64 { raisedControllers.insert([source, Int(c.value), Int(n.value)]) } else { raisedControllers.remove([source, Int(c.value), Int(n.value)]) }
            default: break
            }
            router.dispatch(MIDIEvent(message, from: EndpointID(UInt16(source)), at: MonotonicInstant(nanoseconds: 0)), deliver)
        }
        for _ in 0..<2000 {
            let source = Int.random(in: 0...2, using: &random)
            let channel = UInt4(masking: UInt8.random(in: 0...3, using: &random))
            let note = UInt7(masking: UInt8.random(in: 50...70, using: &random))
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<35: play(.noteOn(channel: channel, note: note, velocity: UInt7(masking: UInt8.random(in: 1...127, using: &random))), from: source)
            case 35..<55: play(.noteOff(channel: channel, note: note, velocity: random.seven()), from: source)
            case 55..<62: play(.noteOn(channel: channel, note: note, velocity: .zero), from: source)
            case 62..<80:
                let controller = UInt7(masking: UInt8([1, 4, 64, 66, 69].randomElement(using: &random) ?? 1))
                play(.controlChange(channel: channel, controller: controller, value: random.seven()), from: source)
            case 80..<86: play(.pitchBend(channel: channel, value: random.fourteen()), from: source)
            case 86..<90: play(.channelPressure(channel: channel, pressure: random.seven()), from: source)
            case 90..<93: play(.polyPressure(channel: channel, note: note, pressure: random.seven()), from: source)
            case 93..<97: router.replace(graph: random.graph(), deliver)
            default: router.release(source: EndpointID(UInt16(source)), deliver)
            }
        }
        for held in heldNotes { play(.noteOff(channel: UInt4(masking: UInt8(held[1])), note: UInt7(masking: UInt8(held[2])), velocity: .zero), from: held[0]) }
        for raised in raisedControllers { play(.controlChange(channel: UInt4(masking: UInt8(raised[1])), controller: UInt7(masking: UInt8(raised[2])), value: .zero), from: raised[0]) }
        for (index, sink) in sinks.enumerated() {
            #expect(sink.notes.isEmpty, "sink \(index) still has notes on: \(sink.notes.sorted())")
            #expect(sink.pedals.isEmpty, "sink \(index) still has pedals down: \(sink.pedals.sorted())")
            #expect(sink.strayReleases.isEmpty, "sink \(index) got releases for nothing held: \(sink.strayReleases.prefix(5))")
        }
    }

    /// Players share endpoints (two session peers, an ALSA port, and a player that is the whole endpoint);
    /// every sink has each of them behind it as a listener. What a player plays never comes back to it
    /// (unless a route echoes), and every listener ends with nothing held and no release for what it never
    /// heard, however the players' notes overlap on the same outputs.
    @Test(arguments: 0..<40)
    func noDeliveryReturnsToItsPlayerAndEveryListenerEndsWithNothingHeld(seed: UInt64) {
        var random = SeededGenerator(seed: 5000 + seed)
        let echoes = seed % 4 == 0
        let players: [EventOrigin] = [.networkPeer(ssrc: 7), .networkPeer(ssrc: 9), .sequencerPort(client: 20, port: 0), .none]
        let router = Router(graph: random.graph(shared: true, echoes: echoes))
        var listeners = Array(repeating: Array(repeating: SinkState(), count: players.count), count: 4)
        var player = EventOrigin.none
        var echoed: [String] = []
        let deliver: Router.Delivery = { sink, message, recipients in
            if recipients.include(player) && player != .none && !echoes { echoed.append("\(message) to \(sink)") }
            for (index, listener) in players.enumerated() where recipients.include(listener) {
                listeners[Int(sink.index)][index].hear(message)
            }
        }
        var held: Set<[Int]> = []   // source, player, channel, note (or 128 + controller)
        func play(_ message: MIDIMessage, from source: Int, as who: Int) {
            switch message {
            case .noteOn(let c, let n, let v) where v.value > 0: held.insert([source, who, Int(c.value), Int(n.value)])
            case .noteOn(let c, let n, _), .noteOff(let c, let n, _): held.remove([source, who, Int(c.value), Int(n.value)])
            case .controlChange(let c, let n, let v):
                let key = [source, who, Int(c.value), 128 + Int(n.value)]
                if v.value >= 64 { held.insert(key) } else { held.remove(key) }
            default: break
            }
            player = players[who]
            router.dispatch(MIDIEvent(message, from: EndpointID(UInt16(source)), origin: players[who], at: MonotonicInstant(nanoseconds: 0)), deliver)
            player = .none
        }
        for _ in 0..<3000 {
            let source = Int.random(in: 0...3, using: &random), who = Int.random(in: 0..<players.count, using: &random)
            let channel = UInt4(masking: UInt8.random(in: 0...1, using: &random))
            let note = UInt7(masking: UInt8.random(in: 60...66, using: &random))
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<40: play(.noteOn(channel: channel, note: note, velocity: UInt7(masking: UInt8.random(in: 1...127, using: &random))), from: source, as: who)
            case 40..<70: play(.noteOff(channel: channel, note: note, velocity: random.seven()), from: source, as: who)
            case 70..<90:
                let controller = UInt7(masking: UInt8([1, 64, 66].randomElement(using: &random) ?? 1))
                play(.controlChange(channel: channel, controller: controller, value: random.seven()), from: source, as: who)
            case 90..<93: play(.polyPressure(channel: channel, note: note, pressure: random.seven()), from: source, as: who)
            case 93..<96: router.replace(graph: random.graph(shared: true, echoes: echoes), deliver)
            default: router.release(source: EndpointID(UInt16(source)), deliver)
            }
        }
        for key in held {
            play(key[3] < 128 ? .noteOff(channel: UInt4(masking: UInt8(key[2])), note: UInt7(masking: UInt8(key[3])), velocity: .zero)
                              : .controlChange(channel: UInt4(masking: UInt8(key[2])), controller: UInt7(masking: UInt8(key[3] - 128)), value: .zero),
                 from: key[0], as: key[1])
        }
        #expect(echoed.isEmpty, "delivered back to the player that sent it: \(echoed.prefix(5))")
        for (sink, perListener) in listeners.enumerated() {
            for (index, state) in perListener.enumerated() {
                #expect(state.notes.isEmpty, "sink \(sink), \(players[index]): notes still on: \(state.notes.sorted())")
                #expect(state.pedals.isEmpty, "sink \(sink), \(players[index]): pedals still down: \(state.pedals.sorted())")
                #expect(state.strayReleases.isEmpty, "sink \(sink), \(players[index]): releases for nothing held: \(state.strayReleases.prefix(5))")
            }
        }
    }
}
