import Drums
import Foundation
import MIDI
import RouteFile
import Testing

/// The `drums:` block and style files.
@Suite struct RouteFileDrumsTests {
    private let routes = """
        endpoints:
          synth: { alsa: "FLUID*" }
        routes:
          - { from: drums, to: synth }

        """

    @Test func anEmptyBlockPlaysRockOnTheBuiltInKitAndTurnsTheJamOn() throws {
        let configuration = try parse("drums:\n" + routes)
        let drums = try #require(configuration.drums)
        #expect(drums.style == BuiltinStyles.style("rock") && drums.kit == .builtIn && drums.level == nil && drums.audio == nil)
        #expect(drums.channel.value == 9 && drums.note(of: .kick).value == 36)
        #expect(configuration.jam != nil)
        #expect(configuration.endpoints.contains { $0.name == "drums" && $0.kind == .drums })
        #expect(configuration.routes.first?.from == ["drums"])
    }

    @Test func everyKey() throws {
        let drums = try #require(try parse("""
            drums:
              style: funk
              kit: /usr/share/hydrogen/data/drumkits/GMRockKit
              voices: { kick: "Kick Long" }
              level: 3
              seed: 42
              mute: [crash, clap]
              audio: { device: "hw:Loopback,0", period: 128, periods: 2 }
              notes: { channel: 16, kick: 35, snare: D2 }

            """ + routes).drums)
        #expect(drums.style.name == "funk" && drums.styleName == "funk")
        #expect(drums.kit == .path("/usr/share/hydrogen/data/drumkits/GMRockKit") && drums.voices == [.kick: "Kick Long"])
        #expect(drums.level == 3 && drums.seed == 42 && drums.muted == [.crash, .clap])
        #expect(drums.audio == DrumsDeclaration.Audio(device: "hw:Loopback,0", period: 128, periods: 2))
        #expect(drums.channel.value == 15 && drums.note(of: .kick).value == 35 && drums.note(of: .snare).value == 38)
        #expect(try parse("drums: { audio: default }\n" + routes).drums?.audio == DrumsDeclaration.Audio())
    }

    @Test func mistakesAreLocated() {
        #expect(locatedMistakes("""
            drums:
              style: rok
              level: 12
              mute: [crsh]
              audio: { period: 5000 }
              notes: { kik: 35 }
              tempo: 90

            """ + routes) == [
            "r.yaml:2:10: unknown style 'rok'; did you mean 'rock'? the built-in styles are rock, funk, bossa, six-eight, "
                + "and a style file is named by its path (such as './mine.yaml')",
            "r.yaml:3:10: 'level' is 'follow' (the session's activity decides) or a level 1-9 to keep",
            "r.yaml:4:10: unknown voice 'crsh'; did you mean 'crash'? the voices are " + DrumVoice.allCases.map(\.rawValue).joined(separator: ", "),
            "r.yaml:5:20: 'period' is 64-1024 frames (256 is 5.3 ms at 48 kHz)",
            "r.yaml:6:12: unknown key 'kik'; did you mean 'kick'?",
            "r.yaml:7:3: unknown key 'tempo' in the 'drums' block; the keys are style, kit, voices, level, seed, mute, audio, notes",
        ])
    }

    @Test func theDrumsNameIsTakenOnlyWhenTheBlockIsWritten() {
        let own = "endpoints:\n  drums: { alsa: \"TR-8\" }\nroutes:\n  - { from: drums, to: drums }\n"
        #expect(locatedMistakes(own).isEmpty)
        #expect(locatedMistakes("drums: {}\n" + own) == [
            "r.yaml:3:3: 'drums' is the drum sequencer's notes when a 'drums' block is written (at r.yaml:1:1); give this endpoint another name",
        ])
        #expect(locatedMistakes("drums: {}\nendpoints:\n  synth: { alsa: x }\nroutes:\n  - { from: synth, to: drums }\n") == [
            "r.yaml:5:24: 'drums' is the drum sequencer's notes and cannot receive; use it in 'from:', not 'to:'",
        ])
    }

    @Test func everyBuiltInStyleReadsAndHasFourLevelsOrMore() throws {
        for name in BuiltinStyles.names {
            let style = try StyleFile.parse(yaml: try #require(BuiltinStyles.text(of: name)), file: "\(name).yaml")
            #expect(style.name == name && style.levels >= 4 && style.fill != nil)
            #expect(style.groove.lines.values.allSatisfy { $0.count == style.groove.bars * style.stepsPerBar })
            // Every level adds something: the busiest bar of each level plays more than the level below.
            let counts = (1...style.levels).map { level in style.groove.lines.values.reduce(0) { $0 + $1.filter { ($0?.level ?? 99) <= level }.count } }
            #expect(counts == counts.sorted() && Set(counts).count == counts.count, "\(name): \(counts)")
        }
    }

    @Test func aStyleFileWithEveryKeyAndStepMark() throws {
        let style = try StyleFile.parse(yaml: """
            name: mine
            time: 6/8
            steps: 12
            levels: 3
            swing: 60
            humanize: { time: 5, velocity: 12 }
            phrase: 2
            groove:
              kick: "1> . . 2g . . | 1@64 . 3?25 . . ."
            fill:
              snare: "1 1 1 1 1 1 1 1 1 1 1 1"

            """, file: "styles/mine.yaml")
        #expect(style.name == "mine" && style.time == TimeSignature(beats: 6, unit: 8) && style.stepsPerBar == 12)
        #expect(style.levels == 3 && style.swing == 0.6 && style.humanizeTime == 5 && style.phrase == 2)
        let kick = try #require(style.groove.lines[.kick])
        let expected: [Step?] = [Step(level: 1, velocity: Step.accent), nil, nil, Step(level: 2, velocity: Step.ghost), nil, nil,
                                 Step(level: 1, velocity: 64 / 127), nil]
        #expect(Array(kick.prefix(8)) == expected)
        #expect(style.groove.lines[.kick]?[8] == Step(level: 3, probability: 0.25))
        #expect(style.fill?.lines[.snare]?.count == 12)
    }

    @Test func styleFileMistakesAreLocated() {
        func mistakes(_ yaml: String) -> [String] {
            do { _ = try StyleFile.parse(yaml: yaml, file: "s.yaml"); return [] } catch { return error.errors.map(\.description) }
        }
        #expect(mistakes("groove:\n  kick: \"1 . x .\"\n") == [
            "s.yaml:2:9: 'x' is not a step: write '.' for a rest, or a level 1-9 with '>' (accent), 'g' (ghost), "
                + "'@VELOCITY' (1-127) or '?PERCENT' (probability) after it, such as '2', '1>', '3g', '2@90' or '4?30'",
        ])
        #expect(mistakes("groove:\n  kick: \"1 . . .\"\n") == ["s.yaml:2:9: 4 steps, not whole bars of 16 steps"])
        #expect(mistakes("levels: 2\ngroove:\n  kik: \"1 . . . 1 . . . 1 . . . 1 . . .\"\n  hat: \"3 . . . . . . . . . . . . . . .\"\n") == [
            "s.yaml:3:3: unknown key 'kik'; did you mean 'kick'?",
            "s.yaml:1:1: a step plays from level 3 but the style has 2 levels ('levels: 2')",
        ])
        #expect(mistakes("time: 5/3\nswing: 90\ngroove: {}\n") == [
            "s.yaml:1:7: 'time' is a time signature such as 4/4, 6/8 or 7/8 (1-32 beats of 2, 4, 8 or 16)",
            "s.yaml:2:8: 'swing' (where the second of two steps falls, in percent: 50 straight, 66 a triplet shuffle) is 50-75, not 90",
            "s.yaml:3:9: 'groove' maps voices to their steps, such as 'kick: \"1 . . . 1 . . .\"'",
        ])
    }

    @Test func aStyleFileNamedByPathIsReadRelativeToTheRouteFile() throws {
        let directory = try temporaryDirectory()
        try "groove:\n  clave: \"1 . . 1 . . 1 . . . 1 . 1 . . .\"\n".write(to: directory.appendingPathComponent("clave.yaml"), atomically: true, encoding: .utf8)
        let file = directory.appendingPathComponent("r.yaml")
        try "drums: { style: ./clave.yaml }\n".write(to: file, atomically: true, encoding: .utf8)
        let drums = try #require(try RouteConfiguration.load(files: [file.path]).drums)
        #expect(drums.style.name == "clave" && drums.style.groove.lines.keys.sorted() == [.clave])
        try "groove: 3\n".write(to: directory.appendingPathComponent("clave.yaml"), atomically: true, encoding: .utf8)
        #expect(throws: RouteFileErrors.self) { try RouteConfiguration.load(files: [file.path]) }
    }
}
