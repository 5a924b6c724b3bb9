import MIDI
import MIDITestSupport
import OSC
import RouteFile
import Testing

/// Everything `message` makes the feedback mapper send.
func feedback(_ mapper: inout OSCFeedbackMapper, _ message: MIDIMessage) -> [OSCMessage] {
    var sent: [OSCMessage] = []
    mapper.feedback(for: message) { osc, _ in sent.append(osc) }
    return sent
}

/// The float arguments of `message` (nil if one is not a float).
func floats(_ message: OSCMessage?) -> [Float]? {
    guard let message else { return nil }
    var values: [Float] = []
    for argument in message.arguments {
        guard case .float(let value) = argument else { return nil }
        values.append(value)
    }
    return values
}

@Suite struct OSCFeedbackMapperTests {
    static let xy = OSCControlMapping(target: .controllers([.constant(12), .constant(13)]), arguments: [0, 1], output: (0, 127))
    static let pitch = OSCControlMapping(target: .pitchBend, output: (-8192, 8191))
    static let push = OSCControlMapping(target: .note(OSCNumber(capture: "n", offset: 35), velocity: 100), output: (0, 127))

    @Test func aControllerMovesItsFader() {
        var mapper = OSCFeedbackMapper(mappings: [routeMapping([(Templates.fader, faderToCC)])])
        #expect(feedback(&mapper, cc(0, 23, 127)) == [OSCMessage("/1/fader3", [.float(1)])])
        #expect(feedback(&mapper, cc(0, 20, 127)) == []) // n = 0 is outside 1-8
        #expect(feedback(&mapper, cc(0, 29, 127)) == []) // n = 9 is outside 1-8
        #expect(feedback(&mapper, cc(1, 23, 127)) == []) // another channel
        #expect(feedback(&mapper, noteOn(0, 23)) == [])
    }

    /// Every value of every target maps back to an address and value that map forward to the same MIDI.
    @Test func feedbackIsTheInverseOfTheInputMapping() throws {
        var curved = faderToCC
        curved.exponent = 2.5
        curved.input = -1...1
        var inverted = OSCControlMapping(target: .controllers([.constant(7)]), channel: .constant(5), input: 0...10, output: (120, 10))
        inverted.exponent = 0.3
        let entries: [(OSCAddressTemplate, OSCControlMapping)] = [
            (Templates.fader, curved), (Templates.literal("/vol"), inverted), (Templates.literal("/pitch"), Self.pitch),
            (Templates.literal("/prog"), OSCControlMapping(target: .program, channel: .constant(16), output: (0, 127))),
        ]
        var messages: [MIDIMessage] = []
        for n in 21...28 { messages += (0...127).map { cc(0, UInt8(n), UInt8($0)) } }
        messages += (10...120).map { cc(4, 7, UInt8($0)) }
        messages += stride(from: 0, through: 16383, by: 7).map { MIDIMessage.pitchBend(channel: UInt4(masking: 0), value: UInt14(masking: UInt16($0))) }
        messages += (0...127).map { MIDIMessage.programChange(channel: .max, program: UInt7(masking: UInt8($0))) }
        var back = OSCFeedbackMapper(mappings: [routeMapping(entries)])
        for message in messages {
            let sent = feedback(&back, message)
            try #require(sent.count == 1, "\(message) gave \(sent)")
            var forward = OSCInputMapper(mapping: routeMapping(entries))
            var mapped: [MIDIMessage] = []
            #expect(forward.map(sent[0], at: 0) { mapped.append($0) } == .mapped)
            #expect(mapped == [message], "\(message) -> \(sent[0]) -> \(mapped)")
        }
    }

    @Test func anXYPadKeepsTheOtherAxis() {
        var mapper = OSCFeedbackMapper(mappings: [routeMapping([(Templates.literal("/3/xy"), Self.xy)])])
        #expect(floats(feedback(&mapper, cc(0, 12, 127)).first) == [1, 0])
        #expect(floats(feedback(&mapper, cc(0, 13, 127)).first) == [1, 1])
        #expect(floats(feedback(&mapper, cc(0, 12, 0)).first) == [0, 1])
        #expect(mapper.fullState().count == 1)
    }

    @Test func notesLightButtons() {
        var mapper = OSCFeedbackMapper(mappings: [routeMapping([(Templates.push, Self.push)])])
        #expect(feedback(&mapper, noteOn(0, 36, 1)) == [OSCMessage("/1/push1", [.float(1)])])
        #expect(feedback(&mapper, noteOff(0, 36)) == [OSCMessage("/1/push1", [.float(0)])])
        #expect(feedback(&mapper, noteOn(0, 40, 0)) == [OSCMessage("/1/push5", [.float(0)])])
        #expect(feedback(&mapper, noteOn(0, 34)) == []) // n would be -1
    }

    @Test func capturesTheMessageDoesNotDetermineSendNothing() {
        let everyFaderOneController = OSCControlMapping(target: .controllers([.constant(74)]), output: (0, 127))
        let twoCaptures = OSCControlMapping(target: .controllers([OSCNumber(capture: "n", offset: 0)]),
                                            channel: OSCNumber(capture: "page", offset: 0), output: (0, 127))
        var mapper = OSCFeedbackMapper(mappings: [routeMapping([(Templates.fader, everyFaderOneController),
                                                                (Templates.rotary, twoCaptures)])])
        #expect(feedback(&mapper, cc(0, 74, 1)) == [OSCMessage("/1/rotary74", [.float(Float(1.0 / 127))])])
        #expect(feedback(&mapper, cc(4, 3, 1)) == []) // page 5 is outside 1-4
        #expect(feedback(&mapper, cc(1, 3, 127)) == [OSCMessage("/2/rotary3", [.float(1)])])
    }

