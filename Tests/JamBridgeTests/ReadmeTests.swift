import Foundation
import Testing

/// README.md's shell blocks (```sh, at any indentation), each as its lines, named by its first line.
func readmeShellBlocks() throws -> [String: String] {
    let readme = try String(contentsOf: repositoryRoot.appendingPathComponent("README.md"), encoding: .utf8)
    var blocks: [String: String] = [:]
    var current: (indent: Int, lines: [String])?
    for line in readme.split(separator: "\n", omittingEmptySubsequences: false) {
        let indent = line.prefix { $0 == " " }.count
        let text = line.dropFirst(indent)
        if var block = current {
            if text == "```" {
                blocks[block.lines[0]] = block.lines.joined(separator: "\n") + "\n"
                current = nil
            } else {
                block.lines.append(String(line.dropFirst(min(indent, block.indent))))
                current = block
            }
        } else if text == "```sh" {
            current = (indent, [])
        }
    }
    return blocks
}

/// What becomes of each of README's shell blocks in the tests, by its first line.
enum ReadmeBlock {
    /// Run as written where there is an ALSA sequencer (`ReadmeALSAIntegrationTests`): its route files have ALSA
    /// endpoints.
    case needsALSA
    /// Not run, for the reason given.
    case cannotRun(String)

    static let plan: [String: ReadmeBlock] = [
        "# install what is missing (apt packages included), build, and play the shipped demo song":
            .cannotRun("installs apt packages and builds the release; scripts/test.sh is this suite itself. "
                       + "CommandLineTests runs `run --monitor --stop-after` on routes/demo.yaml"),
        "jambridge check my-keyboard.yaml": .cannotRun("needs the reader's copy of usb-keyboard.yaml and a keyboard, and runs until Ctrl-C; "
                                                       + "CommandLineTests checks every shipped route file"),
        "jambridge run routes/jam.yaml &": .needsALSA,
        "jambridge render routes/drums.yaml --bars 8 --activity 0-127 --out drums.wav  # hear it offline (24-bit WAV)": .needsALSA,
        "scripts/install-deps.sh run     # the libraries jambridge links, and make":
            .cannotRun("installs into /usr/local as root; InstallTests installs into a DESTDIR"),
        "sudo systemctl daemon-reload": .cannotRun("needs systemd as init; SystemdTests run the daemon as systemd would"),
        "sudo jambridge ports            # the devices' names, ready to paste": .cannotRun("sudoedit waits for an editor"),
        "sudo jambridge check /etc/jambridge/routes.yaml": .cannotRun("needs the installed service (systemctl reload)"),
        "journalctl -u jambridge -f": .cannotRun("needs the installed service and its journal"),
    ]
}

/// README.md says what its examples do (issue 33, item 5).
@Suite struct ReadmeTests {
    /// Every shell block is either run or said not to be, with why; a new block must say which.
    @Test func everyShellBlockIsRunOrSaysWhyNot() throws {
        let blocks = try readmeShellBlocks()
        #expect(blocks.count == ReadmeBlock.plan.count, "\(blocks.keys.sorted())")
        for first in blocks.keys { #expect(ReadmeBlock.plan[first] != nil, "README's block '\(first)' is not in ReadmeBlock.plan") }
        for first in ReadmeBlock.plan.keys { #expect(blocks[first] != nil, "ReadmeBlock.plan names '\(first)', which README no longer has") }
    }

    /// The first route file, saved beside routes/songs and run with `--monitor`: each message once, channel 1's notes
    /// an octave up on channel 3, channels 2 and 10 as they are; on stop, the notes still held are released and shown
    /// as releases (item 10), and the closing line says what an unmatched release is, in the singular for one.
    @Test func theFirstRouteFileDoesWhatItsCommentSays() throws {
        let readme = try String(contentsOf: repositoryRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let opening = try #require(readme.range(of: "```yaml\n# Play the demo song"))
        let start = readme.index(opening.lowerBound, offsetBy: "```yaml\n".count)
        let end = try #require(readme.range(of: "```", range: start..<readme.endIndex))
        let dir = try temporaryDirectory()
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("songs"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: repositoryRoot.appendingPathComponent("routes/songs/demo.mid"), to: dir.appendingPathComponent("songs/demo.mid"))
        let file = dir.appendingPathComponent("mine.yaml")
        try String(readme[start..<end.lowerBound]).write(to: file, atomically: true, encoding: .utf8)
        let result = try jambridge(["run", "--monitor", "--stop-after", "3", file.path], killingAfter: 60)
        #expect(result.status == 0, "\(result.err)")
        let lines = result.out.split(separator: "\n").map { $0.split(separator: " ", maxSplits: 1)[1].trimmingCharacters(in: .whitespaces) }
        let played = lines.filter { $0.hasPrefix("song -> tape") }
        #expect(!played.isEmpty, "\(result.out)")
        let channels = Set(played.compactMap { $0.firstMatch(of: /(?:Note on|Note off|Control change)\s+(\d+),/).map { Int($0.1)! } })
        #expect(channels.contains(3) && channels.contains(2) && channels.contains(10) && !channels.contains(1), "\(channels)\n\(result.out)")
        // The monitor stamps each line to the microsecond: the same message twice at one stamp is a route too many.
        let stamped = result.out.split(separator: "\n").map(String.init)
        #expect(Set(stamped).count == stamped.count, "\(result.out)")
        // The song's notes still held at the stop are released at its stamp, each shown as a release, not as the song's.
        let last = try #require(stamped.last?.split(separator: " ", omittingEmptySubsequences: true).first)
        let atStop = stamped.filter { $0.split(separator: " ", omittingEmptySubsequences: true).first == last }
        #expect(atStop.contains { $0.contains("Note off") } && atStop.allSatisfy { $0.contains(" release -> tape ") }, "\(result.out)")
        #expect(result.err.contains(/(1 release of a note or pedal that was not on|\d+ releases of notes or pedals that were not on) \(not passed on\)/),
                "\(result.err)")
    }
}
