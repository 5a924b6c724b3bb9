import OSC
import Testing

@Suite struct OSCMessageTests {
    @Test func typeTagsAndDescriptionFollowTheArguments() {
        let message = OSCMessage("/3/xy", [.float(0.25), .float(1), .bool(true), .int32(-3), .string("a")])
        #expect(message.typeTags == "ffTis")
        #expect(message.description == "/3/xy ffTis 0.25 1.0 T -3 \"a\"")
    }
}
