import MIDI
import MIDITestSupport
import OSC
import RouteFile
import Testing

let here = SourceLocation(file: "test.yaml", line: 1, column: 1)

/// A route mapping of control entries (and the MIDI-over-OSC family when `midi`).
func routeMapping(_ controls: [(OSCAddressTemplate, OSCControlMapping)], motion: [(OSCAddressTemplate, MotionActivityMapping)] = [],
                  midi: Bool = false) -> OSCRouteMapping {
    OSCRouteMapping(entries: controls.map { OSCMappingEntry(template: $0.0, action: .control($0.1), location: here) }
                        + motion.map { OSCMappingEntry(template: $0.0, action: .motion($0.1), location: here) },
                    midi: midi, location: here)
}

/// `cc: n + 20` on `/1/fader<n:1-8>`.
let faderToCC = OSCControlMapping(target: .controllers([OSCNumber(capture: "n", offset: 20)]), output: (0, 127))

/// An input mapper with a clock, collecting what it sends.
struct MapperProbe {
    var mapper: OSCInputMapper
    var time = 100.0

    init(_ mapping: OSCRouteMapping) { mapper = OSCInputMapper(mapping: mapping) }

    /// The outcome and the MIDI sent for `address` with `arguments`, 10 ms after the previous message.
    mutating func send(_ address: String, _ arguments: OSCArgument...) -> (OSCMapOutcome, [MIDIMessage]) {
        time += 0.01
        var sent: [MIDIMessage] = []
        let outcome = mapper.map(OSCMessage(address, arguments), at: time) { sent.append($0) }
        return (outcome, sent)
    }

    /// Just the MIDI sent.
    mutating func midi(_ address: String, _ arguments: OSCArgument...) -> [MIDIMessage] {
        time += 0.01
        var sent: [MIDIMessage] = []
        _ = mapper.map(OSCMessage(address, arguments), at: time) { sent.append($0) }
        return sent
    }

    /// What ticks every 10 ms for `seconds` send.
    mutating func tick(for seconds: Double) -> [MIDIMessage] {
        var sent: [MIDIMessage] = []
        let end = time + seconds
        while time < end {
            time += 0.01
            mapper.tick(at: time) { sent.append($0) }
        }
        return sent
    }
}

func bend(_ channel: UInt8, _ value: Int) -> MIDIMessage {
    .pitchBend(channel: UInt4(masking: channel), value: UInt14(clamping: value + 8192))
}

@Suite struct OSCInputMapperTests {
    @Test func fadersMapToControllersByTheirNumber() {
        var probe = MapperProbe(routeMapping([(Templates.fader, faderToCC)]))
        #expect(probe.midi("/1/fader3", .float(0.5)) == [cc(0, 23, 64)])
        #expect(probe.midi("/1/fader8", .float(1)) == [cc(0, 28, 127)])
        #expect(probe.midi("/1/fader1", .float(0)) == [cc(0, 21, 0)])
        #expect(probe.send("/1/fader9", .float(1)).0 == .unmatched)
        #expect(probe.send("/2/fader1", .float(1)).0 == .unmatched)
    }

    @Test func anUnchangedValueIsNotSentAgain() {
        var probe = MapperProbe(routeMapping([(Templates.fader, faderToCC)]))
        #expect(probe.midi("/1/fader1", .float(0.5)) == [cc(0, 21, 64)])
        let (outcome, sent) = probe.send("/1/fader1", .float(0.5))
        #expect(outcome == .mapped && sent.isEmpty)
        #expect(probe.midi("/1/fader1", .float(0.502)) == []) // still 64 once rounded
        #expect(probe.midi("/1/fader2", .float(0.5)) == [cc(0, 22, 64)]) // another controller
        #expect(probe.midi("/1/fader1", .float(0.51)) == [cc(0, 21, 65)])
    }

    @Test func valuesAreClampedIntoTheInputRange() {
        var probe = MapperProbe(routeMapping([(Templates.fader, faderToCC)]))
        #expect(probe.midi("/1/fader1", .float(7)) == [cc(0, 21, 127)])
        #expect(probe.midi("/1/fader1", .double(-1e300)) == [cc(0, 21, 0)])
        #expect(probe.midi("/1/fader1", .int64(.max)) == [cc(0, 21, 127)])
    }

