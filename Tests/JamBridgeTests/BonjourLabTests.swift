import Foundation
import MIDI
import MIDITestSupport
import Testing

private let ms: UInt64 = 1_000_000
private let lab = repositoryRoot.appendingPathComponent("scripts/avahi-lab.sh").path

/// The machine's real network interfaces (those with a default route): mDNS must never reach them.
private func realInterfaces() throws -> [String] {
    let routes = try run("/usr/sbin/ip", ["-o", "route", "show", "default"]).out
    return Set(routes.split(separator: "\n").compactMap { line -> String? in
        let words = line.split(separator: " ")
        guard let dev = words.firstIndex(of: "dev"), dev + 1 < words.count else { return nil }
        return String(words[dev + 1])
    }).sorted()
}

/// Bonjour through two real avahi-daemons, each in its own network namespace (scripts/avahi-lab.sh).
@Suite(.serialized) struct BonjourLabTests {
    @Test func instanceBFindsInstanceAByGlobOnBonjourConnectsAndANotePassesWithNoMDNSOutside() throws {
        try #require(getuid() == 0, "the lab needs root to create network namespaces")
        #expect(try run("/bin/bash", [lab, "up"]).status == 0)
        defer { _ = try? run("/bin/bash", [lab, "down"]) }

        // Watch the real interfaces for mDNS for the whole test.
        let dir = try temporaryDirectory()
        var watchers: [(Process, String)] = []
        for interface in try realInterfaces() {
            let capture = dir.appendingPathComponent("mdns-\(interface).pcapng").path
            let dumpcap = Process()
            dumpcap.executableURL = URL(fileURLWithPath: "/usr/bin/dumpcap")
            dumpcap.arguments = ["-q", "-i", interface, "-a", "duration:14", "-f", "udp port 5353", "-w", capture]
            dumpcap.standardError = FileHandle.nullDevice
            try dumpcap.run()
            watchers.append((dumpcap, capture))
        }

        try """
            session: { name: "Lab Rack A", port: 5004 }
            endpoints:
              tape: { record: received.mid }
            routes:
              - { from: session, to: tape }
            """.write(to: dir.appendingPathComponent("a.yaml"), atomically: true, encoding: .utf8)
        let playerFile = try writeSetup(in: dir, song: [
            .init(offset: 5000 * ms, message: noteOn(0, 67, 99)),
            .init(offset: 5100 * ms, message: noteOff(0, 67)),
        ], routes: """
            session: { name: "Lab Player B", port: 5004, invite: [ "Lab Rack *" ] }
            endpoints:
              song: { file: song.mid }
            routes:
              - { from: song, to: session }
            """)
        let rack = try JamBridgeProcess([lab, "exec", "jb-a", executable.path, "run", "--stop-after", "9",
                                         dir.appendingPathComponent("a.yaml").path], launcher: "/bin/bash")
        Thread.sleep(forTimeInterval: 1)
        let player = try JamBridgeProcess([lab, "exec", "jb-b", executable.path, "run", "--stop-after", "7", playerFile],
                                          launcher: "/bin/bash")
        Thread.sleep(forTimeInterval: 3)
        let listing = try run("/bin/bash", [lab, "exec", "jb-b", executable.path, "peers", "--browse", "1.5"])
        let playerResult = player.finish()
        let rackResult = rack.finish()
        for (dumpcap, _) in watchers { dumpcap.waitUntilExit() }

        #expect(rackResult.err.contains("advertised on Bonjour as 'Lab Rack A'"), "\(rackResult.err)")
        #expect(playerResult.err.contains("found 'Lab Rack A' on Bonjour at 10.77.0.1:5004; inviting it"), "\(playerResult.err)")
        #expect(playerResult.err.contains("peer 'Lab Rack A' joined from 10.77.0.1:5004 (we invited it)"), "\(playerResult.err)")
        #expect(listing.out.contains("\"Lab Rack A\"\tjb-a.local\t10.77.0.1:5004"), "\(listing.out)")
        #expect(listing.out.contains("peer \"Lab Rack A\"\t10.77.0.1:5004"), "\(listing.out)")
        #expect(try recorded(dir.appendingPathComponent("received.mid")) == [noteOn(0, 67, 99), noteOff(0, 67)])
        for (_, capture) in watchers {
            let packets = try run("/usr/bin/tshark", ["-r", capture]).out
            #expect(packets.isEmpty, "mDNS left the namespaces: \(packets)")
        }
    }
}
