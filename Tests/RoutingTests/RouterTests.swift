import MIDI
import MIDITestSupport
import Routing
import Testing

private func ch(_ x: Int) -> UInt4 { UInt4(masking: UInt8(x)) }
private func v(_ x: Int) -> UInt7 { UInt7(masking: UInt8(x)) }
private func id(_ x: Int) -> EndpointID { EndpointID(UInt16(x)) }

/// A router plus everything it delivered, for assertions.
final class RouterProbe {
    let router: Router
    var delivered: [(sink: Int, message: MIDIMessage)] = []

    init(_ routes: [CompiledRoute], endpoints: Int = 4, capacity: Int = 4096) {
        router = Router(graph: RouteGraph(routes: routes, endpointCount: endpoints), heldCapacity: capacity)
    }

    @discardableResult
    func send(_ message: MIDIMessage, from source: Int = 0) -> [(sink: Int, message: MIDIMessage)] {
        let before = delivered.count
        router.dispatch(MIDIEvent(message, from: id(source), at: MonotonicInstant(nanoseconds: 0))) { sink, m, _ in
            delivered.append((Int(sink.index), m))
        }
        return Array(delivered[before...])
    }

    func replace(_ routes: [CompiledRoute], endpoints: Int = 4) -> [(sink: Int, message: MIDIMessage)] {
        let before = delivered.count
        router.replace(graph: RouteGraph(routes: routes, endpointCount: endpoints)) { sink, m, _ in delivered.append((Int(sink.index), m)) }
        return Array(delivered[before...])
    }

    func release(source: Int) -> [(sink: Int, message: MIDIMessage)] {
        let before = delivered.count
        router.release(source: id(source)) { sink, m, _ in delivered.append((Int(sink.index), m)) }
        return Array(delivered[before...])
    }
}

private func route(_ from: [Int], _ to: [Int], _ stages: [any RouteStage] = []) -> CompiledRoute {
    CompiledRoute(sources: from.map(id), sinks: to.map(id), stages: stages)
}

private func messages(_ out: [(sink: Int, message: MIDIMessage)]) -> [MIDIMessage] { out.map(\.message) }

@Suite struct RouterTests {
    @Test func fanOutAndMerge() {
        let probe = RouterProbe([route([0, 1], [2, 3])])
        #expect(probe.send(.start, from: 0).map(\.sink) == [2, 3])
        #expect(probe.send(.stop, from: 1).map(\.sink) == [2, 3])
        #expect(probe.send(.stop, from: 2).isEmpty)
    }

    @Test func noteOffFollowsItsNoteOnAcrossTransposeAndRemap() {
        let probe = RouterProbe([route([0], [1], [Transpose(semitones: 12), ChannelRemap(mapping: [ch(0): ch(5)])])])
        #expect(messages(probe.send(.noteOn(channel: ch(0), note: v(60), velocity: v(90)))) == [.noteOn(channel: ch(5), note: v(72), velocity: v(90))])
        // The routes change while the note is held: the release still goes where the note went.
        _ = probe.replace([route([0], [1], [Transpose(semitones: -5)])])
        #expect(messages(probe.send(.noteOff(channel: ch(0), note: v(60), velocity: v(33)))) == [.noteOff(channel: ch(5), note: v(72), velocity: v(33))])
        // And the next note takes the new path.
        #expect(messages(probe.send(.noteOn(channel: ch(0), note: v(60), velocity: v(90)))) == [.noteOn(channel: ch(0), note: v(55), velocity: v(90))])
    }

    @Test func filteredNoteOnsProduceNoNoteOff() {
        let probe = RouterProbe([route([0], [1], [NoteRangeFilter(range: v(60)...v(127))])])
        #expect(probe.send(.noteOn(channel: ch(0), note: v(40), velocity: v(90))).isEmpty)
        _ = probe.replace([route([0], [1])]) // the filter goes away while the key is down
        #expect(probe.send(.noteOff(channel: ch(0), note: v(40), velocity: v(0))).isEmpty)
        #expect(probe.router.counters.unmatchedReleases == 1)
    }

    @Test func velocityCurveReachingZeroStillSoundsAndReleases() {
        let probe = RouterProbe([route([0], [1], [VelocityMap(curve: ValueCurve(output: (low: 0, high: 0)))])])
        #expect(messages(probe.send(.noteOn(channel: ch(0), note: v(60), velocity: v(90)))) == [.noteOn(channel: ch(0), note: v(60), velocity: v(1))])
        #expect(messages(probe.send(.noteOn(channel: ch(0), note: v(60), velocity: v(0)))) == [.noteOff(channel: ch(0), note: v(60), velocity: v(0))])
    }

