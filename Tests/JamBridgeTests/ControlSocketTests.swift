import Foundation
@testable import JamBridge
import MIDI
import MIDITestSupport
import Testing

private let ms: UInt64 = 1_000_000

/// What `jambridge status --json` prints of the daemon `pid` (or of the one at `control`), decoded; nil if it fails.
func daemonStatus(_ pid: Int32? = nil, control: String? = nil) throws -> DaemonStatus? {
    let target = control.map { ["--control", $0] } ?? ["--pid", "\(pid!)"]
    let result = try jambridge(["status", "--json"] + target, killingAfter: 30)
    guard result.status == 0 else { return nil }
    return try? JSONDecoder().decode(DaemonStatus.self, from: Data(result.out.utf8))
}

/// The control socket with the real binary: `jambridge reload` with a connected peer and a held note, every field of
/// `status --json` against a running jam, who may connect, and clients that misbehave.
@Suite(.serialized) struct ControlSocketTests {
    @Test func aReloadThroughTheSocketKeepsThePeerAndItsHeldNoteAndABrokenFileIsRefusedWithItsMistakes() throws {
        try #require(FileManager.default.isExecutableFile(atPath: peersPython.path), "run scripts/install-deps.sh")
        let dir = try temporaryDirectory()
        let peerPort = freshSessionPort()
        let peer = try LineReadingProcess(peersPython, [repositoryRoot.appendingPathComponent("Tests/Peers/pymidi_peer.py").path,
                                                        "\(peerPort)", "60"])
        #expect(peer.waitForLine(containing: "listening"))
        let routes = { (tape: String) in """
            session: { name: rack, port: \(peerPort + 2), bind: 127.0.0.1, advertise: false, invite: [ { host: 127.0.0.1, port: \(peerPort) } ] }
            endpoints:
              song: { file: song.mid }
            \(tape.isEmpty ? "" : "  tape: { record: take.mid }")
            routes:
              - { from: song, to: session }
            \(tape)
            """ }
        // Note 60 is held from 1 s to 10 s, through both reloads; note 62 comes after them.
        let file = try writeSetup(in: dir, song: [.init(offset: 1000 * ms, message: noteOn(0, 60)), .init(offset: 10_000 * ms, message: noteOff(0, 60)),
                                                  .init(offset: 11_000 * ms, message: noteOn(0, 62)), .init(offset: 11_500 * ms, message: noteOff(0, 62))],
                                  routes: routes(""))
        let daemon = try JamBridgeProcess(["run", "--stop-after", "60", file])
        defer { daemon.interrupt() }
        #expect(peer.waitForLine(containing: "\"note_on\""), "\(peer.lines)")
        let before = try #require(try daemonStatus(daemon.pid)?.session)
        #expect(before.peers.map(\.name) == ["pymidi"], "\(before)")

        // A tape and its route are added: only the tape starts.
        try routes("  - { from: song, to: tape }").write(toFile: file, atomically: true, encoding: .utf8)
        let reloaded = try jambridge(["reload", "--pid", "\(daemon.pid)"], killingAfter: 60)
        #expect(reloaded.status == 0 && reloaded.out.contains("reloaded \(file): 3 endpoints, 2 routes; started tape\n"), "\(reloaded)")

        // A mistake: refused with where it is, and the routes in force run on.
        let broken = routes("  - from: song\n    to: tape\n    channels: [17]")
        try broken.write(toFile: file, atomically: true, encoding: .utf8)
        let line = broken.split(separator: "\n", omittingEmptySubsequences: false).firstIndex { $0.contains("[17]") }! + 1
        let refused = try jambridge(["reload", "--pid", "\(daemon.pid)"], killingAfter: 60)
        #expect(refused.status == 1, "\(refused)")
        #expect(refused.err.contains("jambridge reload: \(file) not reloaded: the route files have mistakes; the previous routes run on\n"
                                     + "\(file):\(line):16: channel 17 does not exist"), "\(refused.err)")
        #expect(!peer.lines.contains { $0.contains("\"note_off\"") }, "the note was released before the reloads ended: \(peer.lines)")

        // The note held through both reloads is released by the song, then the next note plays, to the peer and the tape.
        #expect(peer.waitForLine(containing: "\"key\": 62"), "\(peer.lines)")
        let after = try #require(try daemonStatus(daemon.pid))
        #expect(after.session?.ssrc == before.ssrc && after.session?.peers.map(\.ssrc) == before.peers.map(\.ssrc), "\(after)")
        #expect(after.recordings["tape"]?.path == dir.appendingPathComponent("take.mid").path, "\(after)")
        Thread.sleep(forTimeInterval: 1)
        daemon.interrupt()
        let result = daemon.finish(killingAfter: 30)
        #expect(result.status == 0, "\(result.err)")
        #expect(result.err.components(separatedBy: "peer 'pymidi' joined").count == 2, "\(result.err)")
        #expect(result.err.components(separatedBy: "peer 'pymidi' left").count == 2 && result.err.contains("peer 'pymidi' left: session closed"),
                "\(result.err)")
        #expect(peer.waitForLine(containing: "\"disconnected\""), "\(peer.lines)")
        peer.kill()
        let events = peer.lines.compactMap { line -> String? in
            guard let event = ["connected", "disconnected", "note_on", "note_off"].first(where: { line.contains("\"\($0)\"") }) else { return nil }
            return event + (line.firstMatch(of: /"key": (\d+)/).map { " \($0.1)" } ?? "")
        }
        // One connection (no goodbye, no new SSRC) from the first note to the stop.
        #expect(events == ["connected", "note_on 60", "note_off 60", "note_on 62", "note_off 62", "disconnected"], "\(peer.lines)")
        #expect(try recorded(dir.appendingPathComponent("take.mid")) == [noteOn(0, 62), noteOff(0, 62)])
    }

    @Test func statusJSONCarriesEveryPartOfARunningJam() throws {
        try #require(FileManager.default.isExecutableFile(atPath: peersPython.path), "run scripts/install-deps.sh")
        let dir = try temporaryDirectory()
        let pymidiPort = freshSessionPort(), portA = freshSessionPort(), portB = freshSessionPort()
        let osc = freshOSCPorts(3), (phonePort, senderPort, feedbackPort) = (osc[0], osc[1], osc[2])
        let pymidi = try LineReadingProcess(peersPython, [repositoryRoot.appendingPathComponent("Tests/Peers/pymidi_peer.py").path,
                                                          "\(pymidiPort)", "60"])
        #expect(pymidi.waitForLine(containing: "listening"))
        let fileB = dir.appendingPathComponent("b.yaml")
        try """
            session: { name: jam-b, port: \(portB), bind: 127.0.0.1, advertise: false }
            clock: {}
            """.write(to: fileB, atomically: true, encoding: .utf8)
        let fileA = try writeSetup(in: dir, song: [.init(offset: 0, message: noteOn(0, 48)), .init(offset: 400 * ms, message: noteOff(0, 48))],
                                   routes: """
            session:
              name: jam-a
              port: \(portA)
              bind: 127.0.0.1
              advertise: false
              invite: [ { host: 127.0.0.1, port: \(portB) }, { host: 127.0.0.1, port: \(pymidiPort) } ]
            clock: { tempo: 100 }
            activity: { combine: sum }
            drums: {}
            endpoints:
              phone: { osc: { listen: \(phonePort), host: 127.0.0.1, send: ["127.0.0.1:\(feedbackPort)"] } }
              song: { file: song.mid, loop: true }
              tape: { record: take.mid }
            routes:
              - { from: song, to: session }
              - { from: [drums, session], to: tape }
              - from: phone
                to: session
                osc:
                  /accxyz: { activity: motion }
            """)
        let b = try JamBridgeProcess(["run", "--stop-after", "120", fileB.path])
        let a = try JamBridgeProcess(["run", "--stop-after", "120", fileA])
        defer {
            a.interrupt()
            b.interrupt()
            pymidi.kill()
        }
        #expect(a.waitForError(containing: "peer 'jam-b' joined") && a.waitForError(containing: "peer 'pymidi' joined"), "\(a.errorSoFar)")
        for command in [["start"], ["drums", "level", "2"], ["drums", "mute", "clap"]] {
            #expect(try jambridge(command + ["--pid", "\(a.pid)"]).status == 0, "\(command)")
        }
        // The phone, sending from a port of its own, is shaken; then it sends a datagram that is not OSC.
        let shake = try JamBridgeProcess(["-c", """
            import math, socket, time
            from pythonosc.osc_message_builder import OscMessageBuilder
            phone = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            phone.bind(("127.0.0.1", \(senderPort)))
            for k in range(100):
                message = OscMessageBuilder("/accxyz")
                for value in (math.sin(k) * 2.0, math.cos(k * 1.3) * 2.0, 1.0):
                    message.add_arg(value)
                phone.sendto(message.build().dgram, ("127.0.0.1", \(phonePort)))
                time.sleep(0.02)
            phone.sendto(b"not OSC", ("127.0.0.1", \(phonePort)))
            """], launcher: peersPython.path)
        #expect(shake.finish(killingAfter: 30).status == 0)
        // B follows A once a clock sync has measured the peers; it hears A's total.
        #expect(waitUntil {
            let (statusA, statusB) = ((try? daemonStatus(a.pid)) ?? nil, (try? daemonStatus(b.pid)) ?? nil)
            return statusA?.session?.peers.allSatisfy { $0.roundTripMs != nil } == true && statusA?.jam?.songBeat ?? 0 > 1
                && statusB?.jam?.totalFromMaster == true && statusB?.jam?.total ?? 0 > 0
        })
        let statusA = try #require(try daemonStatus(a.pid)), statusB = try #require(try daemonStatus(b.pid))

        #expect(statusA.pid == a.pid && statusA.routeFiles == [fileA])
        let session = try #require(statusA.session)
        #expect(session.name == "jam-a" && session.port == portA && session.ssrc == statusB.session?.peers.first?.ssrc)
        #expect(session.peers.map(\.name) == ["jam-b", "pymidi"])
        for (peer, port) in zip(session.peers, [portB, pymidiPort]) {
            #expect(peer.address == "127.0.0.1:\(port)" && peer.weInvited && peer.journalRepairs == 0, "\(peer)")
            #expect(peer.roundTripMs.map { $0 >= 0 && $0 < 1000 } == true && peer.clockOffsetMs != nil, "\(peer)")
        }
        // jam-b reads the same monotonic clock (pymidi counts from its own start).
        #expect(session.peers[0].clockOffsetMs.map { abs($0) < 100 } == true, "\(session.peers[0])")
        #expect(session.peers[0].ssrc == statusB.session?.ssrc)
        #expect(session.counters["packetsSent"] ?? 0 > 0 && session.counters["malformed"] == 0 && session.counters["repairs"] == 0,
                "\(session.counters)")
        #expect(statusA.alsa == nil)
        let phone = try #require(statusA.osc["phone"])
        #expect(statusA.osc.count == 1 && phone.listen == "127.0.0.1:\(phonePort)" && phone.targets == ["127.0.0.1:\(feedbackPort)"], "\(phone)")
        #expect(phone.controllers.map(\.address) == ["127.0.0.1:\(senderPort)"] && phone.controllers.allSatisfy { $0.heardSecondsAgo >= 0 },
                "\(phone)")
        #expect(statusA.songs == ["song": DaemonStatus.Song(path: dir.appendingPathComponent("song.mid").path, loop: true)])
        #expect(statusA.recordings == ["tape": DaemonStatus.Recording(path: dir.appendingPathComponent("take.mid").path)])
        let jam = try #require(statusA.jam)
        #expect(jam.role == "master" && jam.master == "jam-a" && jam.masterSSRC == nil && jam.tempo == 100 && jam.refused == 0, "\(jam)")
        #expect(jam.songBeat ?? 0 > 1 && !jam.totalFromMaster, "\(jam)")
        #expect(jam.players.map(\.name) == ["phone"] && jam.players[0].level > 0 && jam.total == jam.players[0].level, "\(jam)")
        let drums = try #require(statusA.drums)
        #expect(drums.style == "rock" && drums.declaredStyle == "rock" && drums.level == 2 && drums.levels == 5 && drums.levelKept, "\(drums)")
        #expect(drums.playing && drums.bar ?? 0 >= 1 && (1...4).contains(drums.beat ?? 0) && drums.muted == ["clap"], "\(drums)")
        #expect(drums.notes > 0 && drums.audio == nil, "\(drums)")
        #expect(statusA.endpoints.keys.sorted() == ["drums", "jam", "phone", "session", "song", "tape"])
        let traffic = statusA.endpoints
        #expect(traffic["phone"]?.in ?? 0 > 0 && traffic["phone"]?.dropped["undecodable"] == 1 && traffic["phone"]?.dropped["notAccepted"] == 0,
                "\(traffic)")
        #expect(traffic["song"]?.in ?? 0 > 0 && traffic["session"]?.out ?? 0 > 0 && traffic["drums"]?.in ?? 0 > 0, "\(traffic)")
        #expect(traffic["tape"]?.out ?? 0 > 0 && traffic["tape"]?.in == 0 && traffic["drums"]?.out == 1, "\(traffic)") // the drums hear the jam's Start
        // The jam is an endpoint like any other: the phone's levels went to it, its clock and total came from it.
        #expect(traffic["jam"]?.out ?? 0 > 0 && traffic["jam"]?.in ?? 0 > 0, "\(traffic)")
        // The phone's levels reach its route, which leaves the jam's controllers out: the jam's, not filtered.
        #expect(statusA.router.delivered > 0 && statusA.router.filtered == 0 && statusA.router.unmatchedReleases == 0
                && statusA.router.heldTableFull == 0 && statusA.router.untrackable == 0, "\(statusA.router) \(traffic)")

        let follower = try #require(statusB.jam)
        #expect(follower.role == "follower" && follower.master == "jam-a" && follower.masterSSRC == session.ssrc, "\(follower)")
        // The master passes on its players' activity as its own.
        #expect(follower.tempo.map { abs($0 - 100) < 2 } == true && follower.songBeat != nil, "\(follower)")
        #expect(follower.players.map(\.name) == ["jam-a"] && follower.players[0].level > 0, "\(follower)")
        #expect(statusB.session?.peers.map(\.name) == ["jam-a"] && statusB.session?.peers.first?.weInvited == false && statusB.drums == nil)

        // The text is made from the same data; --watch redraws it in place every second on a terminal, and writes
        // one frame after another, without a terminal's escapes, into a pipe (issue 33, item 10).
        let text = try jambridge(["status", "--pid", "\(a.pid)"]).out
        for expected in ["jambridge \(a.pid) running \(fileA)\n", "session 'jam-a' on UDP port \(portA): 2 peers ('jam-b', 'pymidi')\n",
                         "  peer 'jam-b' at 127.0.0.1:\(portB) (we invited it): round trip ", "phone: OSC on 127.0.0.1:\(phonePort)\n",
                         "  controller 127.0.0.1:\(senderPort), heard ", "song: playing \(dir.appendingPathComponent("song.mid").path) (looped)\n",
                         "jam: master, clock master jam-a, 100.0 BPM, beat ", "drums: rock, level 2 (kept), bar ", ", muted: clap"] {
            #expect(text.contains(expected), "\(expected) in \(text)")
        }
        #expect(text.contains(/\n  phone: \d+ in, 0 out; dropped 1 undecodable\n/), "\(text)")
        let watch = try JamBridgeProcess(["status", "--watch", "--pid", "\(a.pid)"], terminal: true)
        #expect(watch.waitForOutput(containing: "jam: master", count: 3), "\(watch)")
        watch.interrupt()
        let watched = watch.finish(killingAfter: 20)
        #expect(watched.status == 0, "\(watched)")
        let frames = watched.out.components(separatedBy: "\u{1B}[H").dropFirst()
        #expect(frames.count >= 3 && frames.allSatisfy { $0.contains("\u{1B}[K\njam: master, clock master jam-a") && $0.contains("\u{1B}[J") },
                "\(frames)")
        let piped = try JamBridgeProcess(["status", "--watch", "--pid", "\(a.pid)"])
        #expect(piped.waitForOutput(containing: "jam: master", count: 2), "\(piped)")
        piped.interrupt()
        let written = piped.finish(killingAfter: 20)
        #expect(written.status == 0 && !written.out.contains("\u{1B}"), "\(written)")
        let pipedFrames = written.out.components(separatedBy: "\n\n").filter { !$0.trimmingCharacters(in: .newlines).isEmpty } // Ctrl-C ends the last line
        #expect(pipedFrames.count >= 2 && pipedFrames.allSatisfy { $0.hasPrefix("jambridge \(a.pid) running \(fileA)\n") && $0.contains("\njam: master, clock master jam-a") },
                "\(pipedFrames)")
        // jambridge peers asks the running daemons' sockets.
        let peers = try jambridge(["peers", "--browse", "0"]).out
        #expect(peers.contains("\"jam-a\"\tport \(portA)\tpid \(a.pid)\t2 connected\n  peer \"jam-b\"\t127.0.0.1:\(portB)\tround trip "), "\(peers)")
    }

    /// A daemon running a jam (`clock: {}`) with its control socket at a path of the test's; returns once it listens.
    private func jamWithSocket(stopAfter seconds: Int) throws -> (daemon: JamBridgeProcess, control: String, file: URL) {
        let dir = try temporaryDirectory()
        let control = dir.appendingPathComponent("control.sock").path
        let file = dir.appendingPathComponent("routes.yaml")
        try "clock: {}\n".write(to: file, atomically: true, encoding: .utf8)
        let daemon = try JamBridgeProcess(["run", "--stop-after", "\(seconds)", "--control", control, file.path])
        #expect(daemon.waitForError(containing: "control socket: \(control)"), "\(daemon.errorSoFar)")
        return (daemon, control, file)
    }

    /// `jambridge run` turns transparent huge pages off for itself (issue 34): where the system has them "always", the
    /// first touch of a thread's stack or arena took 2 MB at once, as much again as the rest of its anonymous memory.
    @Test func theDaemonTakesNoTransparentHugePages() throws {
        let (daemon, _, _) = try jamWithSocket(stopAfter: 30)
        let status = try String(contentsOfFile: "/proc/\(daemon.pid)/status", encoding: .utf8)
        #expect(status.contains("THP_enabled:\t0\n"), "\(status)")
        daemon.interrupt()
        #expect(daemon.finish().status == 0)
    }

    /// A daemon that reads no kit from disk maps none of the libraries kits need (issue 34): libsndfile, libsamplerate
    /// and libxml2 come with codecs and ICU, 1.7 MB resident in all, and are loaded when a kit first needs them.
    @Test func theDaemonLoadsTheKitsLibrariesOnlyForAKitFromDisk() throws {
        let (daemon, _, _) = try jamWithSocket(stopAfter: 30)
        let maps = try run("/bin/cat", ["/proc/\(daemon.pid)/maps"]).out // a size-0 file: String(contentsOfFile:) reads a page
        #expect(maps.contains("/libasound.so"), "\(maps)")
        for library in ["/libsndfile.so", "/libsamplerate.so", "/libxml2.so", "/libicuuc.so", "/libFLAC.so"] {
            #expect(!maps.contains(library), "\(library) is mapped")
        }
        daemon.interrupt()
        #expect(daemon.finish().status == 0)
    }

    /// A flood of starts and stops on the socket (or the status page's POSTs, which take the same path): a few a
    /// second are carried out, the rest refused for the rate and logged now and then, not a line each.
    @Test func aFloodOfStartsAndStopsIsRefusedBeyondTheRateWithFewLogLines() throws {
        try #require(FileManager.default.isExecutableFile(atPath: peersPython.path), "run scripts/install-deps.sh")
        let (daemon, control, _) = try jamWithSocket(stopAfter: 60)
        let sent = try run(peersPython.path, ["-c", """
            import socket, sys
            refused = 0
            for n in range(1000):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(sys.argv[1])
                s.sendall(b'{"command": "start"}\\n' if n % 2 == 0 else b'{"command": "stop"}\\n')
                refused += b"a second" in s.makefile("rb").readline()
                s.close()
            print(refused)
            """, control], mergingErrors: true)
        let refused = Int(sent.out.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect(refused > 900, "\(sent.out)")
        daemon.interrupt()
        let result = daemon.finish()
        #expect(result.status == 0, "\(result.err)")
        let lines = result.err.split(separator: "\n").filter { $0.contains("a second") }
        #expect(lines.count <= 25, "\(lines.count) lines for \(refused) refusals")
    }

    @Test func onlyTheSocketsOwnerAndGroupMayConnectAndASecondDaemonLeavesItAlone() throws {
        try #require(getuid() == 0, "switching to another user needs root")
        let (daemon, control, file) = try jamWithSocket(stopAfter: 60)
        defer { daemon.interrupt() }
        var info = stat()
        #expect(lstat(control, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK && info.st_mode & 0o777 == 0o660)
        // nobody in root's group (the socket's) is let in; nobody alone is not.
        let member = try jambridgeAs(["--reuid=nobody", "--regid=nogroup", "--groups=0"], ["status", "--control", control])
        #expect(member.status == 0 && member.out.contains("jam: idle"), "\(member)")
        let stranger = try jambridgeAs(["--reuid=nobody", "--regid=nogroup", "--clear-groups"], ["status", "--control", control])
        #expect(stranger.status == 1 && stranger.err.contains("cannot reach jambridge at \(control): Permission denied"), "\(stranger)")
        // A second daemon told to listen there runs without the socket, and the first keeps it.
        let second = try JamBridgeProcess(["run", "--stop-after", "2", "--control", control, file.path])
        let secondResult = second.finish(killingAfter: 30)
        #expect(secondResult.status == 0 && secondResult.err.contains("the control socket \(control): another jambridge is listening there"),
                "\(secondResult.err)")
        #expect(try daemonStatus(control: control)?.pid == daemon.pid)
        daemon.interrupt()
        #expect(daemon.finish(killingAfter: 30).status == 0)
        #expect(!FileManager.default.fileExists(atPath: control))
    }

    @Test func garbageHugeLinesSilentClientsAndAHundredAtOnceDoNotStallTheDaemon() throws {
        let (daemon, control, _) = try jamWithSocket(stopAfter: 120)
        defer { daemon.interrupt() }

        #expect(try exchange(control, Array("hello\n".utf8)).contains(#""message":"not a request: send one line of JSON"#))
        #expect(try exchange(control, Array(#"{"command": "dance"}"#.utf8) + [10]).contains(#""ok":false"#))
        let huge = try exchange(control, [UInt8](repeating: UInt8(ascii: "x"), count: 1 << 20))
        #expect(huge.contains("a request is one line of at most 4096 bytes"), "\(huge)")

        // 100 clients that say nothing: a status is answered while they are still held.
        let silent = try (0..<100).map { _ in try connected(control) }
        let status = try jambridge(["status", "--control", control], killingAfter: 30)
        #expect(status.status == 0 && status.out.contains("jam: idle"), "\(status)")
        #expect(!hungUp(silent.last!), "the status waited for the silent clients to time out")
        // Each of them is then dropped, or told it sent nothing in time.
        #expect(waitUntil { silent.allSatisfy(hungUp) })
        let told = silent.filter { fd in readAll(fd).contains("no request within 2 s") }.count
        for fd in silent { close(fd) }
        #expect(told > 0)

        // 100 clients at once: each connects and sends a status request before any reads its answer; all are answered.
        let request = Array(#"{"command": "status"}"#.utf8) + [10]
        let many = try (0..<100).map { _ in
            let fd = try connected(control)
            #expect(write(fd, request, request.count) == request.count)
            return fd
        }
        let answers = many.map { fd in
            defer { close(fd) }
            return readAll(fd)
        }
        #expect(answers.filter { $0.hasPrefix(#"{"message":"jambridge \#(daemon.pid) running"#) }.count == 100, "\(Set(answers))")
        #expect(try daemonStatus(control: control)?.jam?.role == "idle")
        daemon.interrupt()
        #expect(daemon.finish(killingAfter: 30).status == 0)
    }

    /// A user's socket directory (`/tmp/jambridge-UID` without XDG_RUNTIME_DIR) that another user owns, or that
    /// others may write in, is refused by the daemon and its clients, saying what to do; one that is not there is made
    /// with mode 0700. Run as `nobody` (uid 65534).
    @Test(.enabled(if: getuid() == 0, "switching to another user needs root"))
    func aForeignOrWorldWritableSocketDirectoryIsRefused() throws {
        let directory = "/tmp/jambridge-65534"
        try? FileManager.default.removeItem(atPath: directory)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = try temporaryDirectory().appendingPathComponent("routes.yaml")
        try "clock: {}\n".write(to: file, atomically: true, encoding: .utf8)
        let asNobody = ["-u", "XDG_RUNTIME_DIR", "-u", "RUNTIME_DIRECTORY", "/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                        executable.path]
        let run = { try JamBridgeProcess(asNobody + ["run", "--stop-after", "3", file.path], launcher: "/usr/bin/env").finish(killingAfter: 60) }
        let status = { try JamBridgeProcess(asNobody + ["status"], launcher: "/usr/bin/env").finish(killingAfter: 30) }

        // Another user's (root's), as if made before this user ever ran jambridge.
        #expect(mkdir(directory, 0o755) == 0)
        let foreign = "the control socket's directory \(directory) belongs to user 'root' (0), not to you (user 'nobody' (65534)): "
            + "another user could answer in jambridge's place. Remove it (sudo rm -r \(directory)), or set XDG_RUNTIME_DIR to a directory of your own"
        let refusedForeign = try run()
        #expect(refusedForeign.status == 0 && refusedForeign.err.contains(foreign + "; 'jambridge status', 'reload' and the jam's commands cannot reach"),
                "\(refusedForeign.err)")
        let clientForeign = try status()
        #expect(clientForeign.status == 1 && clientForeign.err.contains(foreign), "\(clientForeign.err)")

        // This user's, but anyone may write in it.
        #expect(chown(directory, 65534, 65534) == 0 && chmod(directory, 0o777) == 0)
        let writable = "the control socket's directory \(directory) can be written by others (mode 777): another user could put a socket of "
            + "their own in it and answer in jambridge's place. Make it yours alone (chmod 700 \(directory)), or remove it"
        let refusedWritable = try run()
        #expect(refusedWritable.status == 0 && refusedWritable.err.contains(writable), "\(refusedWritable.err)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty, "no socket was made in it")
        let clientWritable = try status()
        #expect(clientWritable.status == 1 && clientWritable.err.contains(writable), "\(clientWritable.err)")

        // None there: the daemon makes it, this user's alone, and its clients reach it.
        try FileManager.default.removeItem(atPath: directory)
        let daemon = try JamBridgeProcess(asNobody + ["run", "--stop-after", "60", file.path], launcher: "/usr/bin/env")
        defer { daemon.interrupt() }
        #expect(daemon.waitForError(containing: "control socket: \(directory)/control-"), "\(daemon.errorSoFar)")
        var info = stat()
        #expect(lstat(directory, &info) == 0 && info.st_uid == 65534 && info.st_mode & 0o7777 == 0o700)
        let reached = try JamBridgeProcess(asNobody + ["status", "--pid", "\(daemon.pid)"], launcher: "/usr/bin/env").finish(killingAfter: 30)
        #expect(reached.status == 0 && reached.out.contains("jam: idle"), "\(reached)")
        daemon.interrupt()
        #expect(daemon.finish(killingAfter: 30).status == 0)
    }

    /// Out of file descriptors (the status page's connections hold them all, under a limit of 64), the control socket
    /// backs off instead of spinning, says so once, and answers once descriptors are free again.
    @Test func outOfFileDescriptorsTheControlSocketBacksOffAndSaysSoOnce() throws {
        let dir = try temporaryDirectory()
        let control = dir.appendingPathComponent("control.sock").path
        let file = dir.appendingPathComponent("routes.yaml")
        let port = freshTCPPort()
        try "clock: {}\nhttp: { listen: \(port) }\n".write(to: file, atomically: true, encoding: .utf8)
        let daemon = try JamBridgeProcess(["--nofile=64", "--", executable.path, "run", "--stop-after", "120", "--control", control, file.path],
                                          launcher: "/usr/bin/prlimit")
        defer { daemon.interrupt() }
        #expect(daemon.waitForError(containing: "control socket: \(control)"), "\(daemon.errorSoFar)")
        // Connections that send nothing, until the daemon can accept no more.
        var held: [Int32] = []
        defer { held.forEach { close($0) } }
        let openFiles = { openDescriptors(daemon.pid, below: 64) }
        while openFiles() < 64, held.count < 100 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: port.bigEndian,
                                      sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            held.append(fd)
            Thread.sleep(forTimeInterval: 0.01)
        }
        #expect(openFiles() == 64)
        // A client of the control socket waits in the backlog: three seconds of CPU time, not of spinning.
        let client = try connected(control)
        defer { close(client) }
        let request = Array(#"{"command": "status"}"#.utf8) + [10]
        #expect(write(client, request, request.count) == request.count)
        let ticks = { cpuTicks(daemon.pid) }
        let before = ticks()
        Thread.sleep(forTimeInterval: 3)
        let used = Double(ticks() - before) / Double(sysconf(Int32(_SC_CLK_TCK)))
        #expect(used < 0.5, "\(used) s of CPU time in 3 s")
        let said = "control socket: cannot accept a client: Too many open files; trying again every second (1 time so far)"
        #expect(daemon.errorSoFar.components(separatedBy: "control socket: cannot accept a client: ").count == 2 && daemon.errorSoFar.contains(said),
                "\(daemon.errorSoFar)")
        held.forEach { close($0) }
        held = []
        #expect(readAll(client).hasPrefix(#"{"message":"jambridge \#(daemon.pid) running"#))
        daemon.interrupt()
        let result = daemon.finish(killingAfter: 30)
        #expect(result.status == 0, "\(result.err)")
    }
}