    @Test func motionEntriesSendNothing() {
        var mapper = OSCFeedbackMapper(mappings: [routeMapping([], motion: [(Templates.literal("/accxyz"), MotionActivityMapping())])])
        #expect(feedback(&mapper, cc(0, 11, 100)) == [])
        #expect(mapper.fullState().isEmpty)
    }

    @Test func theFamilySpeaksMIDIOverOSCChannelFirst() {
        var mapper = OSCFeedbackMapper(mappings: [routeMapping([(Templates.fader, faderToCC)]), routeMapping([], midi: true)])
        #expect(feedback(&mapper, noteOn(2, 60, 90)) == [OSCMessage("/note", [.int32(3), .int32(60), .int32(90)])])
        #expect(feedback(&mapper, noteOff(2, 60, 40)) == [OSCMessage("/note", [.int32(3), .int32(60), .int32(0)])])
        #expect(feedback(&mapper, cc(0, 21, 127)) == [OSCMessage("/1/fader1", [.float(1)]), OSCMessage("/cc", [.int32(1), .int32(21), .int32(127)])])
        #expect(feedback(&mapper, bend(15, -8192)) == [OSCMessage("/pitchbend", [.int32(16), .int32(-8192)])])
        #expect(feedback(&mapper, .programChange(channel: UInt4(masking: 1), program: UInt7(masking: 9)))
            == [OSCMessage("/program", [.int32(2), .int32(9)])])
        #expect(feedback(&mapper, .channelPressure(channel: UInt4(masking: 1), pressure: UInt7(masking: 9)))
            == [OSCMessage("/pressure", [.int32(2), .int32(9)])])
        #expect(feedback(&mapper, .timingClock) == [])
        #expect(feedback(&mapper, .polyPressure(channel: UInt4(masking: 0), note: .zero, pressure: .zero)) == [])
    }

    @Test func theFullStateHoldsTheLastMessagePerAddress() {
        var mapper = OSCFeedbackMapper(mappings: [routeMapping([(Templates.fader, faderToCC), (Templates.literal("/pitch"), Self.pitch)],
                                                               midi: true)])
        for message in [cc(0, 21, 0), cc(0, 22, 64), cc(0, 21, 127), bend(0, 0), noteOn(0, 60), cc(0, 22, 127), cc(1, 22, 5)] {
            _ = feedback(&mapper, message)
        }
        #expect(mapper.fullState() == [
            OSCMessage("/1/fader1", [.float(1)]), OSCMessage("/cc", [.int32(1), .int32(21), .int32(127)]),
            OSCMessage("/1/fader2", [.float(1)]), OSCMessage("/cc", [.int32(1), .int32(22), .int32(127)]),
            OSCMessage("/pitch", [.float(Float(8192.0 / 16383))]), OSCMessage("/pitchbend", [.int32(1), .int32(0)]),
            OSCMessage("/cc", [.int32(2), .int32(22), .int32(5)]),
        ])
    }

    @Test func aControllersOwnValueIsNotEchoedBackToIt() {
        var filter = EchoFilter<String>()
        filter.record(cc(0, 21, 100), from: "phone A")
        #expect(filter.admits(cc(0, 21, 100), to: "phone A") == false)
        #expect(filter.admits(cc(0, 21, 100), to: "phone B") == true)
        #expect(filter.admits(cc(0, 21, 99), to: "phone A") == true) // another value: it must follow
        #expect(filter.admits(cc(0, 21, 100), to: "phone A") == true) // and its own earlier value no longer counts
        #expect(filter.admits(cc(1, 21, 100), to: "phone A") == true)

        filter.record(bend(0, -1), from: "phone A")
        #expect(filter.admits(bend(0, -1), to: "phone A") == false)
        filter.record(noteOn(0, 36, 100), from: "phone A")
        #expect(filter.admits(noteOn(0, 36, 100), to: "phone A") == false)
        filter.record(noteOff(0, 36), from: "phone A")
        #expect(filter.admits(noteOn(0, 36, 0), to: "phone A") == false)
        #expect(filter.admits(noteOn(0, 36, 100), to: "phone A") == true)
        filter.record(.programChange(channel: UInt4(masking: 0), program: .zero), from: "phone A")
        filter.forget("phone A")
        #expect(filter.admits(.programChange(channel: UInt4(masking: 0), program: .zero), to: "phone A") == true)
        #expect(filter.admits(.start, to: "phone A") == true)
    }

    /// The whole loop: phone A moves a fader, the session hears it, phone B follows and A is not echoed.
    @Test func inputThroughFeedbackToTheOtherControllers() {
        let mapping = routeMapping([(Templates.fader, faderToCC)])
        var input = OSCInputMapper(mapping: mapping)
        var output = OSCFeedbackMapper(mappings: [mapping])
        var filter = EchoFilter<String>()
        var delivered: [String: [OSCMessage]] = [:]
        _ = input.map(OSCMessage("/1/fader2", [.float(0.7)]), at: 1) { midi in
            filter.record(midi, from: "A")
            output.feedback(for: midi) { osc, _ in
                for phone in ["A", "B"] where filter.admits(midi, to: phone) { delivered[phone, default: []].append(osc) }
            }
        }
        #expect(delivered["A"] == nil)
        #expect(delivered["B"]?.map(\.address) == ["/1/fader2"])
        let value = floats(delivered["B"]?.first)?.first ?? -1
        #expect(abs(value - 0.7) < 0.5 / 127)
    }
}
