import Foundation
@testable import JamBridge
import MIDI
import Testing

// The recorder's file contract (numbered takes, checkpoints a crash cannot break, a full disk that does not
// stop the jam) and what `check` refuses to read.

private func v(_ x: Int) -> UInt7 { UInt7(masking: UInt8(x)) }
private let ms: UInt64 = 1_000_000


/// A song of `count` short notes on channel 1, one every `spacing` nanoseconds.
private func notes(_ count: Int, every spacing: UInt64) -> [TimedSong.Entry] {
    (0..<count).flatMap { index -> [TimedSong.Entry] in
        let note = v(48 + index % 24)
        let start = UInt64(index) * spacing
        return [.init(offset: start, message: .noteOn(channel: UInt4(masking: 0), note: note, velocity: v(100))),
                .init(offset: start + spacing / 2, message: .noteOff(channel: UInt4(masking: 0), note: note, velocity: v(0)))]
    }
}

/// A route file in `directory` playing the song `song.mid` (written from `entries`) into `record: TAKE`.
private func writeRecordingSetup(in directory: URL, song entries: [TimedSong.Entry], take: String) throws -> String {
    try writeSetup(in: directory, song: entries, routes: """
        endpoints:
          song: { file: song.mid }
          tape: { record: \(take) }
        routes:
          - { from: song, to: tape }
        """)
}

/// MIDI 1.0 bytes of `message`, as mido prints them.
private func hex(_ message: MIDIMessage) -> String {
    var bytes: [UInt8] = []
    var encoder = MIDIEncoder()
    encoder.encode(message, into: &bytes)
    return bytes.map { String(format: "%02X", $0) }.joined(separator: " ")
}

/// What Tests/Peers/take_read.py reports: each reader's notes and tempo events, pretty_midi's bar lines.
struct TakeReaders: Decodable {
    struct Note: Decodable { var pitch: Int; var beat: Double; var seconds: Double }
    struct Tempo: Decodable { var beat: Double?; var seconds: Double; var bpm: Double }
    struct Reader: Decodable { var notes: [Note]; var tempos: [Tempo]; var downbeats: [Double]? }
    var mido: Reader
    var pretty_midi: Reader
}

