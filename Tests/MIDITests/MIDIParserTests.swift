import MIDI
import MIDITestSupport
import Testing

/// Everything the parser emits for `bytes`.
func parseAll(_ bytes: [UInt8], maxSysEx: Int = 1 << 20) -> [MIDIParserOutput] {
    var parser = MIDIParser(maxSysExLength: maxSysEx)
    var out: [MIDIParserOutput] = []
    parser.parse(bytes) { out.append($0) }
    return out
}

/// The bytes of `messages`.
func encodeAll(_ messages: [MIDIMessage], runningStatus: Bool = false) -> [UInt8] {
    var encoder = MIDIEncoder(runningStatus: runningStatus)
    var bytes: [UInt8] = []
    for m in messages { encoder.encode(m, into: &bytes) }
    return bytes
}

private let c1 = UInt4(masking: 0)
private func v(_ x: UInt8) -> UInt7 { UInt7(masking: x) }

@Suite struct MIDIParserTests {
    static let examples: [(MIDIMessage, [UInt8])] = [
        (.noteOff(channel: c1, note: v(60), velocity: v(64)), [0x80, 60, 64]),
        (.noteOn(channel: UInt4(masking: 9), note: v(36), velocity: v(100)), [0x99, 36, 100]),
        (.polyPressure(channel: c1, note: v(60), pressure: v(5)), [0xA0, 60, 5]),
        (.controlChange(channel: UInt4(masking: 15), controller: v(7), value: v(127)), [0xBF, 7, 127]),
        (.programChange(channel: c1, program: v(33)), [0xC0, 33]),
        (.channelPressure(channel: c1, pressure: v(90)), [0xD0, 90]),
        (.pitchBend(channel: c1, value: UInt14.center), [0xE0, 0x00, 0x40]),
        (.pitchBend(channel: c1, value: UInt14.max), [0xE0, 0x7F, 0x7F]),
        (.sysEx(data: [0x7E, 0x7F, 0x09, 0x01]), [0xF0, 0x7E, 0x7F, 0x09, 0x01, 0xF7]),
        (.sysEx(data: []), [0xF0, 0xF7]),
        (.mtcQuarterFrame(v(0x35)), [0xF1, 0x35]),
        (.songPosition(UInt14(masking: 300)), [0xF2, 0x2C, 0x02]),
        (.songSelect(v(3)), [0xF3, 3]),
        (.tuneRequest, [0xF6]),
        (.timingClock, [0xF8]), (.start, [0xFA]), (.continue, [0xFB]), (.stop, [0xFC]),
        (.activeSensing, [0xFE]), (.systemReset, [0xFF]),
    ]

    @Test func everyKindHasItsExactBytesBothWays() {
        for (message, bytes) in Self.examples {
            #expect(encodeAll([message]) == bytes, "\(message)")
            #expect(parseAll(bytes) == [.message(message)], "\(message)")
        }
    }

