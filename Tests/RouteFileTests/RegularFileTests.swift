import Foundation
import MIDI
import RouteFile
import Testing

/// The mistakes `load` reports for `files`, as `file:line:column: message`.
private func loadMistakes(_ files: [String]) -> [String] {
    do {
        _ = try RouteConfiguration.load(files: files)
        return []
    } catch {
        return error.errors.map(\.description)
    }
}

@Suite struct RegularFileTests {
    @Test func readsARegularFileWhole() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let url = directory.appendingPathComponent("f")
        try Data(bytes).write(to: url)
        #expect(try RegularFile.contents(atPath: url.path, limit: bytes.count) == bytes)
        try Data().write(to: url)
        #expect(try RegularFile.contents(atPath: url.path, limit: 10) == [])
    }

    @Test func refusesWhatIsNotARegularFileWithoutWaiting() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let fifo = directory.appendingPathComponent("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(throws: RegularFileError.notRegular("a FIFO")) { try RegularFile.contents(atPath: fifo, limit: 100) }
        #expect(throws: RegularFileError.notRegular("a directory")) {
            try RegularFile.contents(atPath: directory.path, limit: 100)
        }
        #expect(throws: RegularFileError.notRegular("a character device")) {
            try RegularFile.contents(atPath: "/dev/zero", limit: 100)
        }
        #expect(throws: RegularFileError.system(ENOENT)) {
            try RegularFile.contents(atPath: directory.appendingPathComponent("none").path, limit: 100)
        }
    }

    @Test func refusesAFileLargerThanTheLimit() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("f")
        try Data(repeating: 0x41, count: 101).write(to: url)
        #expect(throws: RegularFileError.tooLarge(limit: 100)) { try RegularFile.contents(atPath: url.path, limit: 100) }
        #expect(try RegularFile.contents(atPath: url.path, limit: 101).count == 101)
        #expect(RegularFileError.tooLarge(limit: 1 << 20).description == "it is larger than 1 MiB, the most jambridge reads")
    }

    @Test func aRouteFileOverTheLimitIsOneErrorAtTheStart() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("big.yaml")
        // Sparse: the size is what counts.
        #expect(FileManager.default.createFile(atPath: url.path, contents: Data("endpoints:\n".utf8)))
        #expect(truncate(url.path, off_t(RegularFile.routeFileLimit + 1)) == 0)
        #expect(loadMistakes([url.path]) == ["\(url.path):1:1: cannot read the route file: it is larger than 1 MiB, the most jambridge reads"])
    }

    @Test func aSongThatCannotBePlayedIsAMistakeAtItsPath() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try "not MIDI\n".write(to: directory.appendingPathComponent("notes.txt"), atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("songs"), withIntermediateDirectories: false)
        let big = directory.appendingPathComponent("big.mid").path
        #expect(FileManager.default.createFile(atPath: big, contents: nil))
        #expect(truncate(big, off_t(RegularFile.songLimit + 1)) == 0)
        try writeSong("good.mid", in: directory)
        let file = try write("""
            endpoints:
              a: { file: notes.txt }
              b: { file: missing.mid }
              c: { file: songs }
              d: { file: big.mid }
              e: { file: good.mid }
            """, to: "r.yaml", in: directory)
        let d = directory.path
        #expect(loadMistakes([file]) == [
            "\(file):2:14: cannot play the song '\(d)/notes.txt': at byte 0: not a Standard MIDI File (no MThd header)",
            "\(file):3:14: cannot play the song '\(d)/missing.mid': No such file or directory",
            "\(file):4:14: cannot play the song '\(d)/songs': it is a directory, not a regular file",
            "\(file):5:14: cannot play the song '\(d)/big.mid': it is larger than 4 MiB, the most jambridge reads",
        ])
    }

    @Test func aRecordingThatCannotBeCreatedIsAMistakeAtItsPath() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("takes"), withIntermediateDirectories: false)
        try Data([1]).write(to: directory.appendingPathComponent("earlier.mid"))
        let file = try write("""
            endpoints:
              a: { record: /proc/nope/x.mid }
              b: { record: takes }
              c: { record: /dev/null }
              d: { record: earlier.mid/x.mid }
              e: { record: takes/new.mid }
              f: { record: earlier.mid }
            """, to: "r.yaml", in: directory)
        let d = directory.path
        #expect(loadMistakes([file]) == [
            "\(file):2:16: cannot record to '/proc/nope/x.mid': '/proc/nope': No such file or directory",
            "\(file):3:16: cannot record to '\(d)/takes': it is a directory; write the path of a MIDI file to create, such as 'take.mid'",
            "\(file):4:16: cannot record to '/dev/null': it is a character device; write the path of a MIDI file to create, such as 'take.mid'",
            "\(file):5:16: cannot record to '\(d)/earlier.mid/x.mid': '\(d)/earlier.mid' is not a directory",
        ])
    }
}
