import OSC
import RouteFile
import Testing

/// Templates built from pieces, as the route-file reader builds them.
enum Templates {
    /// `/1/fader<n:1-8>`
    static let fader = OSCAddressTemplate(pieces: [.literal("/1/fader"), .capture(name: "n", range: 1...8)],
                                          description: "/1/fader<n:1-8>")
    /// `/1/push<n>`
    static let push = OSCAddressTemplate(pieces: [.literal("/1/push"), .capture(name: "n", range: nil)],
                                         description: "/1/push<n>")
    /// `/<page>/rotary<n>`: two captures.
    static let rotary = OSCAddressTemplate(
        pieces: [.literal("/"), .capture(name: "page", range: 1...4), .literal("/rotary"), .capture(name: "n", range: nil)],
        description: "/<page:1-4>/rotary<n>")

    /// A template of plain text.
    static func literal(_ address: String) -> OSCAddressTemplate {
        OSCAddressTemplate(pieces: [.literal(address)], description: address)
    }
}

@Suite struct OSCTemplateMatchingTests {
    @Test func capturesDigitsWithinTheirRange() {
        #expect(Templates.fader.match("/1/fader3") == [3])
        #expect(Templates.fader.match("/1/fader8") == [8])
        #expect(Templates.fader.match("/1/fader9") == nil)
        #expect(Templates.fader.match("/1/fader0") == nil)
        #expect(Templates.rotary.match("/2/rotary17") == [2, 17])
        #expect(Templates.rotary.match("/5/rotary17") == nil)
        #expect(Templates.push.match("/1/push0") == [0])
    }

    @Test func literalTextMustMatchExactly() {
        #expect(Templates.fader.match("/1/Fader3") == nil)
        #expect(Templates.fader.match("/1/fader3/z") == nil)
        #expect(Templates.fader.match("/2/fader3") == nil)
        #expect(Templates.fader.match("") == nil)
        #expect(Templates.literal("/pitch").match("/pitch") == [])
        #expect(Templates.literal("/pitch").match("/pitch2") == nil)
    }

    @Test func aCaptureIsOneToNineDigitsWithoutLeadingZero() {
        #expect(Templates.fader.match("/1/fader") == nil)
        #expect(Templates.fader.match("/1/fader03") == nil)
        #expect(Templates.fader.match("/1/fader-3") == nil)
        #expect(Templates.push.match("/1/push999999999") == [999_999_999])
        #expect(Templates.push.match("/1/push1000000000") == nil)
        #expect(Templates.push.match("/1/push" + String(repeating: "9", count: 400)) == nil)
        #expect(Templates.push.match("/1/push٣") == nil) // an Arabic-Indic digit is not a decimal digit here
    }

    @Test func matchingReusesTheCaptureBuffer() {
        var captures = [42, 43, 44]
        #expect(Templates.rotary.match("/1/rotary2", into: &captures))
        #expect(captures == [1, 2])
        #expect(!Templates.rotary.match("/1/rotary", into: &captures))
    }

    @Test func buildsTheAddressBackFromCaptures() throws {
        #expect(Templates.fader.address(captures: [3]) == "/1/fader3")
        #expect(Templates.rotary.address(captures: [4, 0]) == "/4/rotary0")
        #expect(Templates.fader.address(captures: [9]) == nil)
        #expect(Templates.fader.address(captures: [-1]) == nil)
        #expect(Templates.fader.address(captures: []) == nil)
        #expect(Templates.fader.address(captures: [1, 2]) == nil)
        #expect(Templates.push.address(captures: [1_000_000_000]) == nil)
        #expect(Templates.literal("/pitch").address(captures: []) == "/pitch")
        for address in ["/1/rotary1", "/4/rotary123456789", "/3/rotary0"] {
            let captures = try #require(Templates.rotary.match(address))
            #expect(Templates.rotary.address(captures: captures) == address)
        }
    }

    @Test func numbersEvaluateAndSolveForTheirCapture() {
        let ccPlus20 = OSCNumber(capture: "n", offset: 20)
        #expect(ccPlus20.value(capturing: 3) == 23)
        #expect(ccPlus20.captureValue(giving: 23) == 3)
        #expect(ccPlus20.captureValue(giving: 5) == -15) // solvable, but no address has a negative capture
        #expect(OSCNumber.constant(7).value(capturing: 99) == 7)
        #expect(OSCNumber.constant(7).captureValue(giving: 7) == nil)
        #expect(OSCNumber(capture: "n", offset: Int.max).value(capturing: 1) == nil)
        #expect(OSCNumber(capture: "n", offset: Int.min).captureValue(giving: 1) == nil)
    }
}
