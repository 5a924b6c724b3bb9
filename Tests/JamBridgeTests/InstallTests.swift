import Foundation
import Testing

/// Runs `arguments` (a program on PATH and its arguments); returns its exit status and its standard output and error
/// together.
private func command(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, output: String) {
    let result = try run("/usr/bin/env", arguments, environment: environment, mergingErrors: true)
    return (result.status, result.out)
}

/// Where the tests install: a PREFIX other than the default, so the unit's paths are seen to follow it.
private let prefix = "/opt/jambridge"

/// `make install` (with the test's jambridge, not a release build) or `make uninstall` into `stage`.
private func make(_ target: String, into stage: URL) throws -> (status: Int32, output: String) {
    try command(["make", "--no-print-directory", "-C", repositoryRoot.path, target, "PREFIX=\(prefix)", "DESTDIR=\(stage.path)", "BINARY=\(executable.path)"])
}

/// Every file and directory under `directory`, as paths relative to it, sorted.
private func contents(of directory: URL) -> [String] {
    (FileManager.default.subpaths(atPath: directory.path) ?? []).sorted()
}

/// make install and make uninstall (scripts/install.sh), into a temporary DESTDIR: the installed jambridge runs
/// and checks the installed routes, its man pages are where man looks, the unit and completions are in place, and
/// uninstall leaves nothing.
@Suite struct InstallTests {
    @Test func installedJambridgeRunsAndUninstallLeavesNothing() throws {
        let stage = try temporaryDirectory()
        let installed = try make("install", into: stage)
        try #require(installed.status == 0, "make install (scripts/install-deps.sh installs make):\n\(installed.output)")
        let root = stage.appendingPathComponent(prefix.dropFirst().description)
        let binary = root.appendingPathComponent("bin/jambridge").path

        let version = try command([binary, "--version"])
        #expect(version.status == 0 && version.output.hasPrefix("jambridge "), "\(version.output)")
        let examples = contents(of: root.appendingPathComponent("share/jambridge/routes")).filter { $0.hasSuffix(".yaml") }
        #expect(examples.count == contents(of: repositoryRoot.appendingPathComponent("routes")).filter { $0.hasSuffix(".yaml") }.count)
        let checked = try command([binary, "check"] + examples.map { root.appendingPathComponent("share/jambridge/routes/\($0)").path })
        #expect(checked.status == 0, "\(checked.output)")
        let configuration = stage.appendingPathComponent("etc/jambridge/routes.yaml")
        #expect(try String(contentsOf: configuration, encoding: .utf8)
                == String(contentsOf: repositoryRoot.appendingPathComponent("routes/rack.yaml"), encoding: .utf8))
        #expect(try command([binary, "check", configuration.path]).status == 0)

        // Every page in man/, in its section, found by man and clean for mandoc.
        for page in contents(of: repositoryRoot.appendingPathComponent("man")) {
            let path = root.appendingPathComponent("share/man/man\(page.split(separator: ".").last!)/\(page)").path
            let found = try command(["man", "-w", String(page.split(separator: ".").dropLast().joined(separator: "."))],
                                    environment: ["MANPATH": root.appendingPathComponent("share/man").path])
            #expect(found.output == path + "\n", "man -w (scripts/install-deps.sh installs man-db): \(found.output)")
            let lint = try command(["mandoc", "-T", "lint", "-W", "warning", path])
            #expect(lint.status == 0 && lint.output.isEmpty, "\(lint.output)")
        }

        let unit = try String(contentsOf: root.appendingPathComponent("lib/systemd/system/jambridge.service"), encoding: .utf8)
        #expect(unit.contains("\nExecStart=\(prefix)/bin/jambridge run /etc/jambridge/routes.yaml\n"))
        // The bash completion offers the commands; zsh's and fish's are where those shells look.
        let bash = root.appendingPathComponent("share/bash-completion/completions/jambridge").path
        let offered = try command(["bash", "-c", #"source "$0"; COMP_WORDS=(jambridge ""); COMP_CWORD=1; COMP_LINE="jambridge "; COMP_POINT=10; _jambridge; printf '%s\n' "${COMPREPLY[@]}""#, bash])
        #expect(offered.output.split(separator: "\n").contains("status"), "\(offered.output)")
        #expect(try String(contentsOf: root.appendingPathComponent("share/zsh/site-functions/_jambridge"), encoding: .utf8).hasPrefix("#compdef jambridge"))
        #expect(try String(contentsOf: root.appendingPathComponent("share/fish/vendor_completions.d/jambridge.fish"), encoding: .utf8).contains("complete -c 'jambridge'"))

        // Installing again changes nothing that uninstall would miss.
        let before = contents(of: stage)
        #expect(try make("install", into: stage).status == 0)
        #expect(contents(of: stage) == before)
        let removed = try make("uninstall", into: stage)
        #expect(removed.status == 0, "\(removed.output)")
        #expect(contents(of: stage) == [], "left behind: \(contents(of: stage))")
    }

    /// A routes.yaml that was there before the install, or was edited after it, is never overwritten or removed.
    @Test func theRackOwnRoutesFileIsKept() throws {
        let existing = try temporaryDirectory()
        let configuration = existing.appendingPathComponent("etc/jambridge/routes.yaml")
        try FileManager.default.createDirectory(at: configuration.deletingLastPathComponent(), withIntermediateDirectories: true)
        try "# the rack's own routes\n".write(to: configuration, atomically: true, encoding: .utf8)
        let installed = try make("install", into: existing)
        #expect(installed.status == 0 && installed.output.contains("kept the existing \(configuration.path)"), "\(installed.output)")
        #expect(try make("uninstall", into: existing).status == 0)
        #expect(contents(of: existing) == ["etc", "etc/jambridge", "etc/jambridge/routes.yaml"])
        #expect(try String(contentsOf: configuration, encoding: .utf8) == "# the rack's own routes\n")

        let edited = try temporaryDirectory()
        #expect(try make("install", into: edited).status == 0)
        let handle = try FileHandle(forWritingTo: edited.appendingPathComponent("etc/jambridge/routes.yaml"))
        handle.seekToEndOfFile()
        handle.write(Data("# a keyboard added\n".utf8))
        handle.closeFile()
        let removed = try make("uninstall", into: edited)
        #expect(removed.status == 0 && removed.output.contains("it was changed after the install"), "\(removed.output)")
        #expect(contents(of: edited) == ["etc", "etc/jambridge", "etc/jambridge/routes.yaml"])
    }

    /// `systemd-analyze verify` accepts the installed unit as systemd would load it: the installed tree is mounted
    /// at its PREFIX in a mount namespace of its own, so the ExecStart= binary exists and the man pages named in
    /// Documentation= are found. Any warning (an unknown key, a misspelt value) fails the test.
    @Test(.enabled(if: getuid() == 0, "mounting the installed tree in a mount namespace needs root"))
    func systemdAcceptsTheInstalledUnit() throws {
        let stage = try temporaryDirectory()
        try #require(try make("install", into: stage).status == 0)
        let verified = try command([
            "unshare", "--mount", "sh", "-c",
            #"mount -t tmpfs jambridge-test /opt && mkdir "$1" && mount --bind "$0$1" "$1" && MANPATH="$1/share/man" exec systemd-analyze verify "$1/lib/systemd/system/jambridge.service""#,
            stage.path, prefix,
        ])
        #expect(verified.status == 0 && verified.output.isEmpty,
                "systemd-analyze verify (scripts/install-deps.sh installs systemd):\n\(verified.output)")
    }
}