@Suite(.serialized) struct RecorderTests {
    @Test func checkRefusesWhatIsNotARouteFileAtOnce() throws {
        let dir = try temporaryDirectory()
        let fifo = dir.appendingPathComponent("routes.fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let big = dir.appendingPathComponent("big.yaml").path
        #expect(FileManager.default.createFile(atPath: big, contents: Data("endpoints:\n".utf8)))
        #expect(truncate(big, 64 << 20) == 0)
        for (file, reason) in [("/dev/zero", "it is a character device, not a regular file"),
                               (fifo, "it is a FIFO, not a regular file"),
                               (dir.path, "it is a directory, not a regular file"),
                               (big, "it is larger than 1 MiB, the most jambridge reads")] {
            // A hang is killed after 60 s and fails the status check.
            let result = try jambridge(["check", file], killingAfter: 60)
            #expect(result.status == 1, "\(file): \(result.err)")
            #expect(result.err == "\(file):1:1: cannot read the route file: \(reason)\n")
            #expect(result.out.isEmpty)
        }
    }

    @Test func checkReportsASongThatIsNotASongAndARecordingThatCannotBeMade() throws {
        let dir = try temporaryDirectory()
        try "la la la\n".write(to: dir.appendingPathComponent("song.txt"), atomically: true, encoding: .utf8)
        let file = dir.appendingPathComponent("routes.yaml").path
        try """
            endpoints:
              song: { file: song.txt }
              tape: { record: /proc/nope/x.mid }
            routes:
              - { from: song, to: tape }
            """.write(toFile: file, atomically: true, encoding: .utf8)
        let result = try jambridge(["check", file], killingAfter: 60)
        #expect(result.status == 1)
        #expect(result.err == """
            \(file):2:17: cannot play the song '\(dir.path)/song.txt': at byte 0: not a Standard MIDI File (no MThd header)
            \(file):3:19: cannot record to '/proc/nope/x.mid': '/proc/nope': No such file or directory

            """)
    }

    @Test func aSecondTakeGetsANumberedNameAndTheFirstIsKept() throws {
        let dir = try temporaryDirectory()
        let song = notes(2, every: 20 * ms)
        let file = try writeRecordingSetup(in: dir, song: song, take: "take.mid")
        let first = try jambridge(["run", "--stop-after", "0.3", file], killingAfter: 60)
        #expect(first.status == 0, "\(first.err)")
        let firstTake = try Data(contentsOf: dir.appendingPathComponent("take.mid"))
        let second = try jambridge(["run", "--stop-after", "0.3", file], killingAfter: 60)
        #expect(second.status == 0, "\(second.err)")
        #expect(second.err.contains("tape: recording to \(dir.path)/take-2.mid"))
        #expect(try Data(contentsOf: dir.appendingPathComponent("take.mid")) == firstTake)
        for take in ["take.mid", "take-2.mid"] {
            #expect(try recorded(dir.appendingPathComponent(take)) == song.map(\.message))
        }
        #expect(MIDIRecorder.numbered("/a/b.c/take.mid", 3) == "/a/b.c/take-3.mid")
        #expect(MIDIRecorder.numbered("/a/b.c/take", 2) == "/a/b.c/take-2")
        #expect(MIDIRecorder.numbered("/a/.take", 2) == "/a/.take-2")
    }

    @Test func aRecorderThatCannotCreateItsFileFailsAtStart() {
        #expect(throws: MIDIRecorder.RecordingError.self) {
            try MIDIRecorder(name: "tape", requested: "/proc/nope/x.mid", logger: .init(label: "jambridge-test"))
        }
    }

    @Test func afterSIGKILLTheTakeHoldsTheSongUpToTheLastCheckpointAndMidoReadsIt() throws {
        try #require(FileManager.default.isExecutableFile(atPath: peersPython.path),
                     "mido's Python \(peersPython.path) is missing: run scripts/install-deps.sh")
        let dir = try temporaryDirectory()
        let song = notes(80, every: 100 * ms) // 8 s
        let file = try writeRecordingSetup(in: dir, song: song, take: "take.mid")
        let take = dir.appendingPathComponent("take.mid")
        let daemon = try JamBridgeProcess(["run", "--stop-after", "120", file])
        // The first checkpoint comes 2 s after the start; wait for it, then kill without warning.
        let deadline = Date().addingTimeInterval(60)
        while ((try? recorded(take)) ?? []).isEmpty && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        kill(daemon.pid, SIGKILL)
        let result = daemon.finish(killingAfter: 60)
        #expect(!result.err.contains("tape: recorded"), "it was killed before it could stop")
        let read = try run(peersPython.path, [repositoryRoot.appendingPathComponent("Tests/Peers/mido_read.py").path, take.path])
        #expect(read.status == 0)
        let messages = read.out.split(separator: "\n").map(String.init)
        #expect(!messages.isEmpty)
        #expect(messages == song.prefix(messages.count).map { hex($0.message) })
    }

    @Test func aTakeLeavesOutClockAndTransportAndMidoReadsIt() throws {
        // The issue's session: Start, 40 clock bytes, a note, Stop (mido refused the take these made).
        let dir = try temporaryDirectory()
        let clock = (0..<40).map { TimedSong.Entry(offset: 20 * ms + UInt64($0) * 20 * ms, message: .timingClock) }
        let song = [TimedSong.Entry(offset: 0, message: .start)] + clock + [
            .init(offset: 300 * ms, message: .noteOn(channel: UInt4(masking: 0), note: v(60), velocity: v(100))),
            .init(offset: 400 * ms, message: .noteOff(channel: UInt4(masking: 0), note: v(60), velocity: v(0))),
            .init(offset: 500 * ms, message: .songPosition(UInt14(masking: 16))),
            .init(offset: 850 * ms, message: .stop),
        ]
        let file = try writeRecordingSetup(in: dir, song: song, take: "take.mid")
        let result = try jambridge(["run", "--stop-after", "1.5", file])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.err.contains("tape: 43 clock, transport and other system messages were not recorded"), "\(result.err)")
        let read = try run(peersPython.path, [repositoryRoot.appendingPathComponent("Tests/Peers/mido_read.py").path,
                                        dir.appendingPathComponent("take.mid").path])
        #expect(read.status == 0, "\(read.out)")
        #expect(read.out.split(separator: "\n") == ["90 3C 64", "80 3C 00"])
    }

    @Test func aTakeWithAClockRunningOpensInMidoAndPrettyMIDIWithItsBarsOnTheJamsBeat() throws {
        try #require(FileManager.default.isExecutableFile(atPath: peersPython.path),
                     "mido's and pretty_midi's Python \(peersPython.path) is missing: run scripts/install-deps.sh")
        // A song's times in its ticks (120 BPM, 960 a quarter: 1/1920 s), where every time below falls exactly.
        let at = { (ticks: UInt64) in ticks * 500_000_000 / 960 }
        // A note, then 2.3 s in (mid-bar on the take's first grid) Start and a clock: 8 beats at 240 BPM, 8 at 300,
        // the first tick of beat 16, Stop; notes on some beats; a note after the Stop.
        let start: UInt64 = 4416
        let songTick = { (beat: Double) in start + UInt64(beat <= 8 ? beat * 480 : 3840 + (beat - 8) * 384) }
        var song: [TimedSong.Entry] = [
            .init(offset: 0, message: .noteOn(channel: UInt4(masking: 0), note: v(40), velocity: v(100))),
            .init(offset: at(384), message: .noteOff(channel: UInt4(masking: 0), note: v(40), velocity: v(0))),
            .init(offset: at(start), message: .start),
        ]
        song += (0...16 * 24).map { k in .init(offset: at(songTick(Double(k) / 24)), message: .timingClock) }
        let beats = [0, 1.5, 4, 6.25, 8, 9.5, 12, 15.5]
        for (index, beat) in beats.enumerated() {
            song.append(.init(offset: at(songTick(beat)), message: .noteOn(channel: UInt4(masking: 0), note: v(60 + index), velocity: v(100))))
            song.append(.init(offset: at(songTick(beat + 0.25)), message: .noteOff(channel: UInt4(masking: 0), note: v(60 + index), velocity: v(0))))
        }
        let stop = songTick(16) + 16
        song.append(.init(offset: at(stop), message: .stop))
        song.append(.init(offset: at(stop + 960), message: .noteOn(channel: UInt4(masking: 0), note: v(80), velocity: v(100))))
        song.append(.init(offset: at(stop + 1200), message: .noteOff(channel: UInt4(masking: 0), note: v(80), velocity: v(0))))
        // In time order; at one time Start, then the clock's tick, then notes (a note on a beat comes with its tick).
        let rank = { (message: MIDIMessage) in message == .start ? 0 : message == .timingClock ? 1 : 2 }
        song = song.enumerated().sorted { ($0.element.offset, rank($0.element.message), $0.offset)
            < ($1.element.offset, rank($1.element.message), $1.offset) }.map(\.element)
        let dir = try temporaryDirectory()
        let file = try writeRecordingSetup(in: dir, song: song, take: "take.mid")
        let result = try jambridge(["run", "--stop-after", "7.5", file])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.err.contains("tape: recorded 20 events and 3 tempo changes from the clock"), "\(result.err)")
        let read = try run(peersPython.path, [repositoryRoot.appendingPathComponent("Tests/Peers/take_read.py").path,
                                        dir.appendingPathComponent("take.mid").path])
        #expect(read.status == 0, "\(read.out)")
        let readers = try JSONDecoder().decode(TakeReaders.self, from: Data(read.out.utf8))

        // The first note at 0 s; the Start 2.3 s in, on bar 2's line (beat 4): the pad before it takes 2.1 s from the
        // note-off's beat 0.4; then the clock's beats, its tempo where it changed (beat 8 of the song, 12 of the take).
        let seconds = { (beat: Double) in 2.3 + (beat <= 8 ? beat * 0.25 : 2 + (beat - 8) * 0.2) }
        let expectedNotes = [(40, 0.0, 0.0)] + beats.enumerated().map { (60 + $0.offset, 4 + $0.element, seconds($0.element)) }
            + [(80, 20 + Double(16 + 960) / 1920 / 0.2, seconds(16) + Double(16 + 960) / 1920)] // after the Stop: seconds at 300 BPM
        for (name, notes) in [("mido", readers.mido.notes), ("pretty_midi", readers.pretty_midi.notes)] {
            #expect(notes.map(\.pitch) == expectedNotes.map(\.0), "\(name)")
            for (note, expected) in zip(notes, expectedNotes) {
                #expect(abs(note.seconds - expected.2) < 0.001, "\(name): note \(note.pitch) at \(note.seconds) s, not \(expected.2)")
                #expect(abs(note.beat - expected.1) < 0.002, "\(name): note \(note.pitch) on beat \(note.beat), not \(expected.1)")
            }
        }
        let tempos = [(0.0, 0.0, 120.0), (0.4, 0.2, 60e6 / 583_333), (4, 2.3, 240), (12, seconds(8), 300)]
        #expect(readers.mido.tempos.count == tempos.count, "\(readers.mido.tempos)")
        for (tempo, expected) in zip(readers.mido.tempos, tempos) {
            #expect(abs(tempo.beat! - expected.0) < 0.001 && abs(tempo.seconds - expected.1) < 0.001 && abs(tempo.bpm - expected.2) < 0.01,
                    "mido: \(tempo), not \(expected)")
        }
        #expect(readers.pretty_midi.tempos.count == tempos.count, "\(readers.pretty_midi.tempos)")
        for (tempo, expected) in zip(readers.pretty_midi.tempos, tempos) {
            #expect(abs(tempo.seconds - expected.1) < 0.001 && abs(tempo.bpm - expected.2) < 0.01, "pretty_midi: \(tempo), not \(expected)")
        }
        // pretty_midi's bar lines (4/4): the Start and every fourth of the clock's beats after it.
        for beat in [0.0, 4, 8, 12, 16] {
            #expect(readers.pretty_midi.downbeats!.contains { abs($0 - seconds(beat)) < 0.001 }, "no bar line at \(seconds(beat)) s")
        }
    }

    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs in a mount namespace needs root"))
    func aFullDiskIsLoggedOnceAndTheJamGoesOn() throws {
        let dir = try temporaryDirectory()
        let disk = dir.appendingPathComponent("disk")
        try FileManager.default.createDirectory(at: disk, withIntermediateDirectories: false)
        // 6000 messages in 11 s, some 2.5 KB a second and 27 KB in all, on a 16 KiB disk that must also hold each
        // checkpoint's new copy: the first checkpoint fits, a later one does not.
        let song = notes(3000, every: 3_600_000)
        let file = try writeRecordingSetup(in: dir, song: song, take: "disk/take.mid")
        // The tmpfs exists in the daemon's own mount namespace only, and goes when it exits.
        let daemon = try JamBridgeProcess(
            ["--mount", "sh", "-c", #"mount -t tmpfs -o size=16k jambridge-test "$1" && exec "$2" run --stop-after 120 "$3""#,
             "sh", disk.path, executable.path, file],
            launcher: "/usr/bin/unshare")
        #expect(daemon.waitForError(containing: "tape: cannot write the recording: "))
        #expect(daemon.waitForError(containing: "song: song ended"))
        // The take on the full disk is a whole file holding the song up to its last checkpoint.
        let onDisk = URL(fileURLWithPath: "/proc/\(daemon.pid)/root\(disk.path)/take.mid")
        let kept = try recorded(onDisk)
        #expect(!kept.isEmpty && kept.count < song.count)
        #expect(kept == song.prefix(kept.count).map(\.message))
        daemon.interrupt()
        let result = daemon.finish(killingAfter: 60)
        #expect(result.status == 0, "\(result.err)")
        #expect(result.err.components(separatedBy: "tape: cannot write the recording: ").count == 2, "\(result.err)")
        #expect(result.err.contains("No space left on device"))
        #expect(result.err.contains("stopped: \(song.count) messages delivered"))
        #expect(result.err.contains("tape: could not write the end of the recording (\(song.count) events)"))
    }
}
