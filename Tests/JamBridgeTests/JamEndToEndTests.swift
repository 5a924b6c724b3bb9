import Foundation
import Testing

/// The jam end to end on loopback with the real binary: two jambridge instances in one RTP-MIDI session, a phone's
/// OSC motion stream into one of them, and a third-party player (built on pymidi's packets) that sends Start. The
/// instances are driven and read through `jambridge start|stop|status`, as a user does.
@Suite(.serialized) struct JamEndToEndTests {
    /// Runs `jambridge ARGUMENTS` to its end; returns its exit status and standard output.
    private func jambridge(_ arguments: [String]) throws -> (status: Int32, out: String) {
        let result = try JamBridgeProcess(arguments).finish(killingAfter: 20)
        return (result.status, result.out + result.err)
    }

    /// The `jam:` line of `daemon`'s status.
    private func jamStatus(_ daemon: JamBridgeProcess) throws -> String {
        let (_, out) = try jambridge(["status", "--pid", "\(daemon.pid)"])
        return out.split(separator: "\n").first { $0.hasPrefix("jam:") }.map(String.init) ?? out
    }

    /// Waits (at most `seconds`) until `daemon`'s jam status line contains `text` (and `holds`); returns the last
    /// line read.
    private func waitForStatus(_ daemon: JamBridgeProcess, containing text: String, seconds: Double = 10,
                               holds: (String) -> Bool = { _ in true }) throws -> String {
        let deadline = Date().addingTimeInterval(seconds)
        var line = try jamStatus(daemon)
        while !(line.contains(text) && holds(line)), Date() < deadline {
            Thread.sleep(forTimeInterval: 0.1)
            line = try jamStatus(daemon)
        }
        return line
    }

