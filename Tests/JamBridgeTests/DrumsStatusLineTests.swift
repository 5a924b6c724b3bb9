@testable import JamBridge
import JSON
import Testing

/// The drums' line of `jambridge status` says plainly which style plays and which comes next (issue 33, item 10).
@Suite struct DrumsStatusLineTests {
    private func drums(style: String, declared: String, next: String? = nil) -> DaemonStatus.Drums {
        DaemonStatus.Drums(style: style, declaredStyle: declared, nextStyle: next, level: 2, levels: 5, levelKept: false,
                           playing: true, bar: 3, beat: 1, beatsPerBar: 4, muted: [], notes: 0, audio: nil)
    }

    @Test func theStyleThatWaitsForTheBarLineIsSaidSoAndOneChosenByCommandIsSetAgainstTheRouteFiles() throws {
        #expect(drums(style: "rock", declared: "rock").line == "drums: rock, level 2 of 5 (following the activity), bar 3 beat 1")
        #expect(drums(style: "rock", declared: "rock", next: "funk").line
                == "drums: rock, funk from the next bar, level 2 of 5 (following the activity), bar 3 beat 1")
        #expect(drums(style: "funk", declared: "rock").line
                == "drums: funk (the route files say rock), level 2 of 5 (following the activity), bar 3 beat 1")
        #expect(drums(style: "funk", declared: "rock", next: "rock").line
                == "drums: funk, rock from the next bar, level 2 of 5 (following the activity), bar 3 beat 1")
        // In the JSON, nextStyle is there only while a change waits.
        let json = { (drums: DaemonStatus.Drums) in String(decoding: try JSONWriter.status().bytes(drums), as: UTF8.self) }
        #expect(try json(drums(style: "rock", declared: "rock", next: "funk")).contains(#""nextStyle":"funk""#))
        #expect(try !json(drums(style: "rock", declared: "rock")).contains("nextStyle"))
    }
}
