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

    /// Routes among sources 0...2 and sinks 3...5.
    mutating func graph() -> RouteGraph {
        let routes = (0..<Int.random(in: 1...5, using: &self)).map { _ in
            CompiledRoute(sources: (0...2).filter { _ in Bool.random(using: &self) }.map { EndpointID(UInt16($0)) },
                          sinks: (3...5).filter { _ in Bool.random(using: &self) }.map { EndpointID(UInt16($0)) },
                          stages: (0..<Int.random(in: 0...4, using: &self)).map { _ in stage() })
        }
        return RouteGraph(routes: routes, endpointCount: 6)
    }
}

@Suite struct NoHangingNotesPropertyTests {
    @Test(arguments: 0..<40)
    func everySinkEndsWithNothingHeld(seed: UInt64) {
        var random = SeededGenerator(seed: 1000 + seed)
        let router = Router(graph: random.graph())
        var sinks = Array(repeating: SinkState(), count: 6)
        let deliver: (EndpointID, MIDIMessage) -> Void = { sink, message in sinks[Int(sink.index)].hear(message) }
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
}
