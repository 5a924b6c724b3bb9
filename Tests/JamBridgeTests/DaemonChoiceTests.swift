import Foundation
import Testing

/// Which daemon the commands talk to (issue 33, items 5 and 6): one that is starting is waited for, several are
/// listed, and `--daemon` picks one by a route file or its session's name. Each in namespaces of its own
/// (`privateShell`), so that no other test's daemon is found.
@Suite struct DaemonChoiceTests {
    /// A jam whose drums load a Hydrogen kit first: the daemon takes a second or more before its control socket is
    /// there, so a command typed right after `run ... &` finds none.
    private func slowJam(in dir: URL, name: String = "jam.yaml", session: String = "Jam A", port: Int = 5004) throws {
        let kit = "/usr/share/hydrogen/data/drumkits/The Black Pearl 1.0"
        try #require(FileManager.default.fileExists(atPath: kit), "no \(kit): run scripts/install-deps.sh (hydrogen-drumkits)")
        try """
            session: { name: "\(session)", port: \(port), bind: 127.0.0.1, advertise: false }
            clock: { tempo: 110 }
            drums: { style: rock, kit: "\(kit)" }

            """.write(to: dir.appendingPathComponent(name), atomically: true, encoding: .utf8)
    }

    /// The README's "A jam" commands, on a jam of the test's (routes/jam.yaml needs an ALSA sequencer; README's own
    /// block runs in ReadmeALSAIntegrationTests): they wait for the daemon that is starting.
    @Test func commandsTypedRightAfterRunWaitForTheDaemonThatIsStarting() throws {
        let dir = try temporaryDirectory()
        try slowJam(in: dir)
        let result = try privateShell("""
            jambridge run jam.yaml 2>daemon.log &
            jambridge tempo 96 && jambridge start
            jambridge status
            jambridge stop
            """, in: dir)
        #expect(result.status == 0, "\(result)")
        #expect(!result.err.contains("no jambridge is running"), "\(result.err)")
        #expect(result.out.contains("jam: master, clock master ") && result.out.contains("96.0 BPM"), "\(result.out)")
    }

    @Test func withNothingRunningOrStartingTheCommandsSaySoAtOnce() throws {
        let dir = try temporaryDirectory()
        let started = Date()
        let result = try privateShell("jambridge status", in: dir)
        #expect(result.status == 1 && result.err.hasPrefix("jambridge status: no jambridge is running (no control socket in "), "\(result)")
        #expect(Date().timeIntervalSince(started) < 5, "it waited for nothing")
    }

    @Test func withTwoRunningStatusListsThemAndDaemonPicksOneByRouteFileSessionOrPid() throws {
        let dir = try temporaryDirectory()
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("b"), withIntermediateDirectories: true)
        try "session: { name: \"Jam A\", port: 5004, bind: 127.0.0.1, advertise: false }\nclock: { tempo: 100 }\n"
            .write(to: dir.appendingPathComponent("a.yaml"), atomically: true, encoding: .utf8)
        try "session: { name: \"Jam B\", port: 5010, bind: 127.0.0.1, advertise: false }\nclock: { tempo: 120 }\n"
            .write(to: dir.appendingPathComponent("b/b.yaml"), atomically: true, encoding: .utf8)
        let result = try privateShell("""
            jambridge run a.yaml 2>a.log & a=$!
            (cd b && exec jambridge run b.yaml 2>b.log) & b=$!
            for i in $(seq 100); do [ $(ls /run/jambridge | wc -l) = 2 ] && break; sleep 0.1; done
            echo "pids $a $b"
            echo "== several"; jambridge status; echo "exit $?"
            echo "== by file"; jambridge status --daemon a.yaml | head -1
            echo "== by path"; jambridge status --daemon "$PWD/b/b.yaml" | head -1
            echo "== by session"; jambridge tempo 90 --daemon "Jam B"
            echo "== by pid"; jambridge status --daemon $a | grep '^jam:'
            echo "== by pid"; jambridge status --daemon $b | grep '^jam:'
            echo "== nobody"; jambridge start --daemon c.yaml; echo "exit $?"
            """, in: dir)
        #expect(result.status == 0, "\(result)")
        let pids = try #require(result.out.firstMatch(of: /pids (\d+) (\d+)/), "\(result.out)")
        let (a, b) = (String(pids.1), String(pids.2))
        let sections = Dictionary(grouping: result.out.components(separatedBy: "== ").dropFirst()) { $0.prefix { $0 != "\n" } }
        // Both, by process ID, with their route files and sessions, on standard error; the status is refused.
        let listing = """
            jambridge status: 2 jambridge daemons run; say which with --daemon (a route file, a session name or a process ID):
              \(a): a.yaml; session 'Jam A'
              \(b): b.yaml; session 'Jam B'

            """
        #expect(result.err.contains(listing), "\(result.err)")
        #expect(sections["several"]?.first?.contains("exit 1") == true, "\(result.out)")
        #expect(sections["by file"]?.first?.contains("jambridge \(a) running a.yaml") == true, "\(result.out)")
        #expect(sections["by path"]?.first?.contains("jambridge \(b) running b.yaml") == true, "\(result.out)")
        #expect(sections["by session"]?.first?.contains("90") == true, "\(result.out)")
        #expect(sections["by pid"]?.first?.contains("100.0 BPM") == true && sections["by pid"]?.last?.contains("90.0 BPM") == true, "\(result.out)")
        #expect(result.err.contains("jambridge start: no running jambridge runs a route file or a session named 'c.yaml':\n  \(a): a.yaml; session 'Jam A'\n"),
                "\(result.err)")
        #expect(sections["nobody"]?.first?.contains("exit 1") == true, "\(result.out)")
    }
}
