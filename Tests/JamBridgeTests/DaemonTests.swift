import Foundation
import JamBridge
import Logging
import MIDI
import Routing
import Testing

private func v(_ x: Int) -> UInt7 { UInt7(masking: UInt8(x)) }
private func ch(_ x: Int) -> UInt4 { UInt4(masking: UInt8(x)) }
private let ms: UInt64 = 1_000_000

/// A fresh directory for one test's route file, song and recording.
func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("jambridge-test-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// Writes `entries` as a song and `routes` as route file into `directory`; returns the route file path.
func writeSetup(in directory: URL, song entries: [TimedSong.Entry], routes: String) throws -> String {
    let song = StandardMIDIFile.recording(entries).encoded()
    try Data(song).write(to: directory.appendingPathComponent("song.mid"))
    let routeFile = directory.appendingPathComponent("routes.yaml")
    try routes.write(to: routeFile, atomically: true, encoding: .utf8)
    return routeFile.path
}

/// Writes a route file into `directory` playing `song` (relative to it) straight into the
/// recorder `out.mid`; returns the route file's path.
func writePlainRoute(in directory: URL, song: String = "song.mid", loop: Bool = false) throws -> String {
    let routeFile = directory.appendingPathComponent("routes.yaml")
    try """
        endpoints:
          song: { file: \(song), loop: \(loop) }
          tape: { record: out.mid }
        routes:
          - { from: song, to: tape }
        """.write(to: routeFile, atomically: true, encoding: .utf8)
    return routeFile.path
}

/// The messages of the recording at `path`.
func recorded(_ path: URL) throws -> [MIDIMessage] {
    TimedSong(try StandardMIDIFile(bytes: [UInt8](try Data(contentsOf: path)))).entries.map(\.message)
}

/// Notes left sounding after `messages`.
func notesLeftOn(_ messages: [MIDIMessage]) -> Set<[UInt8]> {
    var on: Set<[UInt8]> = []
    for m in messages {
        switch m {
        case .noteOn(let c, let n, let v) where v.value > 0: on.insert([c.value, n.value])
        case .noteOn(let c, let n, _), .noteOff(let c, let n, _): on.remove([c.value, n.value])
        default: break
        }
    }
    return on
}

private let logger = Logger(label: "jambridge-test")

/// A route file playing song.mid into out.mid, transposed by `semitones`.
private func transposing(_ semitones: Int) -> String {
    """
    endpoints:
      song: { file: song.mid }
      tape: { record: out.mid }
    routes:
      - { from: song, to: tape, transpose: \(semitones) }
    """
}

@Suite(.serialized) struct DaemonTests {
    @Test func songPlaysThroughTheRouteIntoTheRecording() throws {
        let dir = try temporaryDirectory()
        let file = try writeSetup(in: dir, song: [
            .init(offset: 0, message: .noteOn(channel: ch(0), note: v(60), velocity: v(100))),
            .init(offset: 20 * ms, message: .controlChange(channel: ch(0), controller: v(1), value: v(64))),
            .init(offset: 40 * ms, message: .noteOff(channel: ch(0), note: v(60), velocity: v(0))),
            .init(offset: 60 * ms, message: .noteOn(channel: ch(1), note: v(62), velocity: v(90))),
            .init(offset: 80 * ms, message: .noteOn(channel: ch(1), note: v(62), velocity: v(0))),
        ], routes: """
            endpoints:
              song: { file: song.mid }
              tape: { record: out.mid }
            routes:
              - from: song
                to: tape
                transpose: 12
                channel: { 1: 3 }
            """)
        let daemon = JamBridgeDaemon(options: .init(files: [file], stopAfter: 0.5), logger: logger)
        let counters = try daemon.run()
        #expect(try recorded(dir.appendingPathComponent("out.mid")) == [
            .noteOn(channel: ch(2), note: v(72), velocity: v(100)),
            .controlChange(channel: ch(2), controller: v(1), value: v(64)),
            .noteOff(channel: ch(2), note: v(72), velocity: v(0)),
            .noteOn(channel: ch(1), note: v(74), velocity: v(90)),
            .noteOff(channel: ch(1), note: v(74), velocity: v(0)),
        ])
        #expect(counters.delivered == 5)
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("out.mid.partial").path))
    }

    @Test func stoppingWhileANoteIsHeldRecordsItsNoteOff() throws {
        let dir = try temporaryDirectory()
        let file = try writeSetup(in: dir, song: [
            .init(offset: 0, message: .noteOn(channel: ch(0), note: v(60), velocity: v(100))),
            .init(offset: 0, message: .controlChange(channel: ch(0), controller: v(64), value: v(127))),
            .init(offset: 60_000 * ms, message: .noteOff(channel: ch(0), note: v(60), velocity: v(0))),
        ], routes: """
            endpoints:
              song: { file: song.mid }
              tape: { record: out.mid }
            routes:
              - { from: song, to: tape }
            """)
        _ = try JamBridgeDaemon(options: .init(files: [file], stopAfter: 0.3), logger: logger).run()
        let messages = try recorded(dir.appendingPathComponent("out.mid"))
        #expect(messages.count == 4)
        #expect(notesLeftOn(messages).isEmpty)
        #expect(messages.contains(.controlChange(channel: ch(0), controller: v(64), value: v(0))))
    }

    @Test func aLoopedSongRepeatsWithoutHangingNotes() throws {
        let dir = try temporaryDirectory()
        // The note-off comes after the song's end: each loop must release it.
        var entries: [TimedSong.Entry] = [.init(offset: 0, message: .noteOn(channel: ch(0), note: v(60), velocity: v(100)))]
        entries.append(.init(offset: 100 * ms, message: .start))
        try Data(StandardMIDIFile.recording(entries).encoded()).write(to: dir.appendingPathComponent("song.mid"))
        let routeFile = try writePlainRoute(in: dir, loop: true)
        _ = try JamBridgeDaemon(options: .init(files: [routeFile], stopAfter: 0.75), logger: logger).run()
        let messages = try recorded(dir.appendingPathComponent("out.mid"))
        let noteOns = messages.filter { if case .noteOn(_, _, let v) = $0 { v.value > 0 } else { false } }
        #expect(noteOns.count >= 3)
        #expect(notesLeftOn(messages).isEmpty)
        // Every note-on is released before the next one.
        var sounding = false
        for m in messages {
            if case .noteOn = m { #expect(!sounding); sounding = true }
            if case .noteOff = m { sounding = false }
        }
    }

    @Test func reloadChangingATransposeReleasesTheHeldNoteWhereItWent() throws {
        let dir = try temporaryDirectory()
        let file = try writeSetup(in: dir, song: [
            .init(offset: 0, message: .noteOn(channel: ch(0), note: v(60), velocity: v(100))),
            .init(offset: 2000 * ms, message: .noteOff(channel: ch(0), note: v(60), velocity: v(0))),
            .init(offset: 2100 * ms, message: .noteOn(channel: ch(0), note: v(60), velocity: v(100))),
            .init(offset: 2200 * ms, message: .noteOff(channel: ch(0), note: v(60), velocity: v(0))),
        ], routes: transposing(0))
        // The reload lands while the first note is held (at 0.15 s; the note lasts 2 s).
        let daemon = JamBridgeDaemon(options: .init(files: [file], stopAfter: 3.0), logger: logger)
        let transposed = transposing(7)
        let reloader = Thread {
            Thread.sleep(forTimeInterval: 0.15)
            try? transposed.write(toFile: file, atomically: true, encoding: .utf8)
            daemon.reload()
        }
        reloader.start()
        _ = try daemon.run()
        #expect(try recorded(dir.appendingPathComponent("out.mid")) == [
            .noteOn(channel: ch(0), note: v(60), velocity: v(100)),
            .noteOff(channel: ch(0), note: v(60), velocity: v(0)),
            .noteOn(channel: ch(0), note: v(67), velocity: v(100)),
            .noteOff(channel: ch(0), note: v(67), velocity: v(0)),
        ])
    }

    @Test func aMissingSongIsARouteFileMistakeAndNothingStarts() throws {
        let dir = try temporaryDirectory()
        let routeFile = try writePlainRoute(in: dir, song: "nowhere.mid")
        #expect {
            _ = try JamBridgeDaemon(options: .init(files: [routeFile], stopAfter: 0.1), logger: logger).run()
        } throws: { error in
            guard case .routeFiles(let errors) = error as? DaemonError else { return false }
            return errors.description
                == "\(routeFile):2:17: cannot play the song '\(dir.path)/nowhere.mid': No such file or directory"
        }
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("out.mid").path))
    }

    @Test func aReloadWithASongThatCannotBePlayedKeepsTheRunningRoutes() throws {
        let dir = try temporaryDirectory()
        let file = try writeSetup(in: dir, song: [
            .init(offset: 0, message: .noteOn(channel: ch(0), note: v(60), velocity: v(100))),
            .init(offset: 100 * ms, message: .noteOff(channel: ch(0), note: v(60), velocity: v(0))),
            .init(offset: 800 * ms, message: .noteOn(channel: ch(0), note: v(62), velocity: v(100))),
            .init(offset: 900 * ms, message: .noteOff(channel: ch(0), note: v(62), velocity: v(0))),
        ], routes: transposing(0))
        let daemon = JamBridgeDaemon(options: .init(files: [file], stopAfter: 1.5), logger: logger)
        let songPath = dir.appendingPathComponent("song.mid")
        let transposed = transposing(12)
        // At 0.3 s the song file becomes text and the routes transpose: the reload fails as a whole.
        let breaker = Thread {
            Thread.sleep(forTimeInterval: 0.3)
            try? "not a song".write(to: songPath, atomically: true, encoding: .utf8)
            try? transposed.write(toFile: file, atomically: true, encoding: .utf8)
            daemon.reload()
        }
        breaker.start()
        _ = try daemon.run()
        #expect(try recorded(dir.appendingPathComponent("out.mid")) == [
            .noteOn(channel: ch(0), note: v(60), velocity: v(100)),
            .noteOff(channel: ch(0), note: v(60), velocity: v(0)),
            .noteOn(channel: ch(0), note: v(62), velocity: v(100)),
            .noteOff(channel: ch(0), note: v(62), velocity: v(0)),
        ])
    }
}