/// How many of the descriptors process `pid` may have under a limit of `limit` are open: those numbered below it. One
/// it inherited numbered above (the end of a socket pair that Foundation's Process, started by another test meanwhile,
/// leaks into children) takes no place: counting it, a test thought the daemon full while a descriptor was free.
func openDescriptors(_ pid: Int32, below limit: Int) -> Int {
    ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).compactMap { Int($0) }.filter { $0 < limit }.count
}

/// The CPU time process `pid` has used, user and system, in clock ticks (`_SC_CLK_TCK` a second).
func cpuTicks(_ pid: Int32) -> Int {
    let fields = ((try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? "").split(separator: ")").last?.split(separator: " ") ?? []
    return fields.count > 12 ? (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0) : 0
}

/// Runs jambridge under `setpriv CREDENTIALS`; its status, standard output and standard error.
func jambridgeAs(_ credentials: [String], _ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
    try JamBridgeProcess(credentials + [executable.path] + arguments, launcher: "/usr/bin/setpriv").finish(killingAfter: 30)
}

/// A connection to the Unix socket at `path` (reads and writes time out after 30 s, so that a test cannot hang).
func connected(_ path: String) throws -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    guard result == 0 else {
        close(fd)
        throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
    }
    var timeout = timeval(tv_sec: 30, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    return fd
}

/// Sends `bytes` to the socket at `path` (as much as it takes before the daemon hangs up), then reads the answer.
private func exchange(_ path: String, _ bytes: [UInt8]) throws -> String {
    let fd = try connected(path)
    defer { close(fd) }
    var sent = 0
    while sent < bytes.count {
        let count = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
        guard count > 0 else { break }
        sent += count
    }
    return readAll(fd)
}

/// What the daemon sent on `fd` until it hung up.
func readAll(_ fd: Int32) -> String {
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while case let count = read(fd, &buffer, buffer.count), count > 0 { received += buffer[..<count] }
    return String(decoding: received, as: UTF8.self)
}

/// True if the daemon has answered or closed the connection `fd` (something, or the end, is there to read).
func hungUp(_ fd: Int32) -> Bool {
    var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    return poll(&entry, 1, 0) == 1
}
