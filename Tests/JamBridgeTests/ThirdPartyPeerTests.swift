import Foundation
import MIDI
import MIDITestSupport
import Testing

private let ms: UInt64 = 1_000_000


/// A route file in `dir` whose session `name` on `port` invites `inviting` and plays `song.mid` into it.
private func writeInvitingSender(in dir: URL, name: String, port: UInt16, inviting target: UInt16,
                                 song entries: [TimedSong.Entry]) throws -> String {
    try writeSetup(in: dir, song: entries, routes: """
        session:
          name: \(name)
          port: \(port)
          advertise: false
          invite: [ { host: 127.0.0.1, port: \(target) } ]
        endpoints:
          song: { file: song.mid }
        routes:
          - { from: song, to: session }
        """)
}

@Suite(.serialized) struct ThirdPartyPeerTests {
    /// Notes and controllers, 10 ms apart after a 1 s lead-in for the handshake.
    let playing: [MIDIMessage] = [noteOn(0, 60, 100), cc(0, 1, 64), noteOn(1, 64, 90), cc(1, 7, 100),
                                  noteOff(0, 60, 0), noteOff(1, 64, 30)]

    @Test func pymidiServerAcceptsOurInvitationAndReceivesNotesAndControllers() throws {
        #expect(FileManager.default.isExecutableFile(atPath: peersPython.path),
                "pymidi is missing: run scripts/install-deps.sh")
        let dir = try temporaryDirectory()
        let pymidiPort = freshSessionPort()
        let peer = Process()
        peer.executableURL = peersPython
        peer.arguments = [repositoryRoot.appendingPathComponent("Tests/Peers/pymidi_peer.py").path, "\(pymidiPort)", "4"]
        let out = Pipe()
        peer.standardOutput = out
        try peer.run()
        // pymidi prints its first line once its sockets are bound.
        let first = String(decoding: out.fileHandleForReading.availableData, as: UTF8.self)
        #expect(first.contains("listening"), "\(first)")
        let entries = playing.enumerated().map { TimedSong.Entry(offset: 1000 * ms + UInt64($0.offset) * 10 * ms, message: $0.element) }
        let file = try writeInvitingSender(in: dir, name: "jambridge test", port: pymidiPort + 2, inviting: pymidiPort, song: entries)
        let result = try jambridge(["run", "--stop-after", "2", file])
        let lines = (first + String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
            .split(separator: "\n").map(String.init)
        peer.waitUntilExit()
        #expect(result.status == 0, "\(result.err)")
        #expect(result.err.contains("peer 'pymidi' joined"), "\(result.err)")
        let events = lines.filter { !$0.contains("\"listening\"") && !$0.contains("\"connected\"") && !$0.contains("\"disconnected\"") }
        #expect(events == [
            #"{"event": "note_on", "channel": 0, "key": 60, "velocity": 100}"#,
            #"{"event": "cc", "channel": 0, "controller": 1, "value": 64}"#,
            #"{"event": "note_on", "channel": 1, "key": 64, "velocity": 90}"#,
            #"{"event": "cc", "channel": 1, "controller": 7, "value": 100}"#,
            #"{"event": "note_off", "channel": 0, "key": 60, "velocity": 0}"#,
            #"{"event": "note_off", "channel": 1, "key": 64, "velocity": 30}"#,
        ], "\(lines)")
    }

    @Test func tsharkDecodesOurSessionAndMIDIWithNothingMalformed() throws {
        let dir = try temporaryDirectory()
        let port = freshSessionPort()
        let capture = dir.appendingPathComponent("session.pcapng").path
        let dumpcap = Process()
        dumpcap.executableURL = URL(fileURLWithPath: "/usr/bin/dumpcap")
        // It stops by itself: a signal would not reach it if this process ignores SIGINT and SIGTERM.
        dumpcap.arguments = ["-q", "-i", "lo", "-a", "duration:6", "-f", "udp portrange \(port)-\(port + 3)", "-w", capture]
        dumpcap.standardError = FileHandle.nullDevice
        try dumpcap.run()
        Thread.sleep(forTimeInterval: 1) // dumpcap needs a moment before it captures
        let receiverFile = dir.appendingPathComponent("receiver.yaml")
        try """
            session: { name: "Mike’s Mac", port: \(port), advertise: false }
            endpoints:
              tape: { record: received.mid }
            routes:
              - { from: session, to: tape }
            """.write(to: receiverFile, atomically: true, encoding: .utf8)
        let receiver = try JamBridgeProcess(["run", "--monitor", "--stop-after", "3.5", receiverFile.path])
        Thread.sleep(forTimeInterval: 0.3)
        var messages = playing
        messages += [.programChange(channel: UInt4(masking: 2), program: UInt7(masking: 5)),
                     .pitchBend(channel: UInt4(masking: 2), value: UInt14(masking: 0x1234)), .start, .stop]
        messages.append(.sysEx(data: (0..<3000).map { UInt8($0 % 128) }))
        let entries = messages.enumerated().map { TimedSong.Entry(offset: 1000 * ms + UInt64($0.offset) * 10 * ms, message: $0.element) }
        let sender = try writeInvitingSender(in: dir, name: "Sender", port: port + 2, inviting: port, song: entries)
        _ = try jambridge(["run", "--stop-after", "2", sender])
        let received = receiver.finish()
        dumpcap.waitUntilExit()

        let decode = ["-r", capture, "-d", "udp.port==\(port + 1),rtp", "-d", "udp.port==\(port + 3),rtp", "-d", "rtp.pt==97,rtpmidi"]
        let malformed = try run("/usr/bin/tshark", decode + ["-Y", "_ws.malformed"])
        #expect(malformed.status == 0)
        #expect(malformed.out.isEmpty, "\(malformed.out)")
        let session = try run("/usr/bin/tshark", decode + ["-Y", "applemidi", "-T", "fields", "-e", "applemidi.command", "-e", "applemidi.name"])
        let commands = session.out.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
        #expect(commands.contains(["IN", "Sender"]) || commands.contains(["0x494e", "Sender"]), "\(session.out)")
        #expect(commands.contains { $0.last == "Mike’s Mac" }, "\(session.out)")
        #expect(commands.contains { $0.first == "CK" || $0.first == "0x434b" }, "\(session.out)")
        #expect(commands.contains { $0.first == "BY" || $0.first == "0x4259" }, "\(session.out)")
        let notes = try run("/usr/bin/tshark", decode + ["-Y", "rtpmidi", "-T", "fields", "-e", "rtp.marker", "-e", "rtpmidi.note", "-e", "rtpmidi.velocity", "-e", "rtpmidi.controller"])
        let noteLines = notes.out.split(separator: "\n").map(String.init)
        #expect(noteLines.contains { $0.hasPrefix("0\t60\t100") }, "\(notes.out)")
        #expect(noteLines.contains { $0.hasPrefix("0\t64\t90") }, "\(notes.out)")
        #expect(noteLines.contains { $0.hasSuffix("\t7") || $0.hasSuffix("\t1") }, "\(notes.out)")
        #expect(monitored(received.out, from: "session", to: "tape") == messages.map(\.description))
        #expect(try recorded(dir.appendingPathComponent("received.mid")) == recordable(messages))

        // Every packet carries a journal of what the receiver has not confirmed (its first RS
        // confirms the first packet at once): note 64 on channel 2, CC 1 = 64, program 5,
        // bend 0x1234 (LSB 0x34, MSB 0x24), transport. tshark shows some values in hex.
        let fields = ["rtpmidi.check_Seq_num", "rtpmidi.cj_chapter_n_log_note", "rtpmidi.cj_chapter_c_number",
                      "rtpmidi.cj_chapter_c_value", "rtpmidi.cj_chapter_p_program", "rtpmidi.cj_chapter_w_first",
                      "rtpmidi.cj_chapter_w_second", "rtpmidi.sj_chapter_q_nflag"]
        let journals = try run("/usr/bin/tshark", decode + ["-Y", "rtpmidi.check_Seq_num", "-T", "fields", "-E", "occurrence=a",
                                                             "-E", "aggregator=,"] + fields.flatMap { ["-e", $0] })
        let rows = journals.out.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false) }
        func seen(_ field: String) -> Set<String> {
            let column = fields.firstIndex(of: field)!
            return Set(rows.flatMap { $0.count > column ? $0[column].split(separator: ",").map(String.init) : [] })
        }
        #expect(rows.count >= messages.count, "\(journals.out)")
        #expect(seen("rtpmidi.cj_chapter_n_log_note").contains("64"), "\(journals.out)")
        #expect(seen("rtpmidi.cj_chapter_c_number").contains("1") && seen("rtpmidi.cj_chapter_c_value").contains("0x40"))
        #expect(seen("rtpmidi.cj_chapter_p_program").contains("5"), "\(journals.out)")
        #expect(seen("rtpmidi.cj_chapter_w_first") == ["0x34"] && seen("rtpmidi.cj_chapter_w_second") == ["0x24"], "\(journals.out)")
        #expect(!seen("rtpmidi.sj_chapter_q_nflag").isEmpty, "\(journals.out)")
    }
}