    @Test func outputLowAboveHighInverts() {
        let inverted = OSCControlMapping(target: .controllers([.constant(7)]), channel: .constant(2), output: (127, 0))
        var probe = MapperProbe(routeMapping([(Templates.literal("/volume"), inverted)]))
        #expect(probe.midi("/volume", .float(0)) == [cc(1, 7, 127)])
        #expect(probe.midi("/volume", .float(0.25)) == [cc(1, 7, 95)])
        #expect(probe.midi("/volume", .float(1)) == [cc(1, 7, 0)])
    }

    @Test func theExponentShapesTheCurve() {
        var soft = OSCControlMapping(target: .controllers([.constant(1)]), output: (0, 127))
        soft.exponent = 2
        var fast = soft
        fast.exponent = 0.5
        var probe = MapperProbe(routeMapping([(Templates.literal("/soft"), soft), (Templates.literal("/fast"), fast)]))
        #expect(probe.midi("/soft", .float(0.5)) == [cc(0, 1, 32)]) // 0.25 * 127 = 31.75
        #expect(probe.midi("/fast", .float(0.25)) == [cc(0, 1, 64)]) // 0.5 * 127 = 63.5, to even
        #expect(probe.midi("/soft", .float(1)) == [cc(0, 1, 127)])
    }

    @Test func intsDoublesAndBooleansAreNumbers() {
        let knob = OSCControlMapping(target: .controllers([.constant(74)]), input: 0...127, output: (0, 127))
        var probe = MapperProbe(routeMapping([(Templates.literal("/knob"), knob)]))
        #expect(probe.midi("/knob", .int32(64)) == [cc(0, 74, 64)])
        #expect(probe.midi("/knob", .int64(100)) == [cc(0, 74, 100)])
        #expect(probe.midi("/knob", .double(10.4)) == [cc(0, 74, 10)])
        #expect(probe.midi("/knob", .bool(true)) == [cc(0, 74, 127)]) // T is the input range's high end
        #expect(probe.midi("/knob", .bool(false)) == [cc(0, 74, 0)])
    }

    @Test func pushButtonsPlayNotes() {
        let push = OSCControlMapping(target: .note(OSCNumber(capture: "n", offset: 35), velocity: 100),
                                     channel: .constant(10), output: (0, 127))
        var probe = MapperProbe(routeMapping([(Templates.push, push)]))
        #expect(probe.midi("/1/push1", .float(1)) == [noteOn(9, 36, 100)])
        #expect(probe.midi("/1/push1", .float(1)) == []) // a repeated on is not sent again
        #expect(probe.midi("/1/push2", .bool(true)) == [noteOn(9, 37, 100)])
        #expect(probe.midi("/1/push1", .float(0.5)) == [noteOff(9, 36)]) // at the middle: off
        #expect(probe.midi("/1/push1", .float(0)) == [])
        #expect(probe.midi("/1/push2", .bool(false)) == [noteOff(9, 37)])
        #expect(probe.midi("/1/push3", .float(0)) == []) // never on: nothing to turn off
        #expect(probe.midi("/1/push1", .float(0.51)) == [noteOn(9, 36, 100)])
    }

    @Test func anXYPadSendsTwoControllers() {
        let xy = OSCControlMapping(target: .controllers([.constant(12), .constant(13)]), arguments: [0, 1], output: (0, 127))
        var probe = MapperProbe(routeMapping([(Templates.literal("/3/xy"), xy)]))
        #expect(probe.midi("/3/xy", .float(0.25), .float(1)) == [cc(0, 12, 32), cc(0, 13, 127)])
        #expect(probe.midi("/3/xy", .float(0.25), .float(0)) == [cc(0, 13, 0)])
        let (outcome, sent) = probe.send("/3/xy", .float(0.5), .string("y"))
        #expect(outcome == .rejected(OSCRejection(address: "/3/xy", reason: .wrongType(index: 1, typeTag: "s"))))
        #expect(sent.isEmpty) // nothing half-sent
    }

    @Test func pitchIsFourteenBitBend() {
        let pitch = OSCControlMapping(target: .pitchBend, channel: .constant(3), output: (-8192, 8191))
        var probe = MapperProbe(routeMapping([(Templates.literal("/pitch"), pitch)]))
        #expect(probe.midi("/pitch", .float(0)) == [bend(2, -8192)])
        #expect(probe.midi("/pitch", .float(1)) == [bend(2, 8191)])
        #expect(probe.midi("/pitch", .float(0.5)) == [bend(2, 0)]) // -0.5 rounds to even: the centre
        #expect(probe.midi("/pitch", .float(0.75)) == [bend(2, 4095)]) // 4095.25
    }