    @Test func twoSourcesHoldingTheSameNoteGiveOneNoteOffAtTheEnd() {
        let probe = RouterProbe([route([0, 1], [2])])
        probe.send(.noteOn(channel: ch(0), note: v(60), velocity: v(90)), from: 0)
        probe.send(.noteOn(channel: ch(0), note: v(60), velocity: v(80)), from: 1)
        #expect(probe.send(.noteOff(channel: ch(0), note: v(60), velocity: v(0)), from: 0).isEmpty)
        #expect(messages(probe.send(.noteOff(channel: ch(0), note: v(60), velocity: v(0)), from: 1)) == [.noteOff(channel: ch(0), note: v(60), velocity: v(0))])
    }

    @Test func splitSendsEachSideItsOwnNoteOffs() {
        let probe = RouterProbe([
            route([0], [1], [NoteRangeFilter(range: v(0)...v(59)), Transpose(semitones: -12)]),
            route([0], [2], [NoteRangeFilter(range: v(60)...v(127))]),
        ])
        #expect(probe.send(.noteOn(channel: ch(0), note: v(48), velocity: v(1))).map(\.sink) == [1])
        #expect(probe.send(.noteOn(channel: ch(0), note: v(72), velocity: v(1))).map(\.sink) == [2])
        #expect(probe.send(.noteOff(channel: ch(0), note: v(48), velocity: v(0))).map(\.message) == [.noteOff(channel: ch(0), note: v(36), velocity: v(0))])
        #expect(probe.send(.noteOff(channel: ch(0), note: v(72), velocity: v(0))).map(\.sink) == [2])
    }