    @Test func twoInstancesAPhoneAndAThirdPartyStarter() throws {
        try #require(FileManager.default.isExecutableFile(atPath: peersPython.path), "run scripts/install-deps.sh")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("jambridge-jam-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let portA = freshSessionPort(), portB = portA + 2, phonePort = freshOSCPorts(1)[0]
        let fileA = directory.appendingPathComponent("a.yaml"), fileB = directory.appendingPathComponent("b.yaml")
        try """
            session: { name: jam-a, port: \(portA), advertise: false, invite: [{ host: 127.0.0.1, port: \(portB) }] }
            clock: {}
            activity: { combine: sum }
            endpoints:
              tape: { record: take.mid }
            routes:
              - { from: session, to: tape }
            """.write(to: fileA, atomically: true, encoding: .utf8)
        try """
            session: { name: jam-b, port: \(portB), advertise: false }
            clock: {}
            endpoints:
              phone: { osc: { listen: \(phonePort), control: true } }
            routes:
              - from: phone
                to: session
                osc:
                  /accxyz: { activity: motion }
            """.write(to: fileB, atomically: true, encoding: .utf8)
        let b = try JamBridgeProcess(["run", "--stop-after", "120", fileB.path])
        let a = try JamBridgeProcess(["run", "--stop-after", "120", fileA.path])
        defer {
            a.interrupt()
            b.interrupt()
        }
        #expect(a.waitForError(containing: "peer 'jam-b' joined"), "\(a.errorSoFar)")

        // A starts the rhythm and leads; B follows A's clock.
        #expect(try jambridge(["start", "--pid", "\(a.pid)"]).status == 0)
        #expect(try waitForStatus(a, containing: "jam: master").contains("jam: master, clock master jam-a"))
        #expect(try waitForStatus(b, containing: "jam: follower").contains("clock master jam-a"))
        #expect(try waitForStatus(b, containing: "120.0 BPM").contains("120.0 BPM"))

        // The phone is shaken: B passes its level to A, whose total rises, and B hears A's total (CC 7).
        let shake = try JamBridgeProcess(["-c", """
            import math, time
            from pythonosc.udp_client import SimpleUDPClient
            phone = SimpleUDPClient("127.0.0.1", \(phonePort))
            for k in range(150):
                phone.send_message("/accxyz", [math.sin(k) * 2.0, math.cos(k * 1.3) * 2.0, 1.0])
                time.sleep(0.02)
            """], launcher: peersPython.path)
        #expect(shake.finish(killingAfter: 30).status == 0)
        let totalAtA = try waitForStatus(a, containing: "(jam-b")
        #expect(totalAtA.contains("jam-b"), "\(totalAtA)")
        func heardTotal(_ line: String) -> Int {
            let words = line.split(separator: " ")
            return words.firstIndex(of: "(from").flatMap { Int(words[$0 - 1]) } ?? 0
        }
        let heardAtB = try waitForStatus(b, containing: "(from the master)") { heardTotal($0) > 0 }
        #expect(heardTotal(heardAtB) > 0, "\(heardAtB)")

        // While A leads, B's start is refused; A stops, B starts and leads.
        let refused = try jambridge(["start", "--pid", "\(b.pid)"])
        #expect(refused.status == 1 && refused.out.contains("refused: jam-a"), "\(refused.out)")
        // A start refused less than 100 ms before the master stops leads then (it was pressed as the stop went out): wait well beyond that, and beyond the clock-sync error of a loaded machine.
        Thread.sleep(forTimeInterval: 1)
        #expect(try jambridge(["stop", "--pid", "\(a.pid)"]).status == 0)
        #expect(try waitForStatus(b, containing: "jam: idle").contains("jam: idle"))
        #expect(try jambridge(["start", "--pid", "\(b.pid)"]).status == 0)
        #expect(try waitForStatus(a, containing: "clock master jam-b").contains("jam: follower, clock master jam-b"))

        // A third-party player joins A and sends Start: refused while B leads; once B stops, it leads A.
        let starter = try ScriptProcess("applemidi_starter.py", ["\(portA)"])
        let tell = starter.tell
        #expect(starter.line().contains("joined"))
        // Well after B's start: starts less than 100 ms apart are decided by SSRC, not by time.
        Thread.sleep(forTimeInterval: 1)
        _ = tell("start")
        #expect(a.waitForError(containing: "refused Start from starter"), "\(a.errorSoFar)")
        #expect(try jamStatus(a).contains("clock master jam-b"))
        _ = tell("stop")
        #expect(try jambridge(["stop", "--pid", "\(b.pid)"]).status == 0)
        #expect(try waitForStatus(a, containing: "jam: idle").contains("jam: idle"))
        _ = tell("start")
        #expect(try waitForStatus(a, containing: "clock master starter").contains("jam: follower, clock master starter"))
        _ = tell("leave")
        #expect(a.waitForError(containing: "starter (peer"), "\(a.errorSoFar)")
        #expect(try waitForStatus(a, containing: "jam: idle").contains("jam: idle"))
        starter.waitUntilExit()

        // The phone drives B's jam too: OSC /jambridge/tempo, /start and /stop, as jambridge tempo|start|stop do.
        let press = try JamBridgeProcess(["-c", """
            import time
            from pythonosc.udp_client import SimpleUDPClient
            phone = SimpleUDPClient("127.0.0.1", \(phonePort))
            phone.send_message("/jambridge/tempo", 90.0)
            phone.send_message("/jambridge/start", [])
            """], launcher: peersPython.path)
        #expect(press.finish(killingAfter: 30).status == 0)
        #expect(try waitForStatus(b, containing: "jam: master").contains("jam: master, clock master jam-b, 90.0 BPM"))
        #expect(try waitForStatus(a, containing: "clock master jam-b").contains("jam: follower, clock master jam-b"))
        let release = try JamBridgeProcess(["-c", """
            from pythonosc.udp_client import SimpleUDPClient
            SimpleUDPClient("127.0.0.1", \(phonePort)).send_message("/jambridge/stop", [])
            """], launcher: peersPython.path)
        #expect(release.finish(killingAfter: 30).status == 0)
        #expect(try waitForStatus(b, containing: "jam: idle").contains("jam: idle"))

        a.interrupt()
        b.interrupt()
        let (logA, logB) = (a.finish(killingAfter: 20), b.finish(killingAfter: 20))
        #expect(logA.status == 0 && logB.status == 0, "\(logA.err)\n\(logB.err)")
        #expect(logA.err.contains("clock master: jam-a (started the rhythm); this instance is the master"))
        #expect(logB.err.contains("clock master: jam-b (started the rhythm); this instance is the master"))
    }

