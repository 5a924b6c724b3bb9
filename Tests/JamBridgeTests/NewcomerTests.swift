import Foundation
import Testing

/// What a newcomer trips over (issue 33): what `check`, `run` and `render` print for the mistakes of a first evening.
@Suite struct NewcomerTests {
    /// A route file `name` in `directory` holding `yaml`; its path.
    private func routeFile(_ yaml: String, _ name: String = "routes.yaml", in directory: URL) throws -> String {
        let path = directory.appendingPathComponent(name).path
        try yaml.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    // MARK: - 3. Errors a musician can act on

    @Test func errorsSayWhatIsLikelyWrongAndHowToFixIt() throws {
        let dir = try temporaryDirectory()
        let cases: [(yaml: String, error: String)] = [
            ("routes:\n  - from: a\n    to: b\n   - from: c\n    to: d\n",
             "4:4: not valid YAML: did not find expected '-' indicator (while parsing a block collection at line 2): this line is not "
                + "lined up with the list that starts at line 2, column 3: indent every '- ' of a list the same, with spaces"),
            ("endpoints:\n  keys: { alsa: *USB* }\n",
             "2:17: not valid YAML: did not find expected alphabetic or numeric character (while scanning an alias at line 2): a value "
                + "starting with '*' or '&' is read as a YAML alias or anchor; quote it, such as alsa: \"*USB*\""),
            ("endpoints:\n  keys:\n    alsa: *USB\n",
             "3:11: not valid YAML: found undefined alias: a value starting with '*' is read as a YAML alias; quote it, such as alsa: \"*USB*\""),
            ("endpoints:\n  song: { loop: true }\n",
             "2:3: endpoint 'song' has 'loop' but no 'file:', the MIDI file to play; write it, such as 'song: { file: song.mid, loop: true }'"),
            ("endpoints:\n  keys: { alsa: \"USB*\" }\n  synth: { alsa: \"FLUID*\" }\nroutes:\n  - { from: keys, to: sytnh }\n",
             "5:23: unknown endpoint 'sytnh'; did you mean 'synth'? declared endpoints: keys, synth"),
            ("endpoints:\n  keys: { alsa: \"USB*\" }\n  synth: { alsa: \"FLUID*\" }\n  keys: { alsa: \"Key*\" }\n",
             "4:3: key 'keys' is already written at FILE:2:3 in the same mapping; keep one"),
            ("clock: { tempo: 100 bpm }\n",
             "1:17: 'tempo' is beats a minute, 20-300, such as 120: write the number alone, 'tempo: 100', without 'bpm'"),
        ]
        for (yaml, error) in cases {
            let file = try routeFile(yaml, in: dir)
            let checked = try jambridge(["check", file])
            #expect(checked.status == 1 && checked.err == "\(file):\(error.replacingOccurrences(of: "FILE", with: file))\n", "\(checked.err)")
        }
    }

    @Test func renderSaysWhatStopsItAsEveryCommandDoes() throws {
        let dir = try temporaryDirectory()
        let wav = dir.appendingPathComponent("out.wav").path
        let none = try jambridge(["render", try routeFile("endpoints:\n  song: { file: x.mid }\n", in: dir), "--out", wav])
        #expect(none.status == 1 && none.err.hasSuffix(": cannot play the song '\(dir.path)/x.mid': No such file or directory\n"), "\(none.err)")
        let noDrums = try jambridge(["render", try routeFile("clock: { tempo: 100 }\n", in: dir), "--out", wav])
        #expect(noDrums.status == 1 && noDrums.err == "jambridge render: the route files have no 'drums' block: nothing to render\n", "\(noDrums.err)")
        let unwritable = try jambridge(["render", try routeFile("drums: { style: rock }\n", in: dir), "--bars", "1", "--out", dir.path + "/no/such/dir/out.wav"])
        #expect(unwritable.status == 1 && unwritable.err.hasPrefix("jambridge render: '\(dir.path)/no/such/dir/out.wav': cannot be written")
                && !unwritable.err.contains("error jambridge"), "\(unwritable.err)")
    }
}
