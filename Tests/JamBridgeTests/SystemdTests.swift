import Foundation
@testable import JamBridge
import Testing

/// An AF_UNIX datagram socket the test owns, standing in for systemd's `$NOTIFY_SOCKET`.
private final class NotifySocket {
    let path: String
    private let descriptor: Int32

    init(in directory: URL) throws {
        path = directory.appendingPathComponent("notify").path
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard descriptor >= 0, bound == 0 else { throw POSIXError(.EADDRINUSE) }
    }

    deinit { close(descriptor) }

    /// The next notice, or nil if none comes within `seconds`.
    func next(within seconds: Int) -> String? {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(descriptor, &buffer, buffer.count, 0)
        return count < 0 ? nil : String(decoding: buffer[..<count], as: UTF8.self)
    }
}

/// The unit as shipped: dist/jambridge.service.
private let unitFile = repositoryRoot.appendingPathComponent("dist/jambridge.service")

@Suite struct SystemdTests {
    /// The daemon run as systemd runs it (`Type=notify`, standard error the journal's stream, a RuntimeDirectory):
    /// READY=1 once it runs and its control socket answers, RELOADING=1 then READY=1 around each reload (a broken
    /// file too: the old routes keep running), STOPPING=1 on SIGTERM; every log line with a priority, none with a
    /// timestamp.
    @Test func notifiesSystemdAndLogsForTheJournal() throws {
        let dir = try temporaryDirectory()
        let notify = try NotifySocket(in: dir)
        let runtime = dir.appendingPathComponent("run")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: false)
        let routes = dir.appendingPathComponent("routes.yaml")
        let working = """
            endpoints:
              song: { file: \(repositoryRoot.path)/routes/songs/demo.mid, loop: true }
              tape: { record: \(dir.path)/take.mid }
            routes:
              - { from: song, to: tape }
            """
        try working.write(to: routes, atomically: true, encoding: .utf8)
        let daemon = try JamBridgeProcess(["run", routes.path], environment: [
            "NOTIFY_SOCKET": notify.path, "RUNTIME_DIRECTORY": runtime.path,
        ], journal: true)

        #expect(notify.next(within: 60) == "READY=1\nSTATUS=running: 2 endpoints, 1 route from \(routes.path)")
        // Ready means answering: the control socket is in the unit's runtime directory.
        #expect(FileManager.default.fileExists(atPath: runtime.appendingPathComponent("control-\(daemon.pid).sock").path))
        // By PID: other tests' daemons may run meanwhile, their sockets in /run/jambridge, which is searched too.
        let status = try JamBridgeProcess(["status", "--pid", "\(daemon.pid)"], environment: ["RUNTIME_DIRECTORY": runtime.path])
            .finish(killingAfter: 30)
        #expect(status.status == 0 && status.out.contains("jambridge \(daemon.pid) running"), "\(status)")

        kill(daemon.pid, SIGHUP)
        let reloading = try #require(notify.next(within: 30))
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let microseconds = try #require(Int(reloading.split(separator: "=").last ?? ""))
        #expect(reloading.hasPrefix("RELOADING=1\nMONOTONIC_USEC="))
        #expect(abs(microseconds - (Int(now.tv_sec) * 1_000_000 + Int(now.tv_nsec) / 1000)) < 30_000_000, "\(reloading)")
        #expect(notify.next(within: 30) == "READY=1\nSTATUS=reloaded: 2 endpoints, 1 route (0 started, 0 stopped)")

        try (working + "\n  - { from: song, to: nowhere }\n").write(to: routes, atomically: true, encoding: .utf8)
        kill(daemon.pid, SIGHUP)
        #expect(notify.next(within: 30)?.hasPrefix("RELOADING=1\n") == true)
        #expect(notify.next(within: 30) == "READY=1\nSTATUS=reload failed (see the log); running the previous routes")

        kill(daemon.pid, SIGTERM)
        #expect(notify.next(within: 30) == "STOPPING=1\nSTATUS=stopping: releasing held notes, writing recordings")
        let result = daemon.finish(killingAfter: 60)
        #expect(result.status == 0, "\(result.err)")
        #expect(notify.next(within: 1) == nil)

