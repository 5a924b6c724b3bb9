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

    /// A sample folder `kits/garage` in `directory`: a kick made by sox, an `hh.wav` that is text, and `kitYAML`.
    private func garageKit(in directory: URL, _ kitYAML: String) throws -> String {
        let kit = directory.appendingPathComponent("kits/garage").path
        try FileManager.default.createDirectory(atPath: kit, withIntermediateDirectories: true)
        #expect(try run("/usr/bin/sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", kit + "/kick.wav", "synth", "0.1", "sine", "60"]).status == 0)
        try "hat\n".write(toFile: kit + "/hh.wav", atomically: true, encoding: .utf8)
        try kitYAML.write(toFile: kit + "/kit.yaml", atomically: true, encoding: .utf8)
        return kit
    }

    // MARK: - 1. check reads kits and styles

    @Test func checkAndRunReadTheKitWithOrWithoutAudio() throws {
        let dir = try temporaryDirectory()
        let kit = try garageKit(in: dir, "name: Garage kit\nvoices:\n  kick: kick.wav\n  snar: kick.wav\n")
        for audio in ["", "\n  audio: default"] {
            let file = try routeFile("drums:\n  style: rock\n  kit: kits/garage\(audio)\n", in: dir)
            let checked = try jambridge(["check", file])
            #expect(checked.status == 1 && checked.out.isEmpty, "\(checked)")
            #expect(checked.err == "\(kit)/kit.yaml:4:3: unknown key 'snar'; did you mean 'snare'?\n", "\(checked.err)")
            // run finds the same mistake before anything starts, with or without audio, as a mistake in the route files.
            let ran = try jambridge(["run", "--stop-after", "5", file], killingAfter: 30)
            #expect(ran.status == 1 && ran.err.contains("\(kit)/kit.yaml:4:3: unknown key 'snar'"), "\(ran.err)")
        }
        // A sample that is not a sound file is reported at the route file's 'kit:'.
        try "voices:\n  kick: kick.wav\n  hat: hh.wav\n".write(toFile: kit + "/kit.yaml", atomically: true, encoding: .utf8)
        let file = try routeFile("drums:\n  style: rock\n  kit: kits/garage\n", in: dir)
        let checked = try jambridge(["check", file])
        #expect(checked.status == 1 && checked.err.hasPrefix(
            "\(file):3:8: drum kit '\(kit)', instrument 'hat': sample '\(kit)/hh.wav': not a sound file libsndfile can read"), "\(checked.err)")
        // A kit that loads is ok; what it lacks, and that it is not played without audio, are notes.
        try "voices:\n  kick: kick.wav\n".write(toFile: kit + "/kit.yaml", atomically: true, encoding: .utf8)
        let fine = try jambridge(["check", file])
        #expect(fine.status == 0 && fine.out == "\(file): ok (2 endpoints, 0 routes)\n", "\(fine)")
        #expect(fine.err.contains("\(file):3:8: note: drum kit '\(kit)' has nothing for snare, "), "\(fine.err)")
        let notPlayed = "\(file):3:8: note: the kit is not played: without 'audio:' the drums are only notes from the 'drums' endpoint; "
            + "add 'audio: default' to hear it"
        #expect(fine.err.contains(notPlayed), "\(fine.err)")
        let ran = try jambridge(["run", "--stop-after", "0.5", file], killingAfter: 30)
        #expect(ran.status == 0 && ran.err.contains(notPlayed), "\(ran.err)")
    }

    @Test func checkReadsHydrogenKitsAndStyleFiles() throws {
        let dir = try temporaryDirectory()
        let kit = dir.appendingPathComponent("h2").path
        try FileManager.default.createDirectory(atPath: kit, withIntermediateDirectories: true)
        try """
            <drumkit_info>
            <name>H</name>
            <instrumentList>
            <instrument>
            <name>Kick</name>
            <volume>loud</volume>
            <filename>kick.wav</filename>
            </instrument>
            </instrumentList>
            </drumkit_info>

            """.write(toFile: kit + "/drumkit.xml", atomically: true, encoding: .utf8)
        let file = try routeFile("drums:\n  kit: h2\n", in: dir)
        let checked = try jambridge(["check", file])
        #expect(checked.status == 1 && checked.err == "\(file):2:8: drum kit '\(kit)': \(kit)/drumkit.xml:6: <volume> is 'loud', not a volume (0 to 16)\n",
                "\(checked.err)")
        try "name: mine\ngroove:\n  kik: \"1 . . .\"\n".write(toFile: dir.appendingPathComponent("mine.yaml").path, atomically: true, encoding: .utf8)
        let styled = try jambridge(["check", try routeFile("drums: { style: ./mine.yaml }\n", in: dir)])
        #expect(styled.status == 1 && styled.err == "\(dir.path)/mine.yaml:3:3: unknown key 'kik'; did you mean 'kick'?\n", "\(styled.err)")
    }

    // MARK: - 2. No ALSA sequencer

    @Test(.enabled(if: access("/dev/snd/seq", F_OK) != 0, "this machine has an ALSA sequencer"))
    func withoutASequencerRunSaysWhichLineAskedForItAndWhatToDo() throws {
        let dir = try temporaryDirectory()
        let file = try routeFile("""
            endpoints:
              song: { file: \(repositoryRoot.path)/routes/songs/demo.mid }
              synth: { alsa: "FLUID Synth*" }
            routes:
              - { from: song, to: synth }

            """, in: dir)
        let fix = "cannot open the ALSA sequencer (/dev/snd/seq): No such file or directory; this machine has no ALSA sequencer: "
            + "load it with 'sudo modprobe snd-seq' (in a VM or a container, the host must give it /dev/snd/seq), or remove the alsa: endpoints"
        let ran = try jambridge(["run", "--stop-after", "5", file], killingAfter: 30)
        #expect(ran.status == 2 && ran.err.contains("\(file):3:3: synth: \(fix)") && ran.err.contains("jambridge did not start"), "\(ran.err)")
        // check opens no device, but says what run would meet here.
        let checked = try jambridge(["check", file])
        #expect(checked.status == 0 && checked.out == "\(file): ok (2 endpoints, 1 route)\n", "\(checked)")
        #expect(checked.err == "\(file):3:3: note: synth: cannot open the ALSA sequencer (/dev/snd/seq): No such file or directory, so "
                + "'jambridge run' would stop here; this machine has no ALSA sequencer: load it with 'sudo modprobe snd-seq' (in a VM or a "
                + "container, the host must give it /dev/snd/seq), or remove the alsa: endpoints\n", "\(checked.err)")
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

    // MARK: - 9. Installed examples can be checked by a user who cannot write there

    @Test func checkNeedsNoWriteAccessWhereRunWouldRecordAndSaysSo() throws {
        let dir = try temporaryDirectory()
        try FileManager.default.copyItem(atPath: repositoryRoot.appendingPathComponent("routes/songs").path,
                                         toPath: dir.appendingPathComponent("songs").path)
        let file = try routeFile("endpoints:\n  song: { file: songs/demo.mid }\n  tape: { record: jam.mid }\nroutes:\n  - { from: song, to: tape }\n",
                                 "demo.yaml", in: dir)
        // As installed: a folder this user may read but not write (root writes anywhere, so root checks as nobody).
        #expect(chmod(dir.path, 0o555) == 0)
        defer { chmod(dir.path, 0o755) }
        func asUser(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
            guard getuid() == 0 else { return try jambridge(arguments, killingAfter: 30) }
            return try jambridgeAs(["--reuid=nobody", "--regid=nogroup", "--clear-groups"], arguments)
        }
        let checked = try asUser(["check", file])
        #expect(checked.status == 0 && checked.out == "\(file): ok (2 endpoints, 1 route)\n", "\(checked)")
        #expect(checked.err.contains("\(file):3:19: note: this user cannot create files in '\(dir.path)' (Permission denied), where "
                + "'jambridge run' records '\(dir.path)/jam.mid': run it as a user who can, or copy the route file (with the songs it plays) "
                + "to a folder you can write in"), "\(checked.err)")
        // run does need it: the same place is a mistake there.
        let ran = try asUser(["run", "--stop-after", "5", file])
        #expect(ran.status == 1 && ran.err.contains("\(file):3:19: cannot record to '\(dir.path)/jam.mid': cannot create files in '\(dir.path)': Permission denied"),
                "\(ran.err)")
    }

    // MARK: - 10. Counting, and a file given twice

    @Test func eachFileCountsTheSameAloneAndTogether() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: repositoryRoot.appendingPathComponent("routes").path)
            .filter { $0.hasSuffix(".yaml") }.sorted().map { "routes/\($0)" }
        let together = try jambridge(["check"] + files)
        #expect(together.status == 0, "\(together.err)")
        let alone = try files.map { try jambridge(["check", $0]).out }.joined()
        #expect(together.out == alone)
    }

    @Test func aFileGivenTwiceIsReadOnceWithANote() throws {
        let checked = try jambridge(["check", "routes/demo.yaml", "routes/demo.yaml", "./routes/demo.yaml"])
        #expect(checked.status == 0 && checked.out == "routes/demo.yaml: ok (2 endpoints, 1 route)\n", "\(checked)")
        #expect(checked.err == "note: routes/demo.yaml is given twice; it is read once\n"
                + "note: ./routes/demo.yaml and routes/demo.yaml are the same file; it is read once\n", "\(checked.err)")
    }
}
