import Foundation
import Testing

/// The repository's top directory, found from this file's path.
private let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// Runs `executable` with `arguments`, returning its exit status and combined output.
private func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [executable] + arguments
    process.currentDirectoryURL = repositoryRoot
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}

@Suite struct ManPageTests {
    static let pages = ["man/jambridge.1", "man/jambridge-routes.5", "man/jambridge-drums.5", "man/jambridge-kits.5"]

    @Test(arguments: pages)
    func pageIsLintClean(_ page: String) throws {
        let result = try run("mandoc", ["-T", "lint", "-W", "warning", page])
        #expect(result.status == 0, "mandoc -T lint \(page) (scripts/install-deps.sh installs mandoc):\n\(result.output)")
        #expect(result.output.isEmpty, "\(result.output)")
    }

    @Test func readmeNamesTheManPagesAndBothCommands() throws {
        let readme = try String(contentsOf: repositoryRoot.appendingPathComponent("README.md"), encoding: .utf8)
        for page in Self.pages { #expect(readme.contains(page)) }
        #expect(readme.contains("scripts/test.sh"))
        #expect(readme.contains("scripts/run.sh run"))
        let ci = try String(contentsOf: repositoryRoot.appendingPathComponent(".ci/run"), encoding: .utf8)
        #expect(ci.contains("scripts/test.sh"), ".ci/run must run the README's test command")
    }
}
