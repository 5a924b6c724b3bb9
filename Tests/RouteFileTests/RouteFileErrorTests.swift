import MIDI
import RouteFile
import Testing

/// The mistakes `yaml` holds, as `line:column: message`, when parsed as `r.yaml`.
private func mistakes(_ yaml: String) -> [String] {
    do {
        _ = try RouteConfiguration.parse(yaml: yaml, file: "r.yaml")
        return []
    } catch {
        return error.errors.map { "\($0.location.line):\($0.location.column): \($0.message)" }
    }
}

/// A file with a MIDI file `song`, a recorder `tape` and one route from song to tape whose
/// further keys are `lines` (each indented as a route key, starting on line 7).
private func route(_ lines: String...) -> String {
    """
    endpoints:
      song: { file: song.mid }
      tape: { record: tape.mid }
    routes:
      - from: song
        to: tape

    """ + lines.map { "    " + $0 + "\n" }.joined()
}

@Suite struct RouteFileErrorTests {
    @Test func descriptionsNameFileLineAndColumn() {
        let error = RouteFileError(location: SourceLocation(file: "a.yaml", line: 3, column: 7), message: "bad")
        #expect(error.description == "a.yaml:3:7: bad")
        let errors = RouteFileErrors(errors: [error, error])
        #expect(errors.description == "a.yaml:3:7: bad\na.yaml:3:7: bad")
    }

