import Foundation
@testable import JamBridge
import Jam
import Logging
import MIDI
import MIDITestSupport
import Testing

// The lifecycle every kind of part keeps (docs/internals.md, "Parts"), once per kind, with real parts: a daemon in
// this process starts from an empty configuration, is given the same configuration again (nothing restarts), then a
// changed one (only what changed restarts, and a note held through it is released), and stops. ALSA's part runs
// on a real sequencer, in PartLifecycleALSAIntegrationTests (ALSAIntegrationTests.swift).

private let ms: UInt64 = 1_000_000
private let logger = Logger(label: "jambridge-lifecycle-test")

/// A daemon started in this process on the route file `file`.
func startedDaemon(_ file: String) throws -> JamBridgeDaemon {
    let daemon = JamBridgeDaemon(options: .init(files: [file]), logger: logger)
    try daemon.start()
    return daemon
}

/// Writes `routes` to `file` and reloads `daemon`; what the reload changed.
func reload(_ daemon: JamBridgeDaemon, _ file: String, with routes: String) throws -> ReloadOutcome? {
    try routes.write(toFile: file, atomically: true, encoding: .utf8)
    return daemon.reload()
}

/// What a reload that changes nothing answers.
let nothingRestarted = ReloadOutcome(started: [], stopped: [])

/// A note on at once and off after a minute: held through every reload of a test.
private let heldNote = [TimedSong.Entry(offset: 0, message: noteOn(0, 60)), TimedSong.Entry(offset: 60_000 * ms, message: noteOff(0, 60))]

@Suite(.serialized) struct PartLifecycleTests {
    @Test func aSongPlaysOnThroughTheSameConfigurationAndStartsAgainWhenItsEndpointChanges() throws {
        let dir = try temporaryDirectory()
        let routes = { (loop: Bool) in """
            endpoints:
              song: { file: song.mid, loop: \(loop) }
              tape: { record: take.mid }
            routes:
              - { from: song, to: tape }
            """ }
        let file = try writeSetup(in: dir, song: heldNote, routes: routes(false))
        let daemon = try startedDaemon(file)
        let songs = daemon.report()?.songs
        #expect(songs == ["song": DaemonStatus.Song(path: dir.appendingPathComponent("song.mid").path, loop: false)], "\(daemon.status())")
        Thread.sleep(forTimeInterval: 0.3) // the note is on
        #expect(try reload(daemon, file, with: routes(false)) == nothingRestarted)
        #expect(daemon.report()?.songs == songs)
        #expect(try reload(daemon, file, with: routes(true)) == ReloadOutcome(started: ["song"], stopped: ["song"]))
        Thread.sleep(forTimeInterval: 0.3) // played from the start again
        _ = daemon.stop()
        #expect(daemon.status().isEmpty)
        #expect(try recorded(dir.appendingPathComponent("take.mid")) == [noteOn(0, 60), noteOff(0, 60), noteOn(0, 60), noteOff(0, 60)])
    }

    @Test func theJamKeepsItsMasterThroughTheSameRulesAndStartsAfreshWhenTheyChange() throws {
        let dir = try temporaryDirectory()
        let routes = { (tempo: Int, to: String) in """
            clock: { tempo: \(tempo), to: [\(to)] }
            endpoints:
              song: { file: song.mid }
              tape: { record: take.mid }
              clock-tape: { record: clock.mid }
            routes:
              - { from: song, to: tape }
            """ }
        let file = try writeSetup(in: dir, song: heldNote, routes: routes(100, "tape"))
        let daemon = try startedDaemon(file)
        let jam = { daemon.status().first { $0.hasPrefix("jam:") } ?? "" }
        #expect(jam().hasPrefix("jam: idle, clock master nobody, 100.0 BPM"), "\(jam())")
        #expect(daemon.perform(.jam(.start), from: .controlSocket) == .success("started at 100 BPM"))
        Thread.sleep(forTimeInterval: 0.3)
        #expect(jam().hasPrefix("jam: master, clock master jambridge, 100.0 BPM"), "\(jam())")
        #expect(try reload(daemon, file, with: routes(100, "tape")) == nothingRestarted)
        #expect(try reload(daemon, file, with: routes(100, "clock-tape")) == nothingRestarted)
        #expect(jam().hasPrefix("jam: master"), "\(jam())")
        // New rules make the jam, and its endpoint, anew.
        #expect(try reload(daemon, file, with: routes(90, "clock-tape")) == ReloadOutcome(started: ["jam"], stopped: ["jam"]))
        #expect(jam().hasPrefix("jam: idle, clock master nobody, 90.0 BPM"), "\(jam())")
        _ = daemon.stop()
        #expect(daemon.status().isEmpty)
    }