        let lines = result.err.split(separator: "\n")
        #expect(lines.allSatisfy { $0.wholeMatch(of: /<[2-7]>.*/) != nil }, "a line without its priority:\n\(result.err)")
        #expect(!result.err.contains(/\d\d:\d\d:\d\d/), "a timestamp:\n\(result.err)")
        #expect(lines.contains("<6>jambridge running: 2 endpoints, 1 route from \(routes.path)"))
        #expect(lines.contains("<5>SIGHUP: reloading \(routes.path)"))
        // A message of several lines: every line an error.
        #expect(lines.contains("<3>reload failed; still running the previous routes:"))
        #expect(lines.contains { $0.hasPrefix("<3>\(routes.path):6:") && $0.contains("nowhere") }, "\(result.err)")
        #expect(lines.contains { $0.hasPrefix("<6>stopped: ") })
    }

    /// A daemon that does not start says nothing to systemd and exits non-zero (systemd sees the unit fail); its
    /// reasons reach the journal as errors. Where standard error is not the journal's stream (JOURNAL_STREAM
    /// inherited from elsewhere) the lines keep their timestamps.
    @Test func aFailedStartIsNotReady() throws {
        let dir = try temporaryDirectory()
        let notify = try NotifySocket(in: dir)
        let broken = dir.appendingPathComponent("broken.yaml")
        try "routes:\n  - { from: nothing, to: nowhere }\n".write(to: broken, atomically: true, encoding: .utf8)
        let mistakes = try JamBridgeProcess(["run", broken.path], environment: ["NOTIFY_SOCKET": notify.path], journal: true)
            .finish(killingAfter: 60)
        #expect(mistakes.status == 1)
        #expect(mistakes.err.hasPrefix("<3>\(broken.path):2:"), "\(mistakes.err)")

        // An OSC endpoint on a port already taken: nothing can start.
        let taken = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(taken) }
        var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: 0, sin_addr: in_addr(s_addr: INADDR_ANY), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                _ = bind(taken, $0, length)
                _ = getsockname(taken, $0, &length)
            }
        }
        let port = UInt16(bigEndian: address.sin_port)
        let busy = dir.appendingPathComponent("busy.yaml")
        try """
            endpoints:
              phone: { osc: { listen: \(port) } }
              tape: { record: \(dir.path)/take.mid }
            routes:
              - { from: phone, to: tape }
            """.write(to: busy, atomically: true, encoding: .utf8)
        let failed = try JamBridgeProcess(["run", busy.path], environment: ["NOTIFY_SOCKET": notify.path, "JOURNAL_STREAM": "1:1"])
            .finish(killingAfter: 60)
        #expect(failed.status == 2, "\(failed.err)")
        #expect(failed.err.contains(" critical jambridge: [jambridge] jambridge did not start"), "\(failed.err)")
        #expect(failed.err.contains(/^\d{4}-\d\d-\d\dT/.anchorsMatchLineEndings()), "\(failed.err)")
        #expect(notify.next(within: 1) == nil)
    }

    /// The unit lets the jam's clock thread have the real-time priority it asks for (the drums' audio thread asks
    /// for less), and has systemd wait for the daemon's READY=1.
    @Test func unitGrantsTheClockThreadsPriority() throws {
        let unit = try String(contentsOf: unitFile, encoding: .utf8)
        #expect(unit.contains("\nLimitRTPRIO=\(ClockThread.priority)\n"))
        #expect(unit.contains("\nType=notify\n"))
    }

    /// The unit's file limit is far above what the status page and the control socket may hold at once.
    @Test func unitSetsAFileLimitFarAboveTheConnectionLimits() throws {
        let unit = try String(contentsOf: unitFile, encoding: .utf8)
        let limit = try #require(unit.firstMatch(of: /\nLimitNOFILE=(\d+)\n/).flatMap { Int($0.1) })
        #expect(limit >= 4 * (StatusPageServer.connectionLimit + ControlSocket.clientLimit), "\(limit)")
    }
}