    /// A master's Start, its first tick and its first total leave in one packet: sent one by one, the network may
    /// reorder them, and a first tick overtaken is dropped as late, the follower then counting the song from its
    /// second tick, a tick behind for the whole song. (Found by the acceptance scenario: a log line between the Start
    /// and its tick delayed the tick by 20 ms in the VM, and netem's jitter put the total sent with it first.)
    @Test func aStartItsFirstTickAndTheTotalLeaveInOnePacket() throws {
        try #require(FileManager.default.isExecutableFile(atPath: peersPython.path), "run scripts/install-deps.sh")
        let directory = try temporaryDirectory()
        let port = freshSessionPort()
        let file = directory.appendingPathComponent("master.yaml")
        try "session: { name: master, port: \(port), bind: 127.0.0.1, advertise: false }\nclock: {}\n"
            .write(to: file, atomically: true, encoding: .utf8)
        let master = try JamBridgeProcess(["run", "--stop-after", "60", file.path])
        defer { master.interrupt() }
        #expect(waitUntilBound([port, port + 1]))
        // A listener built on applemidi.py's handshake prints each RTP packet's command list in hex.
        let listener = try LineReadingProcess(peersPython, ["-c", """
            import socket, sys, time
            sys.path.insert(0, "\(repositoryRoot.appendingPathComponent("Tests/Peers").path)")
            from applemidi import Player
            player = Player(int(sys.argv[1]), "listener")
            assert player.join()
            print("joined", flush=True)
            player.data.settimeout(0.2)
            end = time.monotonic() + 20
            while time.monotonic() < end:
                try:
                    datagram = player.data.recv(65536)
                except socket.timeout:
                    continue
                if datagram[:2] == b"\\xff\\xff":
                    continue
                flags = datagram[12]
                length, start = (((flags & 15) << 8) | datagram[13], 14) if flags & 0x80 else (flags & 15, 13)
                print(datagram[start:start + length].hex(), flush=True)
            """, "\(port)"])
        defer { listener.kill() }
        #expect(listener.waitForLine(containing: "joined"))
        #expect(try jambridge(["start", "--pid", "\(master.pid)"]).status == 0)
        #expect(listener.waitForLine(containing: "fa"))
        // Start, then (delta 0) the first tick, then (delta 0) the total: CC 7 on channel 1 at 0.
        let first = listener.lines.first { $0.contains("fa") }
        #expect(first == "fa00f800b00700", "\(listener.lines.prefix(5))")
    }