    @Test func sustainFollowsItsPressAndRenumberedPedalsAreTracked() {
        let probe = RouterProbe([route([0], [1], [ControllerRenumber(mapping: [v(4): v(64)]), ChannelRemap(mapping: [ch(0): ch(2)])])])
        #expect(messages(probe.send(.controlChange(channel: ch(0), controller: v(64), value: v(127)))) == [.controlChange(channel: ch(2), controller: v(64), value: v(127))])
        _ = probe.replace([route([0], [1])])
        #expect(messages(probe.send(.controlChange(channel: ch(0), controller: v(64), value: v(0)))) == [.controlChange(channel: ch(2), controller: v(64), value: v(0))])
        // A foot controller on CC 4 mapped to sustain: its release goes where its press went.
        _ = probe.replace([route([0], [1], [ControllerRenumber(mapping: [v(4): v(64)])])])
        probe.send(.controlChange(channel: ch(0), controller: v(4), value: v(100)))
        probe.send(.controlChange(channel: ch(0), controller: v(4), value: v(120)))
        _ = probe.replace([route([0], [1])])
        #expect(messages(probe.send(.controlChange(channel: ch(0), controller: v(4), value: v(10)))) == [
            .controlChange(channel: ch(0), controller: v(64), value: v(0)),
            .controlChange(channel: ch(0), controller: v(4), value: v(10)),
        ])
    }

    @Test func repeatedNoteOnReleasesTheEarlierOneFirst() {
        let probe = RouterProbe([route([0], [1])])
        probe.send(.noteOn(channel: ch(0), note: v(60), velocity: v(90)))
        _ = probe.replace([route([0], [1], [Transpose(semitones: 1)])])
        #expect(messages(probe.send(.noteOn(channel: ch(0), note: v(60), velocity: v(90)))) == [
            .noteOff(channel: ch(0), note: v(60), velocity: v(0)),
            .noteOn(channel: ch(0), note: v(61), velocity: v(90)),
        ])
    }

    @Test func sinkLeavingOnReloadGetsItsNotesReleased() {
        let probe = RouterProbe([route([0], [1, 2])])
        probe.send(.noteOn(channel: ch(0), note: v(60), velocity: v(90)))
        let released = probe.replace([route([0], [1])])
        #expect(released.map(\.sink) == [2])
        #expect(released.map(\.message) == [.noteOff(channel: ch(0), note: v(60), velocity: v(0))])
        #expect(probe.send(.noteOff(channel: ch(0), note: v(60), velocity: v(0))).map(\.sink) == [1])
    }

    @Test func sourceReleaseLetsGoOfEverythingItHolds() {
        let probe = RouterProbe([route([0, 1], [2])])
        probe.send(.noteOn(channel: ch(0), note: v(60), velocity: v(90)), from: 0)
        probe.send(.noteOn(channel: ch(3), note: v(61), velocity: v(90)), from: 0)
        probe.send(.controlChange(channel: ch(0), controller: v(64), value: v(127)), from: 0)
        probe.send(.noteOn(channel: ch(0), note: v(62), velocity: v(90)), from: 1)
        let released = probe.release(source: 0)
        #expect(Set(released.map { "\($0.message)" }) == Set([
            MIDIMessage.noteOff(channel: ch(0), note: v(60), velocity: v(0)),
            .noteOff(channel: ch(3), note: v(61), velocity: v(0)),
            .controlChange(channel: ch(0), controller: v(64), value: v(0)),
        ].map { "\($0)" }))
        #expect(probe.send(.noteOff(channel: ch(0), note: v(60), velocity: v(0)), from: 0).isEmpty)
    }

    @Test func anEndpointHoldsWhatItsInputsTurnedOnAndWhatSoundsOnItUntilReleased() {
        let probe = RouterProbe([route([0], [1]), route([2], [1])])
        probe.send(.noteOn(channel: ch(0), note: v(60), velocity: v(90)), from: 0)
        probe.send(.controlChange(channel: ch(0), controller: v(64), value: v(127)), from: 2)
        #expect((0..<4).map { probe.router.holds(id($0)) } == [true, true, true, false])
        probe.send(.noteOff(channel: ch(0), note: v(60), velocity: v(0)), from: 0)
        #expect((0..<4).map { probe.router.holds(id($0)) } == [false, true, true, false])
        probe.send(.controlChange(channel: ch(0), controller: v(64), value: v(0)), from: 2)
        #expect((0..<5).map { probe.router.holds(id($0)) } == [false, false, false, false, false])
    }

    @Test func aSmallerGraphReleasesWhatEndpointsBeyondItHoldAndGivesBackTheirRoom() {
        let probe = RouterProbe([route([0], [3]), route([2], [1])])
        probe.send(.noteOn(channel: ch(0), note: v(60), velocity: v(90)), from: 0)
        probe.send(.noteOn(channel: ch(1), note: v(61), velocity: v(90)), from: 2)
        probe.send(.noteOn(channel: ch(1), note: v(62), velocity: v(90)), from: 0)
        let released = probe.replace([route([0], [1])], endpoints: 2)
        #expect(Set(released.map { "\($0.sink) \($0.message)" }) == [
            "3 \(MIDIMessage.noteOff(channel: ch(0), note: v(60), velocity: v(0)))",
            "1 \(MIDIMessage.noteOff(channel: ch(1), note: v(61), velocity: v(0)))",
            "3 \(MIDIMessage.noteOff(channel: ch(1), note: v(62), velocity: v(0)))",
        ])
        #expect((0..<4).map { probe.router.holds(id($0)) } == [false, false, false, false])
        // The room given back is clean when it is taken again.
        #expect(probe.replace([route([0, 2], [3])]).isEmpty)
        #expect(probe.send(.noteOff(channel: ch(1), note: v(61), velocity: v(0)), from: 2).isEmpty)
        #expect(probe.router.counters.unmatchedReleases == 1)
        #expect(probe.send(.noteOn(channel: ch(0), note: v(60), velocity: v(90)), from: 2).map(\.sink) == [3])
    }

    @Test func fullTableDropsNoteOnsInsteadOfSendingThemUntracked() {
        let probe = RouterProbe([route([0], [1])], capacity: 2)
        for note in 60..<63 { probe.send(.noteOn(channel: ch(0), note: v(note), velocity: v(1))) }
        #expect(probe.delivered.count == 2)
        #expect(probe.router.counters.heldTableFull == 1)
        #expect(probe.send(.noteOff(channel: ch(0), note: v(62), velocity: v(0))).isEmpty)
        #expect(probe.send(.noteOff(channel: ch(0), note: v(60), velocity: v(0))).count == 1)
        #expect(probe.send(.noteOn(channel: ch(0), note: v(62), velocity: v(1))).count == 1)
    }

    @Test func polyPressureFollowsTheHeldNote() {
        let probe = RouterProbe([route([0], [1], [Transpose(semitones: 2)])])
        probe.send(.noteOn(channel: ch(0), note: v(60), velocity: v(1)))
        #expect(messages(probe.send(.polyPressure(channel: ch(0), note: v(60), pressure: v(50)))) == [.polyPressure(channel: ch(0), note: v(62), pressure: v(50))])
        #expect(probe.send(.polyPressure(channel: ch(0), note: v(61), pressure: v(50))).isEmpty)
    }

    @Test func eventsFromUnknownEndpointsAreCounted() {
        let probe = RouterProbe([route([0], [1])], endpoints: 2)
        #expect(probe.send(.start, from: 7).isEmpty)
        #expect(probe.router.counters.unknownSource == 1)
    }
}
