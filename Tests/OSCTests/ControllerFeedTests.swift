import MIDI
import MIDITestSupport
import OSC
import RouteFile
import Testing

/// A feedback mapper for `/1/fader<n:1-8>` as controllers 21-28, with the MIDI-over-OSC family.
private func faders() -> OSCFeedbackMapper {
    OSCFeedbackMapper(mappings: [routeMapping([(Templates.fader, faderToCC)], midi: true)])
}

/// Feeds `message` back to `feed`; returns what was sent and how many messages were held back.
private func offer(_ message: MIDIMessage, through mapper: inout OSCFeedbackMapper, to feed: inout ControllerFeed) -> (sent: [OSCMessage], heldBack: Int) {
    var sent: [OSCMessage] = [], heldBack = 0
    mapper.feedback(for: message) { osc, index in
        if !feed.offer(osc, stateIndex: index, send: { sent.append($0) }) { heldBack += 1 }
    }
    return (sent, heldBack)
}

@Suite struct ControllerFeedTests {
    @Test func encodedByteCountIsWhatTheEncoderWrites() throws {
        let messages = [
            OSCMessage("/a"), OSCMessage("/abc"), OSCMessage("/1/fader1", [.float(0.5)]),
            OSCMessage("/cc", [.int32(1), .int32(7), .int32(100)]),
            OSCMessage("/x", [.string(""), .string("abc"), .string("abcd"), .blob([1]), .blob([1, 2, 3, 4]), .int64(-1),
                              .double(0.25), .bool(true), .bool(false), .nil_, .impulse, .midi([0, 0x90, 60, 100]),
                              .char(65), .timetag(1)]),
            OSCMessage("/many", Array(repeating: .float(1), count: 64)),
        ]
        var buffer: [UInt8] = []
        for message in messages {
            try OSCPacket.encode(message, into: &buffer)
            #expect(message.encodedByteCount == buffer.count, "\(message)")
        }
    }

    @Test func aControllerIsSentAtMostFourTimesWhatItSent() {
        var mapper = faders()
        for n in 1...8 { _ = feedbackOf(cc(0, UInt8(20 + n), 100), &mapper) }
        let fullState = mapper.fullState().map(\.encodedByteCount).reduce(0, +)
        #expect(fullState == 8 * 20 + 8 * 24)
        // A stranger's one 20-byte datagram: 80 bytes of the state, then nothing more however the session moves.
        var feed = ControllerFeed(stateCount: mapper.stateCount)
        feed.earn(byteCount: 20)
        var sent: [OSCMessage] = []
        feed.catchUp(on: mapper) { sent.append($0) }
        var heldBack = 0
        for value in 0..<100 {
            let result = offer(cc(0, 21, UInt8(value)), through: &mapper, to: &feed)
            sent += result.sent
            heldBack += result.heldBack
        }
        #expect(sent.map(\.encodedByteCount).reduce(0, +) <= ControllerFeed.earningRatio * 20)
        #expect(sent.map(\.address) == ["/1/fader1", "/cc", "/1/fader2"]) // 20 + 24 + 20 of 80 bytes
        #expect(heldBack == 200)
    }

    @Test func aControllerThatKeepsTalkingGetsEveryChange() {
        var mapper = faders()
        var feed = ControllerFeed(stateCount: mapper.stateCount)
        var sent: [OSCMessage] = []
        for value in 0..<128 {
            feed.earn(byteCount: 20) // a fader move of its own: 80 bytes, enough for the 44 of the next change
            let result = offer(cc(0, 22, UInt8(value)), through: &mapper, to: &feed)
            #expect(result.heldBack == 0)
            sent += result.sent
        }
        #expect(sent.count == 256)
        #expect(sent.filter { $0.address == "/cc" }.map { $0.arguments[2] } == (0..<128).map { .int32(Int32($0)) })
    }

    @Test func heldBackChangesArriveLaterWithTheirLatestValuesInStateOrder() {
        var mapper = faders()
        var feed = ControllerFeed(stateCount: mapper.stateCount)
        feed.earn(byteCount: 11) // 44 bytes: one fader and its /cc
        #expect(offer(cc(0, 21, 1), through: &mapper, to: &feed).sent.count == 2)
        // Without credit: fader 2 and 1 change, fader 2 twice, and a note (the state keeps no /note) goes by.
        for message in [cc(0, 22, 5), cc(0, 21, 7), cc(0, 22, 9), noteOn(0, 60)] {
            #expect(offer(message, through: &mapper, to: &feed).heldBack > 0)
        }
        feed.earn(byteCount: 1000)
        var sent: [OSCMessage] = []
        feed.catchUp(on: mapper) { sent.append($0) }
        #expect(sent.map(\.description) == [
            "/1/fader1 f \(Float(7) / 127)", "/cc iii 1 21 7", "/1/fader2 f \(Float(9) / 127)", "/cc iii 1 22 9",
        ])
        // Nothing more is owed.
        sent = []
        feed.catchUp(on: mapper) { sent.append($0) }
        #expect(sent.isEmpty)
    }

    @Test func aNewControllerIsOwedTheWholeStateAndCatchesUpAsItSends() {
        var mapper = faders()
        for value in 0..<70 { _ = feedbackOf(cc(0, UInt8(value), 1), &mapper) } // 70 /cc slots, 8 of them faders too
        #expect(mapper.stateCount == 78)
        var feed = ControllerFeed(stateCount: mapper.stateCount)
        var sent: [OSCMessage] = []
        var earned = 0
        while sent.count < mapper.stateCount {
            let before = sent.count
            feed.earn(byteCount: 12) // a small "/ping"-like datagram: 48 bytes, two entries or three
            earned += 12
            feed.catchUp(on: mapper) { sent.append($0) }
            #expect(sent.count > before)
            #expect(sent.map(\.encodedByteCount).reduce(0, +) <= ControllerFeed.earningRatio * earned)
        }
        #expect(sent == mapper.fullState())
    }

    @Test func anEchoedChangeIsNotOwedAndAReplacedStateOwesNothing() {
        var mapper = faders()
        _ = feedbackOf(cc(0, 21, 3), &mapper)
        var feed = ControllerFeed(stateCount: mapper.stateCount)
        feed.markCurrent(0) // the controller made /1/fader1's value itself
        feed.earn(byteCount: 100)
        var sent: [OSCMessage] = []
        feed.catchUp(on: mapper) { sent.append($0) }
        #expect(sent.map(\.address) == ["/cc"])
        var replaced = ControllerFeed(stateCount: 2)
        replaced.stateWasReplaced()
        replaced.earn(byteCount: 100)
        replaced.catchUp(on: faders()) { sent.append($0) }
        #expect(sent.count == 1)
    }

    @Test func creditIsCapped() {
        var feed = ControllerFeed(stateCount: 0)
        feed.earn(byteCount: 1_000_000)
        #expect(feed.credit == ControllerFeed.maximumCredit)
    }
}

/// Everything `message` makes `mapper` send (its state updated).
private func feedbackOf(_ message: MIDIMessage, _ mapper: inout OSCFeedbackMapper) -> [OSCMessage] {
    var sent: [OSCMessage] = []
    mapper.feedback(for: message) { osc, _ in sent.append(osc) }
    return sent
}
