import MIDI
import RouteFile
import Routing
import Testing

/// The stages of the one route in a file routing `song` to `tape` with the further keys `lines`.
private func stages(_ lines: String...) throws -> [any RouteStage] {
    let yaml = """
        endpoints:
          song: { file: song.mid }
          tape: { record: tape.mid }
        routes:
          - from: song
            to: tape

        """ + lines.map { "    " + $0 + "\n" }.joined()
    let configuration = try RouteConfiguration.parse(yaml: yaml, file: "/r/r.yaml")
    return configuration.routes.first?.stages ?? []
}

/// `message` after every stage in order, or nil if one dropped it.
private func route(_ message: MIDIMessage, through stages: [any RouteStage]) -> MIDIMessage? {
    var message = message
    for stage in stages where !stage.apply(&message) { return nil }
    return message
}

/// A note-on with plain integers; the values are in range in every test.
private func noteOn(_ channel: UInt8, _ note: UInt8, _ velocity: UInt8 = 100) -> MIDIMessage {
    .noteOn(channel: UInt4(masking: channel), note: UInt7(masking: note), velocity: UInt7(masking: velocity))
}

/// A control change with plain integers; the values are in range in every test.
private func cc(_ channel: UInt8, _ controller: UInt8, _ value: UInt8) -> MIDIMessage {
    .controlChange(channel: UInt4(masking: channel), controller: UInt7(masking: controller), value: UInt7(masking: value))
}

@Suite struct RouteFileStageTests {
    @Test func noKeysMeansNoStages() throws {
        #expect(try stages().isEmpty)
    }

    @Test func onlyPassesTheNamedKinds() throws {
        let only = try stages("only: [note, cc]")
        #expect(route(noteOn(0, 60), through: only) == noteOn(0, 60))
        #expect(route(cc(0, 1, 5), through: only) == cc(0, 1, 5))
        #expect(route(.timingClock, through: only) == nil)
        #expect(route(.programChange(channel: UInt4(masking: 0), program: .zero), through: only) == nil)
    }

    @Test func onlyTakesOneWordAndGroups() throws {
        let transport = try stages("only: transport")
        #expect(route(.start, through: transport) == .start)
        #expect(route(.songPosition(UInt14(masking: 4)), through: transport) == .songPosition(UInt14(masking: 4)))
        #expect(route(.timingClock, through: transport) == nil)
        let channel = try stages("only: [channel]")
        #expect(route(noteOn(3, 60), through: channel) == noteOn(3, 60))
        #expect(route(.sysEx(data: [1]), through: channel) == nil)
    }

    @Test func exceptDropsTheNamedKinds() throws {
        let except = try stages("except: [realtime, sysex]")
        #expect(route(.timingClock, through: except) == nil)
        #expect(route(.activeSensing, through: except) == nil)
        #expect(route(.sysEx(data: [1]), through: except) == nil)
        #expect(route(noteOn(0, 60), through: except) == noteOn(0, 60))
        #expect(route(.songSelect(.zero), through: except) == .songSelect(.zero))
    }

    @Test func channelsFilterInputChannelsWrittenOneToSixteen() throws {
        let channels = try stages("channels: [1, 16]")
        #expect(route(noteOn(0, 60), through: channels) == noteOn(0, 60))
        #expect(route(noteOn(15, 60), through: channels) == noteOn(15, 60))
        #expect(route(noteOn(1, 60), through: channels) == nil)
        #expect(route(noteOn(1, 60), through: try stages("channels: 2")) == noteOn(1, 60))
    }

    @Test(arguments: ["C2..B3", "36..59", "C2..59"])
    func notesFilterARange(_ range: String) throws {
        let notes = try stages("notes: \(range)")
        #expect(route(noteOn(0, 36), through: notes) == noteOn(0, 36))
        #expect(route(noteOn(0, 59), through: notes) == noteOn(0, 59))
        #expect(route(noteOn(0, 35), through: notes) == nil)
        #expect(route(noteOn(0, 60), through: notes) == nil)
    }

