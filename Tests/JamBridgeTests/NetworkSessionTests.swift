import Foundation
import JamBridge
import MIDI
import MIDITestSupport
import Testing

private let ms: UInt64 = 1_000_000

/// An even UDP port pair unlikely to be taken, different on every run.
func freshSessionPort() -> UInt16 {
    // Suites run at once and each takes the ports from here to here + 3 (two sessions): skip bound ones.
    while true {
        let port = UInt16.random(in: 10_000...30_000) * 2
        if !(port...port + 3).contains(where: isBound) { return port }
    }
}

/// One of every MIDI message jambridge carries, a 64 KiB SysEx, and a run of clock bytes.
func everyMessageType() -> [MIDIMessage] {
    let sysEx = (0..<65536).map { UInt8(($0 * 7) % 128) }
    var messages: [MIDIMessage] = [
        noteOn(2, 60, 100), .polyPressure(channel: UInt4(masking: 2), note: UInt7(masking: 60), pressure: UInt7(masking: 50)),
        cc(2, 64, 127), .programChange(channel: UInt4(masking: 3), program: UInt7(masking: 12)),
        .channelPressure(channel: UInt4(masking: 3), pressure: UInt7(masking: 33)),
        .pitchBend(channel: UInt4(masking: 4), value: UInt14(masking: 0x1234)), cc(2, 64, 0), noteOff(2, 60, 20),
        .sysEx(data: sysEx), .mtcQuarterFrame(UInt7(masking: 0x25)), .songPosition(UInt14(masking: 300)),
        .songSelect(UInt7(masking: 4)), .tuneRequest, .start,
    ]
    messages += Array(repeating: MIDIMessage.timingClock, count: 48)
    messages += [.stop, .continue, .activeSensing, .stop, .systemReset]
    return messages
}

/// The messages `--monitor` output shows going from `source` to `sink`, as it describes them.
func monitored(_ output: String, from source: String, to sink: String) -> [String] {
    let path = "\(source) -> \(sink)"
    return output.split(separator: "\n").compactMap { line in
        guard let range = line.range(of: path) else { return nil }
        return String(line[range.upperBound...].drop { $0 == " " })
    }
}

/// `messages` as a take records them: channel messages and SysEx (clock, transport and other system
/// messages are left out).
func recordable(_ messages: [MIDIMessage]) -> [MIDIMessage] {
    messages.filter { $0.channel != nil || $0.kind == .sysEx }
}

@Suite(.serialized) struct NetworkSessionTests {
    @Test func twoInstancesOnLoopbackPassEveryMessageTypeSysExAndClockInOrder() throws {
        let dir = try temporaryDirectory()
        let port = freshSessionPort()
        let messages = everyMessageType()
        // A 1.5 s lead-in leaves time for the handshake; then 2 ms between messages.
        let entries = messages.enumerated().map { TimedSong.Entry(offset: 1500 * ms + UInt64($0.offset) * 2 * ms, message: $0.element) }
        let sender = try writeSetup(in: dir, song: entries, routes: """
            session:
              name: Sender
              port: \(port + 2)
              advertise: false
              running-status: yes
              invite:
                - { host: 127.0.0.1, port: \(port) }
            endpoints:
              song: { file: song.mid }
            routes:
              - { from: song, to: session }
            """)
        let receiverFile = dir.appendingPathComponent("receiver.yaml")
        try """
            session:
              name: Receiver
              port: \(port)
              advertise: false
            endpoints:
              tape: { record: received.mid }
            routes:
              - { from: session, to: tape }
            """.write(to: receiverFile, atomically: true, encoding: .utf8)
        let receiver = try JamBridgeProcess(["run", "--monitor", "--stop-after", "5", receiverFile.path])
        Thread.sleep(forTimeInterval: 0.3)
        let senderResult = try jambridge(["run", "--stop-after", "3.5", sender])
        let receiverResult = receiver.finish()
        #expect(senderResult.status == 0, "\(senderResult.err)")
        #expect(receiverResult.status == 0, "\(receiverResult.err)")
        #expect(receiverResult.err.contains("peer 'Sender' joined"), "\(receiverResult.err)")
        #expect(senderResult.err.contains("peer 'Receiver' joined"), "\(senderResult.err)")
        #expect(receiverResult.err.contains("peer 'Sender' left: said goodbye"), "\(receiverResult.err)")
        // Every message arrives in order (the monitor shows them all); the take holds the music byte for byte.
        #expect(monitored(receiverResult.out, from: "session", to: "tape") == messages.map(\.description))
        #expect(try recorded(dir.appendingPathComponent("received.mid")) == recordable(messages))
    }