    @Test func programAndChannelPressure() {
        let program = OSCControlMapping(target: .program, input: 0...127, output: (0, 127))
        let pressure = OSCControlMapping(target: .channelPressure, channel: .constant(16), output: (0, 127))
        var probe = MapperProbe(routeMapping([(Templates.literal("/program"), program), (Templates.literal("/touch"), pressure)]))
        #expect(probe.midi("/program", .int32(5)) == [.programChange(channel: UInt4(masking: 0), program: UInt7(masking: 5))])
        #expect(probe.midi("/program", .int32(5)) == [])
        #expect(probe.midi("/touch", .float(1)) == [.channelPressure(channel: UInt4.max, pressure: .max)])
    }

    @Test func capturedChannelsAndNumbersOutOfRangeAreRejected() {
        let perChannel = OSCAddressTemplate(pieces: [.literal("/ch"), .capture(name: "c", range: nil), .literal("/vol")],
                                            description: "/ch<c>/vol")
        let volume = OSCControlMapping(target: .controllers([.constant(7)]), channel: OSCNumber(capture: "c", offset: 0), output: (0, 127))
        let wide = OSCControlMapping(target: .controllers([OSCNumber(capture: "n", offset: 20)]), output: (0, 127))
        let note = OSCControlMapping(target: .note(OSCNumber(capture: "n", offset: 100), velocity: 1), output: (0, 127))
        let anyPush = OSCAddressTemplate(pieces: [.literal("/key"), .capture(name: "n", range: nil)], description: "/key<n>")
        let unbound = OSCControlMapping(target: .controllers([OSCNumber(capture: "m", offset: 0)]), output: (0, 127))
        var probe = MapperProbe(routeMapping([(perChannel, volume), (Templates.push, wide), (anyPush, note),
                                              (Templates.literal("/unbound"), unbound)]))
        #expect(probe.midi("/ch16/vol", .float(1)) == [cc(15, 7, 127)])
        #expect(probe.send("/ch17/vol", .float(1)).0 == .rejected(OSCRejection(address: "/ch17/vol", reason: .channelOutOfRange(17))))
        #expect(probe.send("/ch0/vol", .float(1)).0 == .rejected(OSCRejection(address: "/ch0/vol", reason: .channelOutOfRange(0))))
        #expect(probe.midi("/1/push107", .float(1)) == [cc(0, 127, 127)])
        #expect(probe.send("/1/push108", .float(1)).0 == .rejected(OSCRejection(address: "/1/push108", reason: .controllerOutOfRange(128))))
        #expect(probe.send("/key28", .float(1)).0 == .rejected(OSCRejection(address: "/key28", reason: .noteOutOfRange(128))))
        #expect(probe.send("/unbound", .float(1)).0 == .rejected(OSCRejection(address: "/unbound", reason: .controllerOutOfRange(nil))))
        #expect(probe.mapper.rejections[.channelOutOfRange] == 2)
        #expect(probe.mapper.rejections[.controllerOutOfRange] == 2)
        #expect(probe.mapper.rejections[.noteOutOfRange] == 1)
        #expect(OSCRejection(address: "/1/push108", reason: .controllerOutOfRange(128)).description
            == "/1/push108: controller 128 is outside 0-127")
    }

    @Test func nonNumbersNaNAndInfinityAreRejectedAndCounted() {
        var probe = MapperProbe(routeMapping([(Templates.fader, faderToCC)]))
        let rejected: [(OSCArgument?, OSCRejection.Reason)] = [
            (.float(.nan), .notFinite(index: 0, typeTag: "f")),
            (.double(.infinity), .notFinite(index: 0, typeTag: "d")),
            (.float(-.infinity), .notFinite(index: 0, typeTag: "f")),
            (.string("0.5"), .wrongType(index: 0, typeTag: "s")),
            (.blob([1, 2]), .wrongType(index: 0, typeTag: "b")),
            (.nil_, .wrongType(index: 0, typeTag: "N")),
            (.midi([0, 0x90, 60, 100]), .wrongType(index: 0, typeTag: "m")),
            (nil, .missingArgument(index: 0, count: 0)),
        ]
        for (argument, reason) in rejected {
            probe.time += 0.01
            var sent: [MIDIMessage] = []
            let outcome = probe.mapper.map(OSCMessage("/1/fader2", argument.map { [$0] } ?? []), at: probe.time) { sent.append($0) }
            #expect(outcome == .rejected(OSCRejection(address: "/1/fader2", reason: reason)))
            #expect(sent.isEmpty)
        }
        #expect(probe.mapper.rejections[.notFinite] == 3)
        #expect(probe.mapper.rejections[.wrongType] == 4)
        #expect(probe.mapper.rejections[.missingArgument] == 1)
        #expect(probe.mapper.rejections.total == 8)
        let text = OSCRejection(address: "/1/fader2", reason: .wrongType(index: 0, typeTag: "s")).description
        #expect(text.contains("/1/fader2") && text.contains("argument 0") && text.contains("'s'"))
        #expect(OSCRejection(address: "/1/fader2", reason: .missingArgument(index: 1, count: 1)).description
            == "/1/fader2: argument 1 is missing (the message has 1 argument)")
        #expect(probe.midi("/1/fader2", .float(1)) == [cc(0, 22, 127)]) // still working
    }

    @Test func argumentsAreSelectedByIndex() {
        let second = OSCControlMapping(target: .controllers([.constant(1)]), arguments: [1], output: (0, 127))
        var probe = MapperProbe(routeMapping([(Templates.literal("/multi"), second)]))
        #expect(probe.midi("/multi", .string("label"), .float(1)) == [cc(0, 1, 127)])
        #expect(probe.send("/multi", .float(1)).0
            == .rejected(OSCRejection(address: "/multi", reason: .missingArgument(index: 1, count: 1))))
    }

    @Test func theFirstMatchingEntryWins() {
        let special = OSCControlMapping(target: .controllers([.constant(1)]), output: (0, 127))
        let one = OSCAddressTemplate(pieces: [.literal("/1/fader1")], description: "/1/fader1")
        var probe = MapperProbe(routeMapping([(one, special), (Templates.fader, faderToCC)]))
        #expect(probe.midi("/1/fader1", .float(1)) == [cc(0, 1, 127)])
        #expect(probe.midi("/1/fader2", .float(1)) == [cc(0, 22, 127)])
    }

    @Test func smoothingSettlesOnTheFinalValueThroughTicks() {
        var smooth = faderToCC
        smooth.smoothing = 0.1
        var probe = MapperProbe(routeMapping([(Templates.fader, smooth)]))
        #expect(probe.midi("/1/fader1", .float(0)) == [cc(0, 21, 0)]) // the first value is taken as it is
        #expect(!probe.mapper.needsTick)
        #expect(probe.midi("/1/fader1", .float(1)) == []) // no time has passed toward 127 yet
        #expect(probe.mapper.needsTick)
        let ramp = probe.tick(for: 2)
        #expect(ramp.count > 5)
        #expect(ramp.last == cc(0, 21, 127))
        let values = ramp.compactMap { message -> Int? in
            if case .controlChange(_, _, let v) = message { Int(v.value) } else { nil }
        }
        #expect(values == values.sorted() && Set(values).count == values.count) // rising, each value once
        #expect(!probe.mapper.needsTick)
        #expect(probe.tick(for: 0.1).isEmpty)
    }

    @Test func smoothingFollowsAJitteryFaderWithFewerMessages() {
        var smooth = faderToCC
        smooth.smoothing = 0.2
        var probe = MapperProbe(routeMapping([(Templates.fader, smooth)]))
        var raw = MapperProbe(routeMapping([(Templates.fader, faderToCC)]))
        var generator = SeededGenerator(seed: 6)
        var smoothCount = 0, rawCount = 0
        for _ in 0..<300 {
            let value = OSCArgument.float(0.5 + Float.random(in: -0.05...0.05, using: &generator))
            smoothCount += probe.midi("/1/fader4", value).count
            rawCount += raw.midi("/1/fader4", value).count
        }
        #expect(smoothCount * 3 < rawCount)
        _ = probe.midi("/1/fader4", .float(0.25))
        #expect(probe.tick(for: 3).last == cc(0, 24, 32))
    }

    @Test func theMIDIFamilyIsUnderstoodWhenOn() {
        var probe = MapperProbe(routeMapping([], midi: true))
        #expect(probe.midi("/note", .int32(60), .int32(100)) == [noteOn(0, 60, 100)])
        #expect(probe.midi("/note", .int32(60), .int32(0)) == [noteOff(0, 60)])
        #expect(probe.midi("/note", .int32(10), .float(60.4), .double(99.6)) == [noteOn(9, 60, 100)])
        #expect(probe.midi("/cc", .int32(74), .int32(1)) == [cc(0, 74, 1)])
        #expect(probe.midi("/cc", .int32(2), .int32(74), .int64(127)) == [cc(1, 74, 127)])
        #expect(probe.midi("/pitchbend", .int32(-8192)) == [bend(0, -8192)])
        #expect(probe.midi("/pitchbend", .int32(16), .int32(8191)) == [bend(15, 8191)])
        #expect(probe.midi("/program", .int32(3)) == [.programChange(channel: UInt4(masking: 0), program: UInt7(masking: 3))])
        #expect(probe.midi("/program", .int32(4), .int32(3)) == [.programChange(channel: UInt4(masking: 3), program: UInt7(masking: 3))])
        #expect(probe.midi("/pressure", .int32(90)) == [.channelPressure(channel: UInt4(masking: 0), pressure: UInt7(masking: 90))])
        #expect(probe.midi("/pressure", .int32(5), .int32(90)) == [.channelPressure(channel: UInt4(masking: 4), pressure: UInt7(masking: 90))])
        #expect(probe.midi("/cc", .int32(74), .int32(1)) == [cc(0, 74, 1)]) // passed on as sent, even unchanged
        #expect(probe.send("/other", .int32(1)).0 == .unmatched)
    }

    @Test func familyMessagesOutOfRangeAreRejected() {
        var probe = MapperProbe(routeMapping([], midi: true))
        let cases: [(String, [OSCArgument], OSCRejection.Reason)] = [
            ("/note", [.int32(128), .int32(1)], .valueOutOfRange(index: 0, value: 128, allowed: 0...127)),
            ("/note", [.int32(17), .int32(60), .int32(1)], .valueOutOfRange(index: 0, value: 17, allowed: 1...16)),
            ("/cc", [.int32(1), .float(127.6)], .valueOutOfRange(index: 1, value: 128, allowed: 0...127)),
            ("/pitchbend", [.int32(8192)], .valueOutOfRange(index: 0, value: 8192, allowed: -8192...8191)),
            ("/pitchbend", [.double(-1e300)], .valueOutOfRange(index: 0, value: -1e300, allowed: -8192...8191)),
            ("/program", [.int32(0), .int32(1)], .valueOutOfRange(index: 0, value: 0, allowed: 1...16)),
            ("/cc", [.int32(1)], .wrongArgumentCount(count: 1, allowed: 2...3)),
            ("/pressure", [], .wrongArgumentCount(count: 0, allowed: 1...2)),
            ("/note", [.bool(true), .int32(1)], .wrongType(index: 0, typeTag: "T")),
            ("/cc", [.int32(1), .float(.nan)], .notFinite(index: 1, typeTag: "f")),
        ]
        for (address, arguments, reason) in cases {
            var sent: [MIDIMessage] = []
            let outcome = probe.mapper.map(OSCMessage(address, arguments), at: 1) { sent.append($0) }
            #expect(outcome == .rejected(OSCRejection(address: address, reason: reason)))
            #expect(sent.isEmpty)
        }
        #expect(probe.mapper.rejections[.valueOutOfRange] == 6)
        #expect(probe.mapper.rejections.total == cases.count)
        #expect(OSCRejection(address: "/cc", reason: .valueOutOfRange(index: 1, value: 128, allowed: 0...127)).description
            == "/cc: argument 1 is 128, outside 0...127")
    }

    @Test func theFamilyIsOffUnlessAskedFor() {
        var probe = MapperProbe(routeMapping([(Templates.fader, faderToCC)]))
        #expect(probe.send("/cc", .int32(1), .int32(2)).0 == .unmatched)
        var both = MapperProbe(routeMapping([(Templates.fader, faderToCC)], midi: true))
        #expect(both.midi("/cc", .int32(1), .int32(2)) == [cc(0, 1, 2)])
        #expect(both.midi("/1/fader1", .float(1)) == [cc(0, 21, 127)])
    }
}
