import Foundation
import Testing

/// The drum sequencer in the running daemon: its notes reach a route's sink in time with the jam's clock.
@Suite(.serialized) struct DrumsEndToEndTests {
    @Test func theDrumsPlayTheirStyleOnTheJamsBeatIntoATakeMidoAndPrettyMIDIRead() throws {
        try #require(FileManager.default.isExecutableFile(atPath: peersPython.path),
                     "mido's and pretty_midi's Python \(peersPython.path) is missing: run scripts/install-deps.sh")
        let dir = try temporaryDirectory()
        let file = dir.appendingPathComponent("drums.yaml")
        try """
            clock: { tempo: 120, to: [take] }
            drums: { style: rock, level: 1, seed: 3 }
            endpoints:
              take: { record: take.mid }
            routes:
              - { from: drums, to: take }

            """.write(to: file, atomically: true, encoding: .utf8)
        let daemon = try JamBridgeProcess(["run", "--stop-after", "30", file.path])
        #expect(daemon.waitForError(containing: "jam: "))
        #expect(try jambridge(["start", "--pid", "\(daemon.pid)"]).status == 0)
        Thread.sleep(forTimeInterval: 4.5)
        let status = try jambridge(["status", "--pid", "\(daemon.pid)"]).out
        #expect(status.contains("drums: rock, level 1 (kept), bar "), "\(status)")
        // The drums told what to play: refusals say why, changes come at the next bar line.
        let pid = ["--pid", "\(daemon.pid)"]
        #expect(try jambridge(["drums", "level", "9"] + pid).err.contains("the style rock has levels 1-5, not 9"))
        #expect(try jambridge(["drums", "mute", "cowbel"] + pid).err.contains("unknown voice 'cowbel'"))
        #expect(try jambridge(["drums", "style", "polka"] + pid).err.contains("unknown style 'polka'"))
        #expect(try jambridge(["drums", "mute", "crash", "clap"] + pid).out.contains("crash, clap muted"))
        #expect(try jambridge(["drums", "level", "follow"] + pid).out.contains("follows the session's activity"))
        #expect(try jambridge(["drums", "level", "1"] + pid).out.contains("level 1 kept"))
        let muted = try jambridge(["status", "--pid", "\(daemon.pid)"]).out
        #expect(muted.contains("muted: clap, crash"), "\(muted)")
        #expect(try jambridge(["stop", "--pid", "\(daemon.pid)"]).status == 0)
        Thread.sleep(forTimeInterval: 0.5)
        daemon.interrupt()
        let result = daemon.finish(killingAfter: 20)
        #expect(result.status == 0, "\(result.err)")
        let read = try run(peersPython.path, [repositoryRoot.appendingPathComponent("Tests/Peers/take_read.py").path,
                                              dir.appendingPathComponent("take.mid").path])
        #expect(read.status == 0, "\(read.out)")
        let readers = try JSONDecoder().decode(TakeReaders.self, from: Data(read.out.utf8))
        // Rock at level 1: kick on 1 and 3, snare on 2 and 4, the hat on every beat (GM 36, 38, 42), each within
        // the style's 3 ms of humanising (0.006 beat at 120 BPM) of its beat, which the take's tempo map counts from
        // the jam's Start. The fill that ends each four-bar phrase drops the hat on its last beat: a slow machine's
        // take (the commands above take longer) reaches it.
        for (name, notes) in [("mido", readers.mido.notes), ("pretty_midi", readers.pretty_midi.notes)] {
            #expect(notes.count >= 16, "\(name): \(notes.count) notes")
            var byBeat: [Int: [Int]] = [:]
            for note in notes {
                let beat = note.beat.rounded()
                #expect(abs(note.beat - beat) < 0.01, "\(name): note \(note.pitch) on beat \(note.beat)")
                byBeat[Int(beat), default: []].append(note.pitch)
            }
            let firstBeat = try #require(byBeat.keys.min())
            for (beat, pitches) in byBeat where beat < byBeat.keys.max()! {
                let songBeat = beat - firstBeat
                let expected = songBeat % 16 == 15 ? [38] : songBeat % 2 == 0 ? [36, 42] : [38, 42]
                #expect(pitches.sorted() == expected, "\(name): beat \(beat): \(pitches) of \(byBeat.sorted { $0.key < $1.key })")
            }
        }
    }

    /// Issue 30: the drums are a part of their own that reads the jam's song. A reload that changes their kit, style
    /// and seed (and so makes them again, audio and all) while a song runs leaves the jam as it was: the clock
    /// output sees no Stop and no second Start, the master stays and the song position runs on.
    @Test func aReloadThatChangesTheDrumsKitStyleAndSeedLeavesTheJamsSongRunning() throws {
        let dir = try temporaryDirectory()
        // A sample folder whose voices all play a bar the built-in kit renders.
        let kit = dir.appendingPathComponent("bars")
        try FileManager.default.createDirectory(at: kit, withIntermediateDirectories: true)
        let render = dir.appendingPathComponent("render.yaml")
        try "drums: { style: rock }\n".write(to: render, atomically: true, encoding: .utf8)
        let rendered = try jambridge(["render", render.path, "--bars", "1", "--out", kit.appendingPathComponent("bar.wav").path])
        try #require(rendered.status == 0, "\(rendered.err)")
        try "name: bars\nvoices: { kick: bar.wav, snare: bar.wav, hat: bar.wav }\n"
            .write(to: kit.appendingPathComponent("kit.yaml"), atomically: true, encoding: .utf8)
        // ALSA's null device plays the audio: nothing is heard, but the device is opened, fed and closed.
        let file = dir.appendingPathComponent("drums.yaml")
        let routes = { (drums: String) in """
            clock: { tempo: 120, to: [take] }
            drums: { \(drums), level: 1, audio: { device: "null" } }
            endpoints:
              take: { record: take.mid }
            routes:
              - { from: drums, to: take }

            """ }
        try routes("style: rock, seed: 3").write(to: file, atomically: true, encoding: .utf8)
        let daemon = try JamBridgeProcess(["run", "--monitor", "--stop-after", "30", file.path])
        defer { daemon.interrupt() }
        #expect(daemon.waitForError(containing: "drums: rock on the built-in kit through 'null'"), "\(daemon.errorSoFar)")
        // The drums say so as they are made, before the control socket opens.
        #expect(daemon.waitForError(containing: "control socket: "), "\(daemon.errorSoFar)")
        let pid = ["--pid", "\(daemon.pid)"]
        #expect(try jambridge(["start"] + pid).status == 0)
        Thread.sleep(forTimeInterval: 1.5)
        let before = try #require(try daemonStatus(daemon.pid))
        #expect(before.drums?.style == "rock" && before.drums?.playing == true, "\(String(describing: before.drums))")

        try routes("style: funk, seed: 4, kit: \"\(kit.path)\"").write(to: file, atomically: true, encoding: .utf8)
        let reloaded = try jambridge(["reload"] + pid, killingAfter: 60)
        #expect(reloaded.status == 0 && reloaded.out.contains("started drums; stopped drums\n"), "\(reloaded)")
        #expect(daemon.waitForError(containing: "drums: funk on the kit 'bars' through 'null'"), "\(daemon.errorSoFar)")
        Thread.sleep(forTimeInterval: 1.5)
        let after = try #require(try daemonStatus(daemon.pid))
        #expect(after.jam?.role == "master" && after.jam?.master == before.jam?.master, "\(String(describing: after.jam))")
        let (beatBefore, beatAfter) = (try #require(before.jam?.songBeat), try #require(after.jam?.songBeat))
        #expect(beatAfter >= beatBefore + 3, "the song went from beat \(beatBefore) to \(beatAfter) in 1.5 s and more (3 beats)")
        #expect(after.drums?.style == "funk" && after.drums?.playing == true && after.drums?.notes ?? 0 > 0,
                "\(String(describing: after.drums))")
        #expect(after.drums?.audio?.playing == true && after.drums?.audio?.hits ?? 0 > 0, "\(String(describing: after.drums?.audio))")

        #expect(try jambridge(["stop"] + pid).status == 0)
        Thread.sleep(forTimeInterval: 0.3)
        daemon.interrupt()
        let result = daemon.finish(killingAfter: 20)
        #expect(result.status == 0, "\(result.err)")
        // What the clock output saw, as the monitor shows it (each line's time is the message's): one Start, ticks
        // a tick apart all along, and the one Stop the end sent.
        let clock = result.out.split(separator: "\n").filter { $0.contains("jam -> take") }
        let messages = clock.map { $0.split(separator: " ").last.map(String.init) ?? "" }
        #expect(messages.filter { $0 != "Clock" } == ["Start", "Stop"] && messages.first == "Start" && messages.last == "Stop",
                "\(messages.filter { $0 != "Clock" })")
        let times = clock.compactMap { $0.split(separator: " ").first.flatMap { Double($0) } }
        let gaps = zip(times, times.dropFirst()).map { $1 - $0 }
        // On failure, the monitor's lines within half a second of the widest gap, and the clock's last lines.
        let widest = gaps.indices.max { gaps[$0] < gaps[$1] }.map { times[$0] } ?? 0
        let around = result.out.split(separator: "\n").filter { line in
            line.split(separator: " ").first.flatMap { Double($0) }.map { abs($0 - widest) < 0.5 } ?? false
        }
        #expect(times.count == clock.count && clock.count > 150 && gaps.allSatisfy { $0 <= 0.021 },
                "largest gap \(gaps.max() ?? 0) s, around it:\n\(around.joined(separator: "\n"))\nthe end:\n\(clock.suffix(5).joined(separator: "\n"))")
    }

    @Test func anAudioDeviceOrKitThatCannotOpenStopsTheStartWithAClearError() throws {
        let dir = try temporaryDirectory()
        let file = dir.appendingPathComponent("drums.yaml")
        // A device that cannot be opened is found at start (status 2); a kit that cannot be played is a mistake in the
        // route file, found when it is loaded and reported at its 'kit:' (status 1), as 'jambridge check' reports it.
        for (drums, status, error) in [("{ audio: \"hw:97\" }", 2, "drums: cannot play audio on 'hw:97': "),
                                       ("{ kit: \"\(dir.path)\", audio: default }", 1,
                                        "\(file.path):1:15: '\(dir.path)' is not a drum kit: the folder has neither a kit.yaml")] {
            try "drums: \(drums)\n".write(to: file, atomically: true, encoding: .utf8)
            let result = try jambridge(["run", "--stop-after", "20", file.path], killingAfter: 60)
            #expect(result.status == status && result.err.contains(error), "\(result.err)")
        }
    }
}