    /// Issue 31: an invitation to an address where nothing listens (a typo looks just like a peer that is down) is a
    /// warning naming the address within seconds, shows in `status` and `status --json` with its tries, and the stop
    /// line counts the invitations that went unanswered.
    @Test func anInvitationNobodyAnswersIsWarnedOfShownInStatusAndCountedAtStop() throws {
        let dir = try temporaryDirectory()
        let port = freshSessionPort()
        let nobody = port + 2 // free: freshSessionPort checked up to port + 3
        let file = dir.appendingPathComponent("rack.yaml")
        try """
            session: { name: rack, port: \(port), bind: 127.0.0.1, advertise: false, invite: [ { host: 127.0.0.1, port: \(nobody) } ] }
            endpoints:
              tape: { record: received.mid }
            routes:
              - { from: session, to: tape }
            """.write(to: file, atomically: true, encoding: .utf8)
        let daemon = try JamBridgeProcess(["run", "--stop-after", "60", file.path])
        defer { daemon.interrupt() }
        let started = Date()
        // INs at 0, 1 and 2 s unanswered: the warning comes as the 4th goes, at 4 s.
        #expect(daemon.waitForError(containing: "no answer from 127.0.0.1:\(nobody) to 3 invitations in ", seconds: 15), "\(daemon.errorSoFar)")
        #expect(Date().timeIntervalSince(started) < 10)
        #expect(daemon.waitForError(containing: "nothing listens there, a firewall drops them, or the peer is down; still inviting it",
                                    seconds: 1), "\(daemon.errorSoFar)")

        let session = try #require(try daemonStatus(daemon.pid)?.session)
        let invitation = try #require(session.invitations.first, "\(session)")
        #expect(session.invitations.count == 1)
        #expect(invitation.label == "127.0.0.1:\(nobody)" && invitation.address == "127.0.0.1:\(nobody)" && invitation.state == "inviting",
                "\(invitation)")
        #expect(invitation.tries >= 4 && (invitation.secondsSinceFirstTry ?? 0) >= 4, "\(invitation)")
        #expect((session.counters["invitationsUnanswered"] ?? 0) >= 3, "\(session.counters)")
        let text = try jambridge(["status", "--pid", "\(daemon.pid)"], killingAfter: 30)
        #expect(text.out.contains("\n  inviting 127.0.0.1:\(nobody): no answer yet ("), "\(text.out)")

        daemon.interrupt()
        let result = daemon.finish(killingAfter: 30)
        #expect(result.status == 0, "\(result.err)")
        // The warning came once: the next is a minute on.
        #expect(result.err.components(separatedBy: "no answer from 127.0.0.1:\(nobody)").count == 2, "\(result.err)")
        let stop = try #require(result.err.split(separator: "\n").first { $0.contains("session 'rack' stopped:") })
        let unanswered = try #require(stop.firstMatch(of: /, (\d+) of our own unanswered/), "\(stop)")
        #expect(Int(unanswered.1)! >= 3, "\(stop)")
    }

    @Test func aPeerThatLeavesWithNotesHeldHasThemReleasedDownstream() throws {
        let dir = try temporaryDirectory()
        let port = freshSessionPort()
        // The holder presses a note and the sustain pedal, then dies without note-off or BY.
        let sender = try writeSetup(in: dir, song: [
            .init(offset: 1000 * ms, message: noteOn(0, 64, 90)),
            .init(offset: 1000 * ms, message: cc(0, 64, 127)),
        ], routes: """
            session: { name: Holder, port: \(port + 2), advertise: false, invite: [ { host: "::1", port: \(port) } ] }
            endpoints:
              song: { file: song.mid }
            routes:
              - { from: song, to: session }
            """)
        let receiverFile = dir.appendingPathComponent("receiver.yaml")
        try """
            session: { name: Listener, port: \(port), advertise: false }
            endpoints:
              tape: { record: received.mid }
            routes:
              - { from: session, to: tape }
            """.write(to: receiverFile, atomically: true, encoding: .utf8)
        let receiver = try JamBridgeProcess(["run", "--stop-after", "4", receiverFile.path])
        Thread.sleep(forTimeInterval: 0.3)
        let holder = try JamBridgeProcess(["run", sender])
        Thread.sleep(forTimeInterval: 2)
        kill(holder.pid, SIGKILL) // gone without a goodbye: no note-off, no BY
        _ = holder.finish()
        let result = receiver.finish()
        #expect(result.status == 0, "\(result.err)")
        let got = try recorded(dir.appendingPathComponent("received.mid"))
        // The receiver still counts the vanished peer in; stopping releases what it held.
        #expect(got.count == 4)
        #expect(Array(got.prefix(2)) == [noteOn(0, 64, 90), cc(0, 64, 127)])
        #expect(notesLeftOn(got).isEmpty, "\(got)")
        #expect(got.last == cc(0, 64, 0))
    }

    @Test func peerEndpointsReceiveFromAndSendToOnlyThePeersTheirGlobsMatch() throws {
        let dir = try temporaryDirectory()
        let port = freshSessionPort()
        // Studio invites Player; each plays a note to the other through peer: endpoints.
        let studio = try writeSetup(in: dir, song: [
            .init(offset: 1500 * ms, message: noteOn(0, 48, 80)), .init(offset: 1600 * ms, message: noteOff(0, 48)),
        ], routes: """
            session: { name: Studio, port: \(port + 2), advertise: false, invite: [ { host: 127.0.0.1, port: \(port) } ] }
            endpoints:
              song: { file: song.mid }
              player: { peer: "Play*" }
              nobody: { peer: "Nobody" }
              fromPlayer: { record: from-player.mid }
              fromNobody: { record: from-nobody.mid }
            routes:
              - { from: song, to: [player, nobody] }
              - { from: player, to: fromPlayer }
              - { from: nobody, to: fromNobody }
            """)
        let playerDir = dir.appendingPathComponent("player")
        try FileManager.default.createDirectory(at: playerDir, withIntermediateDirectories: true)
        let player = try writeSetup(in: playerDir, song: [
            .init(offset: 1500 * ms, message: noteOn(1, 72, 60)), .init(offset: 1600 * ms, message: noteOff(1, 72)),
        ], routes: """
            session: { name: Player, port: \(port), advertise: false }
            endpoints:
              song: { file: song.mid }
              studio: { peer: Studio }
              fromStudio: { record: from-studio.mid }
            routes:
              - { from: song, to: studio }
              - { from: session, to: fromStudio }
            """)
        let playerProcess = try JamBridgeProcess(["run", "--stop-after", "3.5", player])
        Thread.sleep(forTimeInterval: 0.3)
        let studioResult = try jambridge(["run", "--stop-after", "2.5", studio])
        let playerResult = playerProcess.finish()
        #expect(studioResult.status == 0, "\(studioResult.err)")
        #expect(playerResult.status == 0, "\(playerResult.err)")
        #expect(try recorded(dir.appendingPathComponent("from-player.mid")) == [noteOn(1, 72, 60), noteOff(1, 72)])
        #expect(try recorded(dir.appendingPathComponent("from-nobody.mid")).isEmpty)
        // The studio's song reached the player once, through 'player' only.
        #expect(try recorded(playerDir.appendingPathComponent("from-studio.mid")) == [noteOn(0, 48, 80), noteOff(0, 48)])
    }
}