    @Test func yamlSyntaxErrorUsesLibyamlsPosition() {
        #expect(mistakes("routes:\n  - from: [a, b\n") == [
            "3:1: not valid YAML: did not find expected ',' or ']' (while parsing a flow sequence at line 2)",
        ])
    }

    @Test func tabInIndentation() {
        #expect(mistakes("routes:\n\t- from: a\n") == ["2:1: tab in the indentation; YAML indents with spaces only"])
    }

    @Test func duplicateKey() {
        #expect(mistakes(route("transpose: 1", "transpose: 2")) == [
            "8:5: key 'transpose' is already written at r.yaml:7:5 in the same mapping; keep one",
        ])
        // The key written again is looked for in its own mapping only: not in the list item before it, nor in a mapping
        // nested deeper.
        #expect(mistakes("routes:\n  - from: a\n    to: b\n  - from: c\n    osc: { to: x }\n    to: d\n    to: e\n") == [
            "7:5: key 'to' is already written at r.yaml:6:5 in the same mapping; keep one",
        ])
        #expect(mistakes("endpoints:\n  song: { file: a.mid, loop: true, file: b.mid }\n") == [
            "2:36: key 'file' is already written at r.yaml:2:11 in the same mapping; keep one",
        ])
    }

    @Test func anAliasIsItsAnchoredValueAgain() {
        #expect(mistakes("""
            endpoints:
              song: { file: song.mid }
              tape: { record: tape.mid }
            routes:
              - { from: song, to: tape, only: &notes [note], velocity: &soft { fixed: 40 } }
              - { from: song, to: tape, only: *notes, velocity: *soft, transpose: 1 }
            """) == [])
        #expect(mistakes("routes:\n  - from: *nowhere\n") == [
            "2:11: not valid YAML: found undefined alias: a value starting with '*' is read as a YAML alias; quote it, "
                + "such as alsa: \"*USB*\"",
        ])
    }

    @Test func aFileThatExpandsOrNestsBeyondBoundIsRefused() {
        // Each list repeats the one before ten times: 10^7 values once the aliases are repeated.
        var laughs = "a: &l0 [x, x, x, x, x, x, x, x, x, x]\n"
        for level in 1...6 {
            laughs += "l\(level): &l\(level) [" + Array(repeating: "*l\(level - 1)", count: 10).joined(separator: ", ") + "]\n"
        }
        #expect(mistakes(laughs) == [
            "6:10: not valid YAML: more than 200000 values once its aliases are repeated",
        ])
        #expect(mistakes(String(repeating: "[", count: 100_000)) == ["1:201: not valid YAML: nested more than 200 deep"])
    }

    @Test func oneDocumentAndOnlyText() {
        #expect(mistakes("routes: []\n---\nroutes: []\n") == [
            "2:1: not valid YAML: but found another document (expected a single document in the stream at line 1)",
        ])
        #expect(mistakes("routes: []\n# \u{7}\n") == ["2:3: not readable as YAML text: control characters are not allowed"])
    }

    @Test func emptyFile() {
        let expected = ["1:1: the route file is empty; write a mapping with 'endpoints:' and 'routes:'"]
        #expect(mistakes("") == expected)
        #expect(mistakes("# nothing but a comment\n") == expected)
    }

    @Test func documentNotAMapping() {
        #expect(mistakes("- from: a\n") == [
            "1:1: a route file is a mapping with the keys 'endpoints' and 'routes', not a list",
        ])
    }

    @Test func unknownTopLevelKey() {
        #expect(mistakes("rotes: []\nfoo: 1\n") == [
            "1:1: unknown top-level key 'rotes'; did you mean 'routes'? the known keys are "
                + "'session', 'alsa', 'clock', 'activity', 'drums', 'http', 'endpoints' and 'routes'",
            "2:1: unknown top-level key 'foo'; the known keys are 'session', 'alsa', 'clock', 'activity', 'drums', "
                + "'http', 'endpoints' and 'routes'",
        ])
    }

    @Test func unknownRouteKeySuggestsClosest() {
        #expect(mistakes(route("chanel: 3")) == ["7:5: unknown key 'chanel'; did you mean 'channel'?"])
        #expect(mistakes(route("trnaspose: 3")) == ["7:5: unknown key 'trnaspose'; did you mean 'transpose'?"])
    }

    @Test func unknownRouteKeyListsAll() {
        #expect(mistakes(route("banana: 3")) == [
            "7:5: unknown key 'banana' in a route; the keys are from, to, only, except, channels, notes, "
                + "convert, cc, cc-range, transpose, velocity, channel, osc, echo, control",
        ])
    }

    @Test func unknownEndpointKey() {
        #expect(mistakes("endpoints:\n  song: { file: a.mid, lop: true }\n") == [
            "2:24: unknown key 'lop'; did you mean 'loop'?",
        ])
    }

    @Test func endpointWithoutKind() {
        #expect(mistakes("endpoints:\n  song: { loop: true }\n") == [
            "2:3: endpoint 'song' has 'loop' but no 'file:', the MIDI file to play; write it, such as "
                + "'song: { file: song.mid, loop: true }'",
        ])
        #expect(mistakes("endpoints:\n  song: {}\n") == [
            "2:3: endpoint 'song' needs 'file: PATH' (play a MIDI file) or 'record: PATH' (record to a MIDI file)",
        ])
        #expect(mistakes("endpoints:\n  song:\n") == [
            "2:3: endpoint 'song' needs a mapping with 'file: PATH' (play a MIDI file) or 'record: PATH' "
                + "(record to a MIDI file)",
        ])
    }

    @Test func endpointBothFileAndRecord() {
        #expect(mistakes("endpoints:\n  x: { file: a.mid, record: b.mid }\n") == [
            "2:21: an endpoint is either 'file' (a source) or 'record' (a sink), not both",
        ])
    }

    @Test func emptyPath() {
        #expect(mistakes("endpoints:\n  song: { file: \"\" }\n  tape: { record: }\n") == [
            "2:17: empty path; write the MIDI file's path, relative to this route file",
            "3:11: empty path; write the MIDI file's path, relative to this route file",
        ])
    }

    @Test func loopIsABoolean() {
        #expect(mistakes("endpoints:\n  song: { file: a.mid, loop: sometimes }\n") == [
            "2:30: 'loop' is true or false, not 'sometimes'",
        ])
    }

    @Test func sessionIsReserved() {
        #expect(mistakes("endpoints:\n  session: { file: a.mid }\n") == [
            "2:3: 'session' is the reserved name of the network session endpoint; choose another name",
        ])
        #expect(mistakes("endpoints:\n  tape: { record: t.mid }\nroutes:\n  - from: session\n    to: tape\n") == [])
    }

    @Test func unknownEndpointInFromOrTo() {
        let yaml = """
            endpoints:
              song: { file: song.mid }
              tape: { record: tape.mid }
            routes:
              - from: sng
                to: [tape, radio]
            """
        #expect(mistakes(yaml) == [
            "5:11: unknown endpoint 'sng'; did you mean 'song'? declared endpoints: song, tape",
            "6:16: unknown endpoint 'radio'; declared endpoints: song, tape",
        ])
        #expect(mistakes("routes:\n  - from: a\n    to: b\n") == [
            "2:11: unknown endpoint 'a'; no endpoints are declared (add them under 'endpoints:')",
            "3:9: unknown endpoint 'b'; no endpoints are declared (add them under 'endpoints:')",
        ])
    }

    @Test func routeFromNowhereAndToNowhere() {
        let yaml = """
            endpoints:
              song: { file: song.mid }
              tape: { record: tape.mid }
            routes:
              - to: tape
              - from: song
              - from: []
                to:
            """
        #expect(mistakes(yaml) == [
            "5:5: a route from nowhere: add 'from:' with an endpoint name or a list of names",
            "6:5: a route to nowhere: add 'to:' with an endpoint name or a list of names",
            "7:11: a route from nowhere: 'from' needs an endpoint name or a list of names",
            "8:5: a route to nowhere: 'to' needs an endpoint name or a list of names",
        ])
    }

    @Test func sinkAsSourceAndSourceAsSink() {
        let yaml = """
            endpoints:
              song: { file: song.mid }
              tape: { record: tape.mid }
            routes:
              - from: tape
                to: song
            """
        #expect(mistakes(yaml) == [
            "5:11: 'tape' is a recorder and cannot send; use it in 'to:', not 'from:'",
            "6:9: 'song' is a MIDI file player and cannot receive; use it in 'from:', not 'to:'",
        ])
    }

    @Test func channelsAreOneToSixteen() {
        #expect(mistakes(route("channels: [0, 17, one]")) == [
            "7:16: channel 0 does not exist; channels are 1-16",
            "7:19: channel 17 does not exist; channels are 1-16",
            "7:23: 'one' is not a number; a channel is 1-16",
        ])
        #expect(mistakes(route("channel: { 1: 17 }")) == ["7:19: channel 17 does not exist; channels are 1-16"])
        #expect(mistakes(route("channel: 0")) == ["7:14: channel 0 does not exist; channels are 1-16"])
    }

    @Test func controllersAreZeroTo127() {
        #expect(mistakes(route("cc: { 1: 128 }")) == ["7:14: controller 128 does not exist; controllers are 0-127"])
        #expect(mistakes(route("cc: { mod: 1 }")) == ["7:11: 'mod' is not a number; a controller number is 0-127"])
        #expect(mistakes(route("cc-range: { 300: { curve: 2 } }")) == [
            "7:17: controller 300 does not exist; controllers are 0-127",
        ])
    }

    @Test func fixedVelocityIsOneTo127() {
        #expect(mistakes(route("velocity: { fixed: 0 }")) == [
            "7:24: fixed velocity 0 is out of range; velocities are 1-127 (0 would be a note-off)",
        ])
        #expect(mistakes(route("velocity: { fixed: loud }")) == ["7:24: 'loud' is not a number; a velocity is 1-127"])
    }

    @Test func badNoteNamesAndInvertedRange() {
        #expect(mistakes(route("notes: H2..C4")) == [
            "7:12: 'H2' is not a note; write a number 0-127 or a name such as C4, F#3 or Bb2 (C4 = 60)",
        ])
        #expect(mistakes(route("notes: 60..200")) == [
            "7:12: '200' is not a note; write a number 0-127 or a name such as C4, F#3 or Bb2 (C4 = 60)",
        ])
        #expect(mistakes(route("notes: C4..C2")) == [
            "7:12: the note range C4..C2 goes down; write the low note first: C2..C4",
        ])
        #expect(mistakes(route("notes: 1..2..3")) == [
            "7:12: '1..2..3' is not a note range; write LOW..HIGH, such as C2..B3 or 36..59",
        ])
    }

    @Test func onlyAndExceptTogether() {
        #expect(mistakes(route("only: [note]", "except: [cc]")) == [
            "8:5: 'only' and 'except' together: use one of them",
        ])
    }

    @Test func unknownMessageKind() {
        let kinds = "note, poly-pressure, cc, program, pressure, pitchbend, sysex, mtc, song-position, song-select, "
            + "tune-request, clock, start, continue, stop, active-sensing, reset, transport, realtime, channel, system"
        #expect(mistakes(route("only: [notes, on]")) == [
            "7:12: unknown message kind 'notes'; did you mean 'note'? the kinds are \(kinds)",
            "7:19: unknown message kind 'on'; the kinds are \(kinds)",
        ])
        #expect(mistakes(route("except: []")) == ["7:13: 'except' needs at least one message kind: \(kinds)"])
    }

    @Test func nonNumericValues() {
        #expect(mistakes(route("transpose: up")) == [
            "7:16: 'up' is not a number; 'transpose' is -127 to 127 semitones",
        ])
        #expect(mistakes(route("velocity: { scale: much }")) == [
            "7:24: velocity 'scale' is a factor of 0 or more (0.8 softer, 1.2 louder), not 'much'",
        ])
        #expect(mistakes(route("cc-range: { 74: { from: [0, x] } }")) == [
            "7:33: 'x' is not a number; a value is 0-127",
        ])
    }

    @Test func curveMustBePositiveAndFinite() {
        let message = "'curve' is a number above 0 (1 is straight, 2 bends slowly up, 0.5 quickly up), not"
        #expect(mistakes(route("velocity: { curve: 0 }")) == ["7:24: \(message) '0'"])
        #expect(mistakes(route("velocity: { curve: -1.5 }")) == ["7:24: \(message) '-1.5'"])
        #expect(mistakes(route("cc-range: { 1: { curve: .inf } }")) == ["7:29: \(message) '.inf'"])
        #expect(mistakes(route("cc-range: { 1: { curve: nan } }")) == ["7:29: \(message) 'nan'"])
    }

    @Test func scaleMustNotBeNegative() {
        #expect(mistakes(route("velocity: { scale: -0.5 }")) == [
            "7:24: velocity 'scale' is a factor of 0 or more (0.8 softer, 1.2 louder), not '-0.5'",
        ])
    }

    @Test func velocityFormsDoNotMix() {
        #expect(mistakes(route("velocity: { scale: 0.5, fixed: 3 }")) == [
            "7:15: 'velocity' takes one of { scale: 0.8 }, { fixed: 100 } or "
                + "{ curve: 1.5, from: [0, 127], to: [20, 127] }, not a mix",
        ])
    }

    @Test func transposeRange() {
        #expect(mistakes(route("transpose: -128")) == [
            "7:16: transpose -128 is out of range; write -127 to 127 semitones",
        ])
        #expect(mistakes(route("transpose: 127")) == [])
    }

    @Test func curveRangesAndPairs() {
        #expect(mistakes(route("cc-range: { 74: { from: [100, 20] } }")) == [
            "7:29: the input range [100, 20] goes down; write [low, high] and invert with 'to'",
        ])
        #expect(mistakes(route("cc-range: { 74: { to: [0] } }")) == [
            "7:27: 'to' needs two values [low, high], each 0-127",
        ])
        #expect(mistakes(route("velocity: { to: [0, 128] }")) == [
            "7:25: value 128 is out of range; values are 0-127",
        ])
    }

    @Test func convertMistakes() {
        #expect(mistakes(route("convert: { from: aftertouch, to: { cc: 1 } }")) == [
            "7:22: unknown kind 'aftertouch' to convert; write pressure, pitchbend, program or { cc: N }",
        ])
        #expect(mistakes(route("convert: { from: pressure }")) == [
            "7:14: 'convert' needs both 'from' and 'to', such as { from: pressure, to: { cc: 1 } }",
        ])
        #expect(mistakes(route("convert: { from: { cc: 1 }, to: { cc: 1 } }")) == [
            "7:14: converting cc 1 to cc 1 changes nothing; convert to another kind",
        ])
    }

    @Test func everyMistakeOfAFileIsReportedInOrder() {
        let yaml = """
            endpoints:
              song: { file: song.mid }
              tape: { record: tape.mid }
            routes:
              - from: song
                to: tape
                velocity: { fixed: 0 }
                channels: [17]
              - from: nobody
                to: tape
            bogus: 1
            """
        #expect(mistakes(yaml).map { $0.prefix(5) } == ["7:24:", "8:16:", "9:11:", "11:1:"])
    }
}