    @Test func aRecorderTakesOnThroughTheSameConfigurationAndANewTakeWhenItsPathChanges() throws {
        let dir = try temporaryDirectory()
        let routes = { (take: String) in """
            endpoints:
              song: { file: song.mid }
              tape: { record: \(take) }
            routes:
              - { from: song, to: tape }
            """ }
        let file = try writeSetup(in: dir, song: heldNote, routes: routes("take.mid"))
        let daemon = try startedDaemon(file)
        #expect(daemon.report()?.recordings["tape"]?.path == dir.appendingPathComponent("take.mid").path, "\(daemon.status())")
        Thread.sleep(forTimeInterval: 0.3)
        #expect(try reload(daemon, file, with: routes("take.mid")) == nothingRestarted)
        #expect(try reload(daemon, file, with: routes("other.mid")) == ReloadOutcome(started: ["tape"], stopped: ["tape"]))
        #expect(daemon.report()?.recordings["tape"]?.path == dir.appendingPathComponent("other.mid").path, "\(daemon.status())")
        _ = daemon.stop()
        // The first take got the release of the note it was sounding when it stopped; the song played on.
        #expect(try recorded(dir.appendingPathComponent("take.mid")) == [noteOn(0, 60), noteOff(0, 60)])
        #expect(try recorded(dir.appendingPathComponent("other.mid")) == [])
    }

    @Test func anOSCEndpointListensOnThroughTheSameConfigurationAndOnItsPortAgainWhenItsSettingsChange() throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/oscsend"), "run scripts/install-deps.sh (liblo-tools)")
        let dir = try temporaryDirectory()
        let port = freshOSCPorts(1)[0]
        let routes = { (forget: Int) in """
            endpoints:
              phone: { osc: { listen: \(port), host: 127.0.0.1, forget: \(forget) } }
              tape: { record: take.mid }
            routes:
              - from: phone
                to: tape
                osc:
                  /1/push<n:1-16>: { note: "n + 59" }
            """ }
        let file = dir.appendingPathComponent("routes.yaml").path
        try routes(10).write(toFile: file, atomically: true, encoding: .utf8)
        let daemon = try startedDaemon(file)
        #expect(daemon.status().first == "phone: OSC on 127.0.0.1:\(port)")
        /// Presses button `n` with oscsend and gives jambridge time to take it.
        func press(_ n: Int) throws {
            #expect(try run("/usr/bin/oscsend", ["127.0.0.1", "\(port)", "/1/push\(n)", "f", "1.0"]).status == 0)
            Thread.sleep(forTimeInterval: 0.5)
        }
        try press(1)
        #expect(try reload(daemon, file, with: routes(10)) == nothingRestarted)
        #expect(try reload(daemon, file, with: routes(20)) == ReloadOutcome(started: ["phone"], stopped: ["phone"]))
        try press(3) // heard on the same port by the endpoint made again
        _ = daemon.stop()
        #expect(!isBound(port))
        #expect(try recorded(dir.appendingPathComponent("take.mid")) == [noteOn(0, 60), noteOff(0, 60), noteOn(0, 62), noteOff(0, 62)])
    }

    @Test func aSessionKeepsItsPeerThroughTheSameConfigurationAndReleasesWhatItSentWhenItStartsAgain() throws {
        try #require(FileManager.default.isExecutableFile(atPath: peersPython.path), "run scripts/install-deps.sh")
        let dir = try temporaryDirectory()
        let pymidiPort = freshSessionPort()
        let peer = try LineReadingProcess(peersPython, [repositoryRoot.appendingPathComponent("Tests/Peers/pymidi_peer.py").path,
                                                        "\(pymidiPort)", "60"])
        #expect(peer.waitForLine(containing: "listening"))
        let routes = { (name: String) in """
            session:
              name: \(name)
              port: \(pymidiPort + 2)
              bind: 127.0.0.1
              advertise: false
              invite: [ { host: 127.0.0.1, port: \(pymidiPort) } ]
            endpoints:
              song: { file: song.mid }
            routes:
              - { from: song, to: session }
            """ }
        let file = try writeSetup(in: dir, song: [.init(offset: 1000 * ms, message: noteOn(0, 60)),
                                                  .init(offset: 60_000 * ms, message: noteOff(0, 60))], routes: routes("rack"))
        let daemon = try startedDaemon(file)
        #expect(peer.waitForLine(containing: "note_on"), "\(peer.lines)")
        #expect(waitUntil { daemon.status().first == "session 'rack' on UDP port \(pymidiPort + 2): 1 peer ('pymidi')" },
                "\(daemon.status())")
        #expect(try reload(daemon, file, with: routes("rack")) == nothingRestarted)
        Thread.sleep(forTimeInterval: 0.5)
        #expect(!peer.lines.contains { $0.contains("disconnected") }, "\(peer.lines)")
        #expect(daemon.status().first == "session 'rack' on UDP port \(pymidiPort + 2): 1 peer ('pymidi')")
        #expect(try reload(daemon, file, with: routes("rack two")) == ReloadOutcome(started: ["session"], stopped: ["session"]))
        #expect(peer.waitForLine(containing: "note_off"), "\(peer.lines)")
        #expect(waitUntil { peer.lines.filter { $0.contains("\"connected\"") }.count == 2 }, "\(peer.lines)")
        _ = daemon.stop()
        #expect(!isBound(pymidiPort + 2) && !isBound(pymidiPort + 3))
        #expect(waitUntil { peer.lines.filter { $0.contains("\"disconnected\"") }.count == 2 }, "\(peer.lines)")
        peer.kill()
        let events = peer.lines.compactMap { line in
            ["connected", "disconnected", "note_on", "note_off"].first { line.contains("\"\($0)\"") }
        }
        // The note the session sent is released before the session says goodbye and is made again.
        #expect(events.prefix(4) == ["connected", "note_on", "note_off", "disconnected"], "\(peer.lines)")
    }
}
