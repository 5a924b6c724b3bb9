import MIDI
import Routing
import Testing

private let c1 = UInt4(masking: 0)
private func v(_ x: Int) -> UInt7 { UInt7(masking: UInt8(x)) }

/// `stage` applied to `message`: the result, or nil if dropped.
func applied(_ stage: some RouteStage, _ message: MIDIMessage) -> MIDIMessage? {
    var m = message
    return stage.apply(&m) ? m : nil
}

@Suite struct StageTests {
    @Test func transposeDropsNotesPushedOutOfRange() {
        for note in 0...127 {
            for shift in [-128, -12, 0, 7, 127, Int.max] {
                let out = applied(Transpose(semitones: shift), .noteOn(channel: c1, note: v(note), velocity: v(1)))
                let target = note.addingReportingOverflow(shift)
                if !target.overflow, (0...127).contains(target.partialValue) {
                    #expect(out == .noteOn(channel: c1, note: v(target.partialValue), velocity: v(1)))
                } else {
                    #expect(out == nil)
                }
            }
        }
        #expect(applied(Transpose(semitones: 5), .controlChange(channel: c1, controller: v(1), value: v(2))) ==
            .controlChange(channel: c1, controller: v(1), value: v(2)))
    }

    @Test func velocityNeverReachesZeroAndFixedIsFixed() {
        let silent = VelocityMap(curve: ValueCurve(output: (low: 0, high: 0)))
        let loud = VelocityMap(fixed: v(100))
        for velocity in 1...127 {
            #expect(applied(silent, .noteOn(channel: c1, note: v(60), velocity: v(velocity))) == .noteOn(channel: c1, note: v(60), velocity: v(1)))
            #expect(applied(loud, .noteOn(channel: c1, note: v(60), velocity: v(velocity))) == .noteOn(channel: c1, note: v(60), velocity: v(100)))
        }
        #expect(applied(VelocityMap(fixed: v(0)), .noteOn(channel: c1, note: v(1), velocity: v(9))) == .noteOn(channel: c1, note: v(1), velocity: v(1)))
    }

    @Test func curvesScaleInvertAndShape() {
        #expect(ValueCurve().table().map(\.value) == (0...127).map { UInt8($0) })
        #expect(ValueCurve(output: (low: 127, high: 0)).table().map(\.value) == (0...127).map { UInt8(127 - $0) })
        let soft = ValueCurve(exponent: 2).table()
        #expect(soft[0].value == 0 && soft[127].value == 127 && soft[64].value < 64)
        let fast = ValueCurve(exponent: 0.5).table()
        #expect(fast[64].value > 64)
        #expect(ValueCurve.scale(0.5).table()[100].value == 50)
        #expect(ValueCurve.scale(10).table()[100].value == 127)
        #expect(ValueCurve(input: 20...40).table()[10].value == 0)
        #expect(ValueCurve(input: 20...40).table()[50].value == 127)
        // Bad parameters never trap.
        #expect(ValueCurve(exponent: .nan).table().count == 128)
        #expect(ValueCurve.scale(.infinity).table()[1].value == 0)
    }

    @Test func conversionsKeepTheChannelAndMapValues() {
        let toCC = KindConversion(from: .channelPressure, to: .controller(v(1)))
        #expect(applied(toCC, .channelPressure(channel: UInt4(masking: 3), pressure: v(77))) == .controlChange(channel: UInt4(masking: 3), controller: v(1), value: v(77)))
        let toBend = KindConversion(from: .controller(v(2)), to: .pitchBend)
        #expect(applied(toBend, .controlChange(channel: c1, controller: v(2), value: v(64))) == .pitchBend(channel: c1, value: .center))
        #expect(applied(toBend, .controlChange(channel: c1, controller: v(2), value: v(127))) == .pitchBend(channel: c1, value: .max))
        #expect(applied(toBend, .controlChange(channel: c1, controller: v(2), value: v(0))) == .pitchBend(channel: c1, value: UInt14(masking: 0)))
        #expect(applied(toBend, .controlChange(channel: c1, controller: v(3), value: v(5))) == .controlChange(channel: c1, controller: v(3), value: v(5)))
        let fromBend = KindConversion(from: .pitchBend, to: .controller(v(9)))
        #expect(applied(fromBend, .pitchBend(channel: c1, value: .max)) == .controlChange(channel: c1, controller: v(9), value: v(127)))
        // Widening is monotonic over every value.
        var previous = -1
        for value in 0...127 {
            guard case .pitchBend(_, let bend)? = applied(toBend, .controlChange(channel: c1, controller: v(2), value: v(value))) else {
                Issue.record("not converted"); return
            }
            #expect(Int(bend.value) > previous)
            previous = Int(bend.value)
        }
    }

    @Test func filtersAndRemaps() {
        let channels = ChannelFilter(channels: [UInt4(masking: 1)])
        #expect(applied(channels, .programChange(channel: c1, program: v(1))) == nil)
        #expect(applied(channels, .programChange(channel: UInt4(masking: 1), program: v(1))) != nil)
        #expect(applied(channels, .start) == .start)
        let remap = ChannelRemap(mapping: [c1: UInt4(masking: 9)])
        #expect(applied(remap, .pitchBend(channel: c1, value: .center)) == .pitchBend(channel: UInt4(masking: 9), value: .center))
        #expect(applied(remap, .pitchBend(channel: UInt4(masking: 2), value: .center)) == .pitchBend(channel: UInt4(masking: 2), value: .center))
        let range = NoteRangeFilter(range: v(36)...v(59))
        #expect(applied(range, .noteOn(channel: c1, note: v(60), velocity: v(1))) == nil)
        #expect(applied(range, .polyPressure(channel: c1, note: v(36), pressure: v(1))) != nil)
        let kinds = KindFilter(passing: [MIDIMessageKinds(.controlChange)])
        #expect(applied(kinds, .start) == nil)
        let renumber = ControllerRenumber(mapping: [v(1): v(74)])
        #expect(applied(renumber, .controlChange(channel: c1, controller: v(1), value: v(5))) == .controlChange(channel: c1, controller: v(74), value: v(5)))
        let ccRange = ControllerRange(controller: v(74), curve: ValueCurve(output: (low: 127, high: 0)))
        #expect(applied(ccRange, .controlChange(channel: c1, controller: v(74), value: v(0))) == .controlChange(channel: c1, controller: v(74), value: v(127)))
        #expect(applied(ccRange, .controlChange(channel: c1, controller: v(7), value: v(0))) == .controlChange(channel: c1, controller: v(7), value: v(0)))
    }
}