    /// Issue 31: a master that quits (SIGTERM) says goodbye without Stop: a follower with `on-master-lost: next`
    /// carries the song; one with `stop` stops.
    @Test(arguments: ["next", "stop"]) func aMasterThatQuitsLeavesTheSongToItsFollowers(_ policy: String) throws {
        let directory = try temporaryDirectory()
        let portA = freshSessionPort(), portB = portA + 2
        let fileA = directory.appendingPathComponent("a.yaml"), fileB = directory.appendingPathComponent("b.yaml")
        try "session: { name: jam-a, port: \(portA), bind: 127.0.0.1, advertise: false, invite: [{ host: 127.0.0.1, port: \(portB) }] }\nclock: {}\n"
            .write(to: fileA, atomically: true, encoding: .utf8)
        try "session: { name: jam-b, port: \(portB), bind: 127.0.0.1, advertise: false }\nclock: { on-master-lost: \(policy) }\n"
            .write(to: fileB, atomically: true, encoding: .utf8)
        let b = try JamBridgeProcess(["run", "--stop-after", "60", fileB.path])
        let a = try JamBridgeProcess(["run", "--stop-after", "60", fileA.path])
        defer {
            a.interrupt()
            b.interrupt()
        }
        #expect(a.waitForError(containing: "peer 'jam-b' joined"), "\(a.errorSoFar)")
        #expect(try jambridge(["start", "--pid", "\(a.pid)"]).status == 0)
        #expect(try waitForStatus(b, containing: "clock master jam-a").contains("jam: follower, clock master jam-a"))
        Thread.sleep(forTimeInterval: 1)
        a.interrupt()
        let logA = a.finish(killingAfter: 20)
        #expect(logA.err.contains("jam: leaving the session's song to its peers"), "\(logA.err)")
        if policy == "next" {
            #expect(try waitForStatus(b, containing: "jam: master").contains("jam: master, clock master jam-b"))
            #expect(b.waitForError(containing: "continues the song"), "\(b.errorSoFar)")
        } else {
            #expect(try waitForStatus(b, containing: "jam: idle").contains("jam: idle"))
        }
        #expect(!b.errorSoFar.contains("jam-a stopped the rhythm"), "\(b.errorSoFar)")
    }

    /// Issue 31: a `peer:` endpoint listed in `clock: to:` of an instance that leads gets each tick, and the Start,
    /// once (the session route reaches it already).
    @Test func aPeerListedAsAClockOutputGetsEachTickOnce() throws {
        try #require(FileManager.default.isExecutableFile(atPath: peersPython.path), "run scripts/install-deps.sh")
        let directory = try temporaryDirectory()
        let port = freshSessionPort()
        let file = directory.appendingPathComponent("master.yaml")
        try """
            session: { name: master, port: \(port), bind: 127.0.0.1, advertise: false }
            clock: { to: [listener] }
            endpoints:
              listener: { peer: listener }
            """.write(to: file, atomically: true, encoding: .utf8)
        let master = try JamBridgeProcess(["run", "--stop-after", "60", file.path])
        defer { master.interrupt() }
        #expect(waitUntilBound([port, port + 1]))
        // Counts the Starts and ticks in the RTP packets of 2 s from the first Start (one command per byte: the
        // master sends clock and transport with delta 0 or in packets of their own).
        let listener = try LineReadingProcess(peersPython, ["-c", """
            import socket, sys, time
            sys.path.insert(0, "\(repositoryRoot.appendingPathComponent("Tests/Peers").path)")
            from applemidi import Player
            player = Player(int(sys.argv[1]), "listener")
            assert player.join()
            print("joined", flush=True)
            player.data.settimeout(0.2)
            starts, ticks, end = 0, 0, None
            while end is None or time.monotonic() < end:
                try:
                    datagram = player.data.recv(65536)
                except socket.timeout:
                    continue
                if datagram[:2] == b"\\xff\\xff":
                    continue
                flags = datagram[12]
                length, start = (((flags & 15) << 8) | datagram[13], 14) if flags & 0x80 else (flags & 15, 13)
                commands = datagram[start:start + length]
                if 0xFA in commands and end is None:
                    end = time.monotonic() + 2
                if end is not None:
                    starts += commands.count(0xFA)
                    ticks += commands.count(0xF8)
            print("starts %d ticks %d" % (starts, ticks), flush=True)
            """, "\(port)"])
        defer { listener.kill() }
        #expect(listener.waitForLine(containing: "joined"))
        #expect(try jambridge(["start", "--pid", "\(master.pid)"]).status == 0)
        #expect(listener.waitForLine(containing: "starts"))
        let counts = try #require(listener.lines.first { $0.hasPrefix("starts") }?.split(separator: " ").compactMap { Int($0) })
        #expect(counts.first == 1, "\(counts)")
        // 2 s at 120 BPM is 96 ticks (and the one with the Start); twice that if each came twice.
        #expect((92...100).contains(counts.last ?? 0), "\(counts)")
    }

}
