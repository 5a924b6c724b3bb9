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
        // the jam's Start.
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
                let expected = (beat - firstBeat) % 2 == 0 ? [36, 42] : [38, 42]
                #expect(pitches.sorted() == expected, "\(name): beat \(beat): \(pitches) of \(byBeat.sorted { $0.key < $1.key })")
            }
        }
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
