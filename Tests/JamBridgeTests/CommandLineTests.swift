import Foundation
import Testing

@Suite struct CommandLineTests {
    @Test func checkAcceptsEveryShippedRouteFile() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: repositoryRoot.appendingPathComponent("routes").path)
            .filter { $0.hasSuffix(".yaml") }.sorted().map { "routes/\($0)" }
        #expect(!files.isEmpty)
        let result = try jambridge(["check"] + files)
        #expect(result.status == 0, "\(result.err)")
        for file in files { #expect(result.out.contains("\(file): ok")) }
    }

    /// The acceptance scenario's route files (a host each, so checked one by one) are checked here too, without its VM.
    @Test func checkAcceptsTheScenariosRouteFiles() throws {
        for file in ["rack.yaml", "rack-reloaded.yaml", "phone.yaml"] {
            let result = try jambridge(["check", "Tests/Scenario/\(file)"])
            #expect(result.status == 0 && result.out.contains("Tests/Scenario/\(file): ok"), "\(result.err)")
        }
    }

    @Test func checkReportsMistakesByLineAndColumnAndExitsOne() throws {
        let dir = try temporaryDirectory()
        let file = dir.appendingPathComponent("broken.yaml").path
        try """
            endpoints:
              song: { file: song.mid }
              tape: { record: out.mid }
            routes:
              - from: song
                to: tapes
                channels: [17]
            """.write(toFile: file, atomically: true, encoding: .utf8)
        let result = try jambridge(["check", file])
        #expect(result.status == 1)
        #expect(result.err.contains("\(file):6:9: "))
        #expect(result.err.contains("\(file):7:16: "))
        #expect(result.out.isEmpty)
    }

    @Test func versionAndUsage() throws {
        let version = try jambridge(["--version"])
        #expect(version.status == 0)
        #expect(version.out.hasPrefix("jambridge "))
        let usage = try jambridge(["run"])
        #expect(usage.status == 64)
        #expect(try jambridge(["run", "--stop-after", "-1", "routes/demo.yaml"]).status == 64)
    }

    @Test func runWithStopAfterWritesTheRecordingAndMonitorShowsEvents() throws {
        let dir = try temporaryDirectory()
        let demo = repositoryRoot.appendingPathComponent("routes/songs/demo.mid").path
        let file = dir.appendingPathComponent("routes.yaml").path
        try """
            endpoints:
              song: { file: \(demo) }
              tape: { record: jam.mid }
            routes:
              - { from: song, to: tape }
            """.write(toFile: file, atomically: true, encoding: .utf8)
        let result = try jambridge(["run", "--monitor", "--stop-after", "0.5", file])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.contains("song -> tape"))
        #expect(result.out.contains("Note on"))
        #expect(result.err.contains("tape: recorded"))
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("jam.mid").path))
    }
}
