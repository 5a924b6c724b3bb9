import Foundation
@testable import JamBridge
import OSC
import Testing

/// The commands OSC `/jambridge/...` and the control socket's JSON lines carry.
@Suite struct ControlCommandTests {
    @Test func oscMessagesUnderJambridgeAreTheJamsAndTheDrumsCommands() {
        let cases: [(OSCMessage, ControlCommand?)] = [
            (OSCMessage("/jambridge/start"), .jam(.start)),
            (OSCMessage("/jambridge/tempo", [.int32(96)]), .jam(.tempo(96))),
            (OSCMessage("/jambridge/drums/style", [.string("funk")]), .drums(.style("funk"))),
            (OSCMessage("/jambridge/drums/level", [.float(3)]), .drums(.level(3))),
            (OSCMessage("/jambridge/drums/level", [.int32(0)]), .drums(.level(nil))),
            (OSCMessage("/jambridge/drums/mute", [.string("hat"), .int32(1)]), .drums(.mute(["hat"], true))),
            (OSCMessage("/jambridge/drums/mute", [.string("hat"), .float(0)]), .drums(.mute(["hat"], false))),
            (OSCMessage("/jambridge/drums/style", [.int32(1)]), nil),
            (OSCMessage("/jambridge/drums/mute", [.string("hat")]), nil),
            (OSCMessage("/jambridge/start", [.int32(1)]), nil),
        ]
        for (message, command) in cases { #expect(ControlCommand(message) == command, "\(message)") }
    }

    @Test func everyRequestGoesThroughItsJSONLine() {
        let requests: [ControlRequest] = [
            .status, .reload, .command(.jam(.start)), .command(.jam(.stop)), .command(.jam(.tempo(101.5))),
            .command(.drums(.style("/home/me/my style.yaml"))), .command(.drums(.level(2))), .command(.drums(.level(nil))),
            .command(.drums(.mute(["crash", "clap"], true))), .command(.drums(.mute(["hat"], false))),
        ]
        for request in requests { #expect(ControlRequest(json: request.json) == request, "\(request)") }
        #expect(ControlRequest(json: Array(#"{"command": "drums-level"}"#.utf8)) == nil)
    }
}