    @Test func runningStatusIsReadAndWritten() {
        let notes: [MIDIMessage] = [
            .noteOn(channel: c1, note: v(60), velocity: v(100)),
            .noteOn(channel: c1, note: v(64), velocity: v(100)),
            .noteOn(channel: c1, note: v(60), velocity: v(0)),
        ]
        #expect(encodeAll(notes, runningStatus: true) == [0x90, 60, 100, 64, 100, 60, 0])
        #expect(parseAll([0x90, 60, 100, 64, 100, 60, 0]) == notes.map { .message($0) })
        // Program change runs too: one data byte each.
        #expect(parseAll([0xC0, 1, 2]) == [.message(.programChange(channel: c1, program: v(1))),
                                          .message(.programChange(channel: c1, program: v(2)))])
    }

    @Test func systemCommonCancelsRunningStatusRealTimeDoesNot() {
        var encoder = MIDIEncoder(runningStatus: true)
        var bytes: [UInt8] = []
        encoder.encode(.noteOn(channel: c1, note: v(1), velocity: v(1)), into: &bytes)
        encoder.encode(.timingClock, into: &bytes)
        encoder.encode(.noteOn(channel: c1, note: v(2), velocity: v(2)), into: &bytes)
        encoder.encode(.songSelect(v(1)), into: &bytes)
        encoder.encode(.noteOn(channel: c1, note: v(3), velocity: v(3)), into: &bytes)
        #expect(bytes == [0x90, 1, 1, 0xF8, 2, 2, 0xF3, 1, 0x90, 3, 3])
        // A data byte after a system common has no status: reported, then skipped.
        #expect(parseAll([0x90, 1, 1, 0xF3, 1, 2, 2]) == [
            .message(.noteOn(channel: c1, note: v(1), velocity: v(1))),
            .message(.songSelect(v(1))),
            .error(.dataByteWithoutStatus(2)),
        ])
    }

    @Test func realTimeBytesInsideMessagesAndSysExComeOutAtOnce() {
        #expect(parseAll([0x90, 0xF8, 60, 0xFA, 100]) == [
            .message(.timingClock), .message(.start),
            .message(.noteOn(channel: c1, note: v(60), velocity: v(100))),
        ])
        #expect(parseAll([0xF0, 1, 0xF8, 2, 0xFC, 0xF7]) == [
            .message(.timingClock), .message(.stop), .message(.sysEx(data: [1, 2])),
        ])
    }

    @Test func garbageIsReportedOnceAndTheStreamResynchronises() {
        #expect(parseAll([1, 2, 3, 4, 0x90, 60, 1]) == [
            .error(.dataByteWithoutStatus(1)),
            .message(.noteOn(channel: c1, note: v(60), velocity: v(1))),
        ])
    }

    @Test func interruptedMessagesAndSysExAreReportedAndTheInterrupterSurvives() {
        #expect(parseAll([0x90, 60, 0xF6]) == [.error(.incompleteMessage(status: 0x90)), .message(.tuneRequest)])
        #expect(parseAll([0x90, 0xC0, 5]) == [.error(.incompleteMessage(status: 0x90)),
                                             .message(.programChange(channel: c1, program: v(5)))])
        #expect(parseAll([0xF0, 1, 2, 0x90, 60, 1]) == [.error(.unterminatedSysEx),
                                                       .message(.noteOn(channel: c1, note: v(60), velocity: v(1)))])
        #expect(parseAll([0xF7]) == [.error(.strayEndOfExclusive)])
        #expect(parseAll([0xF4, 0xF5, 0xF9, 0xFD]) == [.error(.undefinedStatus(0xF4)), .error(.undefinedStatus(0xF5)),
                                                      .error(.undefinedStatus(0xF9)), .error(.undefinedStatus(0xFD))])
    }

    @Test func sysExLongerThanTheCapIsDroppedWithAClearError() {
        let long: [UInt8] = [0xF0] + Array(repeating: 5, count: 11) + [0xF7, 0xF8]
        let out = parseAll(long, maxSysEx: 10)
        #expect(out == [.error(.sysExTooLong(limit: 10)), .message(.timingClock)])
        if case .error(let e) = out[0] { #expect(e.description.contains("longer than 10 bytes")) }
        #expect(parseAll([0xF0] + Array(repeating: 5, count: 10) + [0xF7], maxSysEx: 10) == [.message(.sysEx(data: Array(repeating: 5, count: 10)))])
    }

    @Test func sixtyFourKiBSysExPassesIntact() {
        var generator = SeededGenerator(seed: 64)
        let data = (0..<65536).map { _ in generator.seven().value }
        #expect(parseAll(encodeAll([.sysEx(data: data)])) == [.message(.sysEx(data: data))])
    }
}

@Suite struct MIDIStreamPropertyTests {
    @Test(arguments: [false, true])
    func randomStreamsSurviveEncodeThenParse(runningStatus: Bool) {
        var generator = SeededGenerator(seed: runningStatus ? 2 : 1)
        for _ in 0..<300 {
            let messages = (0..<Int.random(in: 0...60, using: &generator)).map { _ in generator.message() }
            let parsed = parseAll(encodeAll(messages, runningStatus: runningStatus))
            #expect(parsed == messages.map { .message($0) })
        }
    }

    @Test func realTimeInjectedAnywhereComesOutAndLeavesTheRestUnchanged() {
        var generator = SeededGenerator(seed: 3)
        for _ in 0..<300 {
            let messages = (0..<Int.random(in: 1...40, using: &generator)).map { _ in generator.message(maxSysEx: 20) }
            var bytes = encodeAll(messages, runningStatus: Bool.random(using: &generator))
            var injected: [MIDIMessage] = []
            for _ in 0..<Int.random(in: 1...8, using: &generator) {
                let realTime = generator.realTimeMessage()
                let at = Int.random(in: 0...bytes.count, using: &generator)
                bytes.insert(encodeAll([realTime])[0], at: at)
                injected.append(realTime)
            }
            let parsed = parseAll(bytes).compactMap { output -> MIDIMessage? in
                if case .message(let m) = output { return m }
                return nil
            }
            let isInjectedKind: (MIDIMessage) -> Bool = { m in m.kind.rawValue >= MIDIMessageKind.timingClock.rawValue }
            #expect(parsed.filter { !isInjectedKind($0) } == messages.filter { !isInjectedKind($0) })
            #expect(parsed.filter(isInjectedKind).count == messages.filter(isInjectedKind).count + injected.count)
        }
    }

    @Test func afterRandomGarbageTheNextValidStreamParses() {
        var generator = SeededGenerator(seed: 4)
        for _ in 0..<300 {
            let garbage = (0..<Int.random(in: 0...30, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let messages = (0..<Int.random(in: 1...20, using: &generator)).map { _ in generator.message(maxSysEx: 20) }
            // Close whatever the garbage left open: F7 ends a SysEx, and a lone F7 is just reported.
            let parsed = parseAll(garbage + [0xF7] + encodeAll(messages))
            let tail = Array(parsed.suffix(messages.count))
            #expect(tail == messages.map { .message($0) })
        }
    }
}
