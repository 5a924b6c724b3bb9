import Foundation
import MIDI
import Testing

/// Issue 17: a route back into the endpoint a message came from leaves its sender out.
@Suite(.serialized) struct NoEchoTests {
    /// Two players built on pymidi's packets invite a session with `session -> session`, and jambridge invites
    /// pymidi's responder. Each player hears the other, never itself; the responder hears both. P2 joins after
    /// P1's first note and gets no release for it; when P1 leaves holding three notes, each release goes where
    /// its note-on went (P2 gets the one both held, the responder keeps that note until P2 lets go).
    @Test func sessionPeersHearEachOtherNeverThemselvesAndReleasesGoWhereTheirNotesWent() throws {
        try #require(FileManager.default.isExecutableFile(atPath: peersPython.path), "run scripts/install-deps.sh")
        let dir = try temporaryDirectory()
        let responderPort = freshSessionPort(), hubPort = responderPort + 2
        let peers = repositoryRoot.appendingPathComponent("Tests/Peers")
        let responder = try LineReadingProcess(peersPython, [peers.appendingPathComponent("pymidi_peer.py").path, "\(responderPort)", "60"])
        #expect(responder.waitForLine(containing: "listening"))
        let file = dir.appendingPathComponent("hub.yaml")
        try """
            session:
              name: hub
              port: \(hubPort)
              bind: 127.0.0.1
              advertise: false
              invite: [ { host: 127.0.0.1, port: \(responderPort) } ]
            routes:
              - { from: session, to: session }
            """.write(to: file, atomically: true, encoding: .utf8)
        let hub = try JamBridgeProcess(["run", "--stop-after", "60", file.path])
        #expect(responder.waitForLine(containing: "connected"), "\(responder.lines)")
        let band = try run(peersPython.path, [peers.appendingPathComponent("applemidi_band.py").path, "\(hubPort)", "0.3"])
        Thread.sleep(forTimeInterval: 0.3)
        responder.kill()
        hub.interrupt()
        let result = hub.finish()
        #expect(result.status == 0, "\(result.err)")

        let heard = try #require(try JSONSerialization.jsonObject(with: Data(band.out.utf8)) as? [String: [String]], "\(band)")
        #expect(heard["P1"] == ["on 62", "cc 1 20", "on 67"])
        #expect(heard["P2"] == ["on 64", "on 67", "off 64", "off 67"])
        let responderHeard = responder.lines.compactMap { line -> String? in
            guard let event = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let kind = event["event"] as? String else { return nil }
            switch kind {
            case "note_on" where (event["velocity"] as? Int ?? 0) > 0: return "on \(event["key"] ?? "")"
            case "note_on", "note_off": return "off \(event["key"] ?? "")"
            case "cc": return "cc \(event["controller"] ?? "") \(event["value"] ?? "")"
            default: return nil
            }
        }
        #expect(responderHeard == ["on 60", "cc 1 10", "on 62", "cc 1 20", "on 64", "on 67", "on 67", "off 60", "off 64", "off 62", "off 67"])
    }
}
