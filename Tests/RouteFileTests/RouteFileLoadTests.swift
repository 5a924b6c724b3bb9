import Foundation
import MIDI
import RouteFile
import Testing

/// The repository's `routes/` directory, found from this file's path.
private let examplesDirectory = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("routes")

@Suite struct RouteFileLoadTests {
    @Test func fileThatCannotBeReadIsOneErrorAtTheStart() {
        #expect(throws: RouteFileErrors.self) { try RouteConfiguration.load(files: ["/nonexistent/x.yaml"]) }
        do {
            _ = try RouteConfiguration.load(files: ["/nonexistent/x.yaml"])
        } catch {
            #expect(error.errors.map(\.description) == [
                "/nonexistent/x.yaml:1:1: cannot read the route file: No such file or directory",
            ])
        }
    }

    @Test func directoryAndNonUTF8FilesAreReportedAtTheStart() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let binary = directory.appendingPathComponent("binary.yaml")
        try Data([0x66, 0xFF, 0xFE]).write(to: binary)
        do {
            _ = try RouteConfiguration.load(files: [directory.path, binary.path])
            Issue.record("neither is a route file")
        } catch {
            #expect(error.errors.map(\.description) == [
                "\(directory.path):1:1: cannot read the route file: it is a directory, not a regular file",
                "\(binary.path):1:1: the route file is not UTF-8 text",
            ])
        }
    }

    @Test func pathsAreResolvedAgainstTheRouteFilesDirectory() throws {
        let yaml = """
            endpoints:
              song: { file: songs/../songs/demo.mid, loop: true }
              tape: { record: /tmp/take.mid }
              copy: { record: jam.mid }
            """
        let configuration = try RouteConfiguration.parse(yaml: yaml, file: "/home/me/routes/r.yaml")
        #expect(configuration.endpoints.map(\.name) == ["song", "tape", "copy"])
        #expect(configuration.endpoints.map(\.kind) == [
            .midiFile(path: "/home/me/routes/songs/demo.mid", loop: true),
            .recorder(path: "/tmp/take.mid"),
            .recorder(path: "/home/me/routes/jam.mid"),
        ])
        #expect(configuration.endpoints.map(\.canSend) == [true, false, false])
        #expect(configuration.endpoints.map(\.canReceive) == [false, true, true])
        #expect(configuration.endpoints[0].location == SourceLocation(file: "/home/me/routes/r.yaml", line: 2, column: 3))
    }

    @Test func loopDefaultsToFalseAndParsingReadsNoSong() throws {
        let configuration = try RouteConfiguration.parse(
            yaml: "endpoints:\n  song: { file: not-there-yet.mid }\n", file: "/r/r.yaml")
        #expect(configuration.endpoints.map(\.kind) == [.midiFile(path: "/r/not-there-yet.mid", loop: false)])
    }

    @Test func filesMergeAndRoutesMayNameEndpointsOfAnotherFile() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try write("endpoints:\n  song: { file: a.mid }\n", to: "a.yaml", in: directory)
        try writeSong("a.mid", in: directory)
        let second = try write("""
            endpoints:
              tape: { record: b.mid }
            routes:
              - from: song
                to: tape
            """, to: "b.yaml", in: directory)
        let configuration = try RouteConfiguration.load(files: [first, second])
        #expect(configuration.endpoints.map(\.name) == ["song", "tape"])
        #expect(configuration.routes.map(\.from) == [["song"]])
        #expect(configuration.routes.map(\.to) == [["tape"]])
        #expect(configuration.routes.map(\.location) == [SourceLocation(file: second, line: 4, column: 5)])
    }

    @Test func duplicateEndpointAcrossFilesNamesBothPlaces() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try write("endpoints:\n  song: { file: a.mid }\n", to: "a.yaml", in: directory)
        let second = try write("endpoints:\n  tape: { record: t.mid }\n  song: { file: b.mid }\n",
                               to: "b.yaml", in: directory)
        try writeSong("a.mid", in: directory)
        try writeSong("b.mid", in: directory)
        do {
            _ = try RouteConfiguration.load(files: [first, second])
            Issue.record("a duplicate endpoint name must be an error")
        } catch {
            #expect(error.errors.map(\.description) == [
                "\(second):3:3: endpoint 'song' is already declared at \(first):2:3; "
                    + "endpoint names must be unique across all route files",
            ])
        }
    }

    @Test func errorsOfSeveralFilesComeFileByFileInPositionOrder() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try write("routes:\n  - from: x\n    to: y\nfoo: 1\n", to: "a.yaml", in: directory)
        let second = try write("bar: 1\n", to: "b.yaml", in: directory)
        do {
            _ = try RouteConfiguration.load(files: [first, second])
            Issue.record("the files hold mistakes")
        } catch {
            #expect(error.errors.map { "\($0.location)".replacingOccurrences(of: directory.path + "/", with: "") }
                == ["a.yaml:2:11", "a.yaml:3:9", "a.yaml:4:1", "b.yaml:1:1"])
        }
    }

    @Test func compiledRoutesUseTheAssemblysEndpointIDs() throws {
        let yaml = """
            endpoints:
              song: { file: s.mid }
              tape: { record: t.mid }
              copy: { record: c.mid }
            routes:
              - from: song
                to: [tape, copy]
                transpose: 2
            """
        let configuration = try RouteConfiguration.parse(yaml: yaml, file: "/r/r.yaml")
        let ids = ["song": EndpointID(7), "tape": EndpointID(3), "copy": EndpointID(4)]
        let compiled = configuration.compiledRoutes { ids[$0] ?? EndpointID(0) }
        #expect(compiled.count == 1)
        #expect(compiled.first?.sources == [EndpointID(7)])
        #expect(compiled.first?.sinks == [EndpointID(3), EndpointID(4)])
        #expect(compiled.first?.stages.count == 1)
    }

    @Test func twoHundredRoutesLoad() throws {
        var yaml = "endpoints:\n"
        for index in 0..<200 {
            yaml += "  in\(index): { file: in\(index).mid }\n  out\(index): { record: out\(index).mid }\n"
        }
        yaml += "routes:\n"
        for index in 0..<200 {
            yaml += "  - { from: in\(index), to: [out\(index), out\((index + 1) % 200)], only: [note, cc], "
                + "channels: [1, 2], notes: C2..B5, transpose: -12, velocity: { scale: 0.8 }, channel: { 1: 3 } }\n"
        }
        let configuration = try RouteConfiguration.parse(yaml: yaml, file: "/r/big.yaml")
        #expect(configuration.endpoints.count == 400)
        #expect(configuration.routes.count == 200)
        #expect(configuration.routes.allSatisfy { $0.stages.count == 6 })
    }

    @Test func everyExampleRouteFileLoads() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: examplesDirectory.path)
            .filter { $0.hasSuffix(".yaml") }
            .sorted()
        #expect(files.contains("demo.yaml"))
        #expect(files.contains("keyboard-split.yaml"))
        for file in files {
            let path = examplesDirectory.appendingPathComponent(file).path
            do {
                let configuration = try RouteConfiguration.load(files: [path])
                #expect(!configuration.routes.isEmpty, "\(file) declares no routes")
            } catch {
                Issue.record("\(error)")
            }
        }
        // `jambridge check routes/*.yaml` loads them together: their endpoint names must not clash.
        #expect(throws: Never.self) {
            try RouteConfiguration.load(files: files.map { examplesDirectory.appendingPathComponent($0).path })
        }
    }
}