    @Test func convertTurnsOneKindIntoAnother() throws {
        let convert = try stages("convert: { from: pressure, to: { cc: 1 } }")
        #expect(route(.channelPressure(channel: UInt4(masking: 2), pressure: UInt7(masking: 64)), through: convert)
            == cc(2, 1, 64))
        let list = try stages("convert: [{ from: { cc: 2 }, to: program }, { from: pitchbend, to: pressure }]")
        #expect(list.count == 2)
        #expect(route(cc(0, 2, 5), through: list) == .programChange(channel: UInt4(masking: 0), program: UInt7(masking: 5)))
    }

    @Test func ccRenumbersControllers() throws {
        let renumber = try stages("cc: { 1: 74, 7: 11 }")
        #expect(route(cc(0, 1, 9), through: renumber) == cc(0, 74, 9))
        #expect(route(cc(0, 7, 9), through: renumber) == cc(0, 11, 9))
        #expect(route(cc(0, 10, 9), through: renumber) == cc(0, 10, 9))
    }

    @Test func ccRangeScalesAndInvertsOneController() throws {
        let invert = try stages("cc-range: { 74: { from: [0, 127], to: [127, 0], curve: 2.0 } }")
        #expect(route(cc(0, 74, 0), through: invert) == cc(0, 74, 127))
        #expect(route(cc(0, 74, 127), through: invert) == cc(0, 74, 0))
        #expect(route(cc(0, 1, 0), through: invert) == cc(0, 1, 0))
        let narrow = try stages("cc-range: { 7: { to: [20, 100] } }")
        #expect(route(cc(0, 7, 0), through: narrow) == cc(0, 7, 20))
        #expect(route(cc(0, 7, 127), through: narrow) == cc(0, 7, 100))
    }

    @Test func transposeMovesNotes() throws {
        #expect(route(noteOn(0, 60), through: try stages("transpose: -12")) == noteOn(0, 48))
        #expect(route(noteOn(0, 60), through: try stages("transpose: 7")) == noteOn(0, 67))
    }

    @Test func velocityForms() throws {
        #expect(route(noteOn(0, 60, 17), through: try stages("velocity: { fixed: 100 }")) == noteOn(0, 60, 100))
        #expect(route(noteOn(0, 60, 100), through: try stages("velocity: { scale: 0.5 }")) == noteOn(0, 60, 50))
        let curve = try stages("velocity: { curve: 1.5, from: [0, 127], to: [20, 127] }")
        #expect(route(noteOn(0, 60, 127), through: curve) == noteOn(0, 60, 127))
        let low = route(noteOn(0, 60, 1), through: curve)
        #expect(low.map { if case .noteOn(_, _, let v) = $0 { v.value >= 20 } else { false } } == true)
    }

    @Test func channelRemapsWithoutFiltering() throws {
        let remap = try stages("channel: { 1: 3 }")
        #expect(route(noteOn(0, 60), through: remap) == noteOn(2, 60))
        #expect(route(noteOn(1, 60), through: remap) == noteOn(1, 60))
        let every = try stages("channel: 16")
        #expect(route(noteOn(0, 60), through: every) == noteOn(15, 60))
        #expect(route(cc(9, 1, 1), through: every) == cc(15, 1, 1))
    }

    @Test func stagesRunInTheFixedOrderWhateverOrderKeysAreWritten() throws {
        let written = try stages(
            "channel: { 1: 2 }", "velocity: { fixed: 90 }", "transpose: 12", "cc-range: { 74: { to: [127, 0] } }",
            "cc: { 1: 74 }", "convert: { from: pressure, to: { cc: 1 } }", "notes: C4..C4", "channels: [1]",
            "only: [note, pressure]")
        let names = written.map { String(describing: type(of: $0)) }
        #expect(names == ["KindFilter", "ChannelFilter", "NoteRangeFilter", "KindConversion", "ControllerRenumber",
                          "ControllerRange", "Transpose", "VelocityMap", "ChannelRemap"])
        // Filters test the message as it arrived; the transpose and remap come after them.
        #expect(route(noteOn(0, 60, 10), through: written) == noteOn(1, 72, 90))
        #expect(route(noteOn(1, 60), through: written) == nil)
        // Pressure becomes cc 1, is renumbered to 74, then inverted.
        #expect(route(.channelPressure(channel: UInt4(masking: 0), pressure: .zero), through: written) == cc(1, 74, 127))
    }
}
