import Foundation
@testable import JamBridge
import Testing

/// Issue 33, item 4: the man pages, `--help`, README and the unit say the same. (DocumentationTests lints the pages
/// with mandoc.)
@Suite struct DocumentationAgreementTests {
    private func text(_ path: String) throws -> String {
        try String(contentsOf: repositoryRoot.appendingPathComponent(path), encoding: .utf8)
    }

    /// The lines of `page` from the section `.Sh NAME` to the next section.
    private func section(_ name: String, of page: String) throws -> [Substring] {
        let lines = try text(page).split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(of: Substring(".Sh \(name)")) else { return [] }
        let rest = lines[(start + 1)...]
        return Array(rest.prefix { !$0.hasPrefix(".Sh ") })
    }

    /// The subcommands `jambridge --help` lists.
    private func subcommands() throws -> [String] {
        let help = try jambridge(["--help"])
        #expect(help.status == 0)
        let lines = help.out.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex { $0.hasPrefix("SUBCOMMANDS:") }, "\(help.out)")
        return lines[(start + 1)...].prefix { !$0.isEmpty }.compactMap { line in
            line.hasPrefix("  ") && !line.hasPrefix("   ") ? line.split(separator: " ").first.map(String.init) : nil
        }
    }

    @Test func everySubcommandOfHelpIsInTheSynopsisAndHasItsOwnEntry() throws {
        let commands = try subcommands()
        #expect(commands.count >= 12 && commands.contains("styles") && commands.contains("render"), "\(commands)")
        let synopsis = try section("SYNOPSIS", of: "man/jambridge.1").filter { $0.hasPrefix(".Cm ") }
        let described = try section("COMMANDS", of: "man/jambridge.1").filter { $0.hasPrefix(".It Cm ") }
        for command in commands {
            let words = { (line: Substring) in line.split(separator: " ").dropFirst().contains(Substring(command)) }
            #expect(synopsis.contains(where: words), "jambridge(1) SYNOPSIS lacks \(command)")
            #expect(described.contains(where: words), "jambridge(1) COMMANDS lacks \(command)")
        }
        let readme = try text("README.md")
        for command in commands { #expect(readme.contains("jambridge \(command)"), "README never shows 'jambridge \(command)'") }
    }

    @Test func seeAlsoAndTheUnitNameEveryManPage() throws {
        let pages = try FileManager.default.contentsOfDirectory(atPath: repositoryRoot.appendingPathComponent("man").path)
            .filter { $0.hasPrefix("jambridge") }.sorted()
        #expect(pages.contains("jambridge-kits.5") && pages.count >= 4, "\(pages)")
        let unit = try text("dist/jambridge.service").split(separator: "\n").first { $0.hasPrefix("Documentation=") } ?? ""
        for page in pages {
            let (name, number) = (page.split(separator: ".")[0], page.split(separator: ".")[1])
            #expect(unit.contains("man:\(name)(\(number))"), "dist/jambridge.service Documentation= lacks \(page)")
            for referrer in ["man/jambridge.1", "man/jambridge-routes.5"] where !referrer.hasSuffix(page) {
                #expect(try section("SEE ALSO", of: referrer).contains { $0.hasPrefix(".Xr \(name) \(number)") },
                        "\(referrer) SEE ALSO lacks \(page)")
            }
        }
    }

    @Test func everyMemberOfTheStatusJSONAndOfItsHTTPMemberIsDocumented() throws {
        let members = try section("CONTROL SOCKET", of: "man/jambridge.1").joined(separator: "\n")
        // A member is named on a `.Li` line (`.It Li songs , recordings`, `.Li listen , control ,`).
        let documented = { (name: String) in members.range(of: "(?m)^\\.(It )?Li\\b[^\n]*\\b\(name)\\b", options: .regularExpression) != nil }
        let status = DaemonStatus(pid: 1, routeFiles: [])
        let top = Mirror(reflecting: status).children.compactMap(\.label)
        #expect(top.contains("http") && top.contains("routeFiles"), "\(top)")
        for name in top { #expect(documented(name), "jambridge(1) CONTROL SOCKET does not document the status's '\(name)'") }
        let http = DaemonStatus.HTTP(listen: "127.0.0.1:8080", control: false, pages: 0, connections: 0, refused: [:])
        for name in Mirror(reflecting: http).children.compactMap(\.label) {
            #expect(documented(name), "jambridge(1) does not document the status's 'http.\(name)'")
        }
    }

    @Test func runHelpGivesEveryDefaultPlaceOfTheControlSocket() throws {
        let help = try jambridge(["run", "--help"])
        let flat = help.out.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        for place in ["$RUNTIME_DIRECTORY", "/run/jambridge for root", "$XDG_RUNTIME_DIR/jambridge", "/tmp/jambridge-UID"] {
            #expect(flat.contains(place), "run --help: \(flat)")
        }
    }
}
