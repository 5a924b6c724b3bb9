import Foundation
import Synchronization
import Testing

/// A TCP port for a test's listener: below the ephemeral range (32768-60999), so that no client connection of
/// another suite running at once takes it, and with no socket on it now.
func freshTCPPort() -> UInt16 {
    while true {
        let port = UInt16.random(in: 10_000...32_000)
        if !tcpSocketUses(port) { return port }
    }
}

/// True if a TCP socket has the local port `port` (/proc/net/tcp{,6}); only a listener's (state 0A) if `listening`.
func tcpSocketUses(_ port: UInt16, listening: Bool = false) -> Bool {
    let hex = ":" + String(format: "%04X", port)
    return ["/proc/net/tcp", "/proc/net/tcp6"].contains { table in
        let lines = (try? String(contentsOfFile: table, encoding: .utf8))?.split(separator: "\n").dropFirst() ?? []
        return lines.contains { line in
            let columns = line.split(separator: " ")
            return columns.count > 3 && columns[1].hasSuffix(hex) && (!listening || columns[3] == "0A")
        }
    }
}

/// The live status page (`http:`) with the real binary: in Debian's headless chromium (Tests/Peers/browser.py,
/// driven through the DevTools protocol), and over raw TCP as a hostile or careless client would use it.
@Suite(.serialized) struct StatusPageTests {
    private func isListening(_ port: UInt16) -> Bool {
        tcpSocketUses(port, listening: true)
    }

    private func waitUntilListening(_ port: UInt16) -> Bool {
        let deadline = Date().addingTimeInterval(30)
        while !isListening(port) {
            guard Date() < deadline else { return false }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return true
    }

    /// Sends `request` (bytes as given) to 127.0.0.1:`port` and returns what comes back until the server closes
    /// (at most `seconds`), or nil if nobody listens.
    private func exchange(_ port: UInt16, _ request: [UInt8], seconds: Int = 20) -> String? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: port.bigEndian,
                                  sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return nil }
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            reply += buffer[..<count]
        }
        return String(decoding: reply, as: UTF8.self)
    }

    private func request(_ port: UInt16, _ method: String, _ path: String, host: String? = nil,
                         headers: [String] = [], body: String = "") -> String? {
        let lines = ["\(method) \(path) HTTP/1.1", "Host: \(host ?? "127.0.0.1:\(port)")"] + headers
            + (body.isEmpty ? [] : ["Content-Length: \(body.utf8.count)"])
        return exchange(port, Array((lines.joined(separator: "\r\n") + "\r\n\r\n" + body).utf8))
    }

    /// The JSON body of a response.
    private func json(_ response: String?) -> [String: Any]? {
        guard let response, let body = response.range(of: "\r\n\r\n").map({ response[$0.upperBound...] }) else { return nil }
        return try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
    }

    /// A browser (Tests/Peers/browser.py) on the page: each command answered by one JSON line.
    private struct Browser {
        let script: ScriptProcess

        init(_ url: String) throws {
            script = try ScriptProcess("browser.py", [url], python: URL(fileURLWithPath: "/usr/bin/python3"))
        }

        func json(_ line: String) -> [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]) ?? ["ok": false, "value": line]
        }

        func line() -> [String: Any] { json(script.line()) }

        func tell(_ command: String) -> [String: Any] { json(script.tell(command)) }

        /// Waits (30 s at most) until the page's `expression` is true.
        func wait(_ expression: String) -> Bool {
            tell("wait " + expression)["ok"] as? Bool == true
        }

        func value(_ expression: String) -> Any? {
            tell("eval " + expression)["value"]
        }

        func quit() {
            _ = script.tell("quit")
            script.waitUntilExit()
        }
    }

    /// The page in a real browser: live, it shows a peer that joins, the activity level it sends and the session's
    /// total; its start button starts the rhythm. The screenshot is kept in .build/artifacts/status-page.png.
    @Test func aHeadlessBrowserSeesAPeerJoinAndItsActivity() throws {
        try #require(FileManager.default.isExecutableFile(atPath: peersPython.path), "run scripts/install-deps.sh")
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"), "run scripts/install-deps.sh (chromium)")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("jambridge-page-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let sessionPort = freshSessionPort(), httpPort = freshTCPPort(), phonePort = freshOSCPorts(1)[0]
        let file = directory.appendingPathComponent("rack.yaml")
        try """
            session: { name: rack, port: \(sessionPort), advertise: false }
            clock: { tempo: 96 }
            activity: {}
            drums: { style: rock }
            http: { listen: "127.0.0.1:\(httpPort)", control: true }
            endpoints:
              phone: { osc: { listen: \(phonePort), host: 127.0.0.1 } }
            routes:
              - { from: drums, to: session }
              - { from: phone, to: session }
            """.write(to: file, atomically: true, encoding: .utf8)
        let daemon = try JamBridgeProcess(["run", "--stop-after", "120", file.path])
        #expect(waitUntilListening(httpPort), "\(daemon.errorSoFar)")

        let browser = try Browser("http://127.0.0.1:\(httpPort)/")
        #expect(browser.line()["event"] as? String == "opened")
        #expect(browser.wait(#"document.getElementById("connection").textContent === "live""#))
        #expect(browser.wait(#"document.getElementById("peers").textContent.includes("no peers yet")"#))
        #expect(browser.value(#"document.getElementById("controls").hidden"#) as? Bool == false)

        // A third-party peer joins and sends its activity level (CC 11): the page shows it without a reload.
        let peer = try ScriptProcess("applemidi_starter.py", ["\(sessionPort)"])
        #expect(peer.line().contains("joined"))
        #expect(browser.wait(##"[...document.querySelectorAll("#peers li")].some((item) => item.dataset.name === "starter")"##))
        #expect(peer.tell("cc 1 11 77").contains("cc 1 11 77"))
        #expect(browser.wait(##"document.querySelector('#players [data-name="starter"]')?.dataset.value === "77""##),
                "\(String(describing: browser.value(#"document.getElementById("players").textContent"#)))")
        #expect(browser.wait(#"Number(document.getElementById("total").dataset.value) >= 77"#))

        // The start button starts the rhythm: this instance leads, the beat and the drums move.
        _ = browser.value(#"document.getElementById("start").click()"#)
        #expect(browser.wait(#"document.getElementById("role").textContent === "master""#))
        #expect(browser.wait(#"document.getElementById("master").textContent === "rack""#))
        #expect(browser.wait(#"document.getElementById("drums").textContent.includes("playing")"#))
        #expect(browser.wait(##"document.querySelectorAll("#beats span.on").length === 1"##))
        // On a phone (issue 33, item 7): bar and beat apart, a dot per beat of the style's bar, the tempo box at the
        // tempo in force and within the tempo's range.
        #expect(browser.wait(#"Number(document.getElementById("bar").textContent) >= 1"#))
        #expect(browser.value(#"[1, 2, 3, 4].includes(Number(document.getElementById("beat").textContent))"#) as? Bool == true)
        #expect(browser.value(##"document.querySelectorAll("#beats span").length"##) as? Int == 4)
        #expect(browser.value(#"document.getElementById("bpm").value"#) as? String == "96")
        #expect(browser.value(#"document.getElementById("bpm").min + "-" + document.getElementById("bpm").max"#) as? String == "20-300")
        #expect(try jambridge(["drums", "style", "six-eight", "--pid", "\(daemon.pid)"]).status == 0)
        #expect(browser.wait(##"document.querySelectorAll("#beats span").length === 6"##))
        // A controller sending from two ports of one host is one device.
        for _ in 0..<2 {
            #expect(try run("/usr/bin/oscsend", ["127.0.0.1", "\(phonePort)", "/ping", "i", "1"]).status == 0)
        }
        #expect(browser.wait(#"document.getElementById("devices").textContent.includes("127.0.0.1 (2 ports)")"#),
                "\(String(describing: browser.value(#"document.getElementById("devices").textContent"#)))")

        let artifacts = repositoryRoot.appendingPathComponent(".build/artifacts")
        try FileManager.default.createDirectory(at: artifacts, withIntermediateDirectories: true)
        let screenshot = artifacts.appendingPathComponent("status-page.png")
        #expect(browser.tell("screenshot \(screenshot.path)")["ok"] as? Bool == true)
        let png = try Data(contentsOf: screenshot)
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 10_000, "\(png.count) bytes")

        // The page says so when the daemon goes.
        _ = peer.tell("leave")
        peer.waitUntilExit()
        daemon.interrupt()
        let result = daemon.finish(killingAfter: 30)
        #expect(result.status == 0, "\(result.err)")
        #expect(browser.wait(#"document.getElementById("connection").textContent === "reconnecting""#))
        browser.quit()
        #expect(result.err.contains("status page: http://127.0.0.1:\(httpPort)/ (with start, stop and tempo)"))
    }

    /// A route file playing the demo song into a take, with `http` (an `http:` block, or nothing) first.
    private func routes(http: String) -> String {
        """
        \(http)
        clock: {}
        endpoints:
          song: { file: \(repositoryRoot.path)/routes/songs/demo.mid, loop: true }
          tape: { record: take.mid }
        routes:
          - { from: song, to: tape }
        """
    }

    /// Without `control: true` the page cannot act; requests it does not serve get their status, a careless or
    /// hostile client is bounded, and reloads move or close the page.
    @Test func requestsItDoesNotServeAndReloads() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("jambridge-page-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let port = freshTCPPort()
        let file = directory.appendingPathComponent("rack.yaml")
        try routes(http: "http: { listen: \(port) }").write(to: file, atomically: true, encoding: .utf8)
        let daemon = try JamBridgeProcess(["run", "--stop-after", "120", file.path])
        #expect(waitUntilListening(port), "\(daemon.errorSoFar)")

        let page = try #require(request(port, "GET", "/"))
        #expect(page.hasPrefix("HTTP/1.1 200 OK\r\n") && page.contains("Content-Type: text/html") && page.contains("<title>jambridge</title>"))
        #expect(!page.contains("http://") && !page.contains("https://"), "the page fetches nothing from elsewhere")
        let state = try #require(json(request(port, "GET", "/status")))
        #expect(state["control"] as? Bool == false)
        let status = try #require(state["status"] as? [String: Any])
        #expect((status["http"] as? [String: Any])?["listen"] as? String == "127.0.0.1:\(port)")
        #expect((status["jam"] as? [String: Any])?["role"] as? String == "idle")

        let command = ["Content-Type: application/json"]
        #expect(request(port, "POST", "/control", headers: command, body: #"{"command": "start"}"#)?.hasPrefix("HTTP/1.1 403 ") == true)
        #expect(request(port, "GET", "/nothing")?.hasPrefix("HTTP/1.1 404 ") == true)
        #expect(request(port, "DELETE", "/status")?.hasPrefix("HTTP/1.1 405 ") == true)
        #expect(request(port, "GET", "/status", host: "attacker.example:\(port)")?.hasPrefix("HTTP/1.1 421 ") == true)
        #expect(request(port, "POST", "/control", headers: command, body: String(repeating: "x", count: 5000))?.hasPrefix("HTTP/1.1 413 ") == true)
        #expect(exchange(port, Array("GARBAGE\r\n\r\n".utf8))?.hasPrefix("HTTP/1.1 400 ") == true)
        // A client that never finishes its request is closed (after 10 s), and others are served meanwhile.
        let silent = Thread { _ = self.exchange(port, Array("GET / HTTP/1.1\r\n".utf8), seconds: 60) }
        silent.start()
        #expect(request(port, "GET", "/status").map { $0.hasPrefix("HTTP/1.1 200 ") } == true)
        #expect(exchange(port, Array("GET / HTTP/1.1\r\n".utf8), seconds: 60) == "", "closed without an answer")

        // Pages streaming events are counted; the 33rd takes the place of the oldest.
        var streams: [Int32] = []
        for _ in 0..<33 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: port.bigEndian,
                                      sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            let text = Array("GET /events HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n".utf8)
            _ = text.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            streams.append(fd)
            Thread.sleep(forTimeInterval: 0.05)
        }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let last = recv(streams[32], &buffer, buffer.count, 0)
        #expect(String(decoding: buffer[..<max(last, 0)], as: UTF8.self).hasPrefix("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream"))
        #expect(waitUntil { isClosedByServer(streams[0]) } && !isClosedByServer(streams[1]))
        let counted = try #require(pageStatus(port))
        #expect(counted["pages"] as? Int == 32 && (counted["refused"] as? [String: Int])?["displacedPage"] == 1, "\(counted)")
        streams.forEach { close($0) }

        // A reload moves the page to another port, with control; one without the block closes it.
        let moved = freshTCPPort()
        try routes(http: "http: { listen: \"127.0.0.1:\(moved)\", control: true }").write(to: file, atomically: true, encoding: .utf8)
        #expect(try jambridge(["reload", "--pid", "\(daemon.pid)"], killingAfter: 60).status == 0)
        #expect(waitUntilListening(moved) && !isListening(port))
        // A page of another site may not command it, even through the loopback name (Origin).
        #expect(request(moved, "POST", "/control", headers: command + ["Origin: http://evil.example"],
                        body: #"{"command": "tempo", "bpm": 300}"#)?.hasPrefix("HTTP/1.1 403 ") == true)
        let started = try #require(json(request(moved, "POST", "/control", headers: command + ["Origin: http://127.0.0.1:\(moved)"],
                                                body: #"{"command": "tempo", "bpm": 96}"#)))
        #expect(started["ok"] as? Bool == true, "\(started)")
        #expect(request(moved, "POST", "/control", headers: command, body: #"{"command": "reload"}"#)?.hasPrefix("HTTP/1.1 400 ") == true)
        try routes(http: "").write(to: file, atomically: true, encoding: .utf8)
        #expect(try jambridge(["reload", "--pid", "\(daemon.pid)"], killingAfter: 60).status == 0)
        #expect(!isListening(moved))

        daemon.interrupt()
        let result = daemon.finish(killingAfter: 30)
        #expect(result.status == 0, "\(result.err)")
    }

    /// A port already taken stops the start with the block's location, as any port a route file asks for does.
    @Test func aTakenPortIsAStartUpFailure() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("jambridge-page-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let taken = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(taken) }
        var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: 0, sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")),
                                  sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                _ = bind(taken, $0, length)
                _ = getsockname(taken, $0, &length)
            }
        }
        listen(taken, 1)
        let file = directory.appendingPathComponent("rack.yaml")
        try routes(http: "http: { listen: \(UInt16(bigEndian: address.sin_port)) }").write(to: file, atomically: true, encoding: .utf8)
        let result = try JamBridgeProcess(["run", file.path]).finish(killingAfter: 30)
        #expect(result.status == 2, "\(result.err)")
        #expect(result.err.contains("\(file.path):1:1: the status page cannot listen on 127.0.0.1:\(UInt16(bigEndian: address.sin_port)): "), "\(result.err)")
    }

    // MARK: - Hostile clients (issue 29)

    /// The daemon's `http` status as its page answers it on loopback.
    private func pageStatus(_ port: UInt16) -> [String: Any]? {
        (json(request(port, "GET", "/status"))?["status"] as? [String: Any])?["http"] as? [String: Any]
    }

    /// A daemon playing `routes(http:)` with `http`, started (by `launcher`, if given) and listening on `port`.
    private func pageDaemon(_ http: String, port: UInt16, launcher: [String] = []) throws -> JamBridgeProcess {
        let directory = try temporaryDirectory()
        let file = directory.appendingPathComponent("rack.yaml")
        try routes(http: http).write(to: file, atomically: true, encoding: .utf8)
        let arguments = ["run", "--stop-after", "300", file.path]
        let daemon = launcher.isEmpty ? try JamBridgeProcess(arguments) : try JamBridgeProcess(launcher + [executable.path] + arguments, launcher: "/usr/bin/prlimit")
        #expect(waitUntilListening(port), "\(daemon.errorSoFar)")
        return daemon
    }

    /// A request that trickles in, a byte every 2 s, is closed 10 s after it was accepted, unanswered.
    @Test func aTricklingRequestIsClosedTenSecondsAfterAccept() throws {
        let port = freshTCPPort()
        let daemon = try pageDaemon("http: { listen: \(port) }", port: port)
        defer { daemon.interrupt() }
        let fd = try #require(connection(port, seconds: 120))
        defer { close(fd) }
        let connected = Date()
        let request = Array("GET /status HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n".utf8)
        let trickle = Thread {
            for byte in request {
                guard [byte].withUnsafeBytes({ send(fd, $0.baseAddress, 1, Int32(MSG_NOSIGNAL)) }) == 1 else { return }
                Thread.sleep(forTimeInterval: 2)
            }
        }
        trickle.start()
        var buffer = [UInt8](repeating: 0, count: 4096)
        let received = recv(fd, &buffer, buffer.count, 0)
        let code = errno
        let seconds = Date().timeIntervalSince(connected)
        // Closed (not timed out on our side), without an answer: the request was never whole.
        #expect(received == 0 || (received < 0 && code == ECONNRESET), "\(received) \(code) after \(seconds) s")
        #expect(seconds >= 9.5 && seconds < Double(request.count) * 2 - 4, "closed after \(seconds) s")
        #expect((pageStatus(port)?["refused"] as? [String: Any])?["requestTooSlow"] as? Int == 1)
        daemon.interrupt()
        let result = daemon.finish(killingAfter: 30)
        #expect(result.status == 0 && result.err.contains("status page: closed a connection that had not sent its whole request within 10 s (1 so far)"),
                "\(result.err)")
    }

    /// 1,000 connections that send nothing, to a daemon with the systemd unit's file limit: at most 128 stay open,
    /// the others are closed at once and counted, and a real request is served all the while.
    @Test func aThousandConnectionsAreCappedWhileARealRequestIsServed() throws {
        let port = freshTCPPort()
        let daemon = try pageDaemon("http: { listen: \(port) }", port: port, launcher: ["--nofile=1024", "--"])
        defer { daemon.interrupt() }
        let openFiles = { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.pid)/fd").count) ?? -1 }
        let before = openFiles()
        let flood = (0..<1000).compactMap { _ in connection(port, seconds: 10) }
        defer { flood.forEach { close($0) } }
        #expect(flood.count == 1000)
        let page = request(port, "GET", "/")
        #expect(page?.hasPrefix("HTTP/1.1 200 OK\r\n") == true, "\(String(describing: page?.prefix(100)))")
        let http = try #require(pageStatus(port))
        #expect(http["connections"] as? Int ?? .max <= 128, "\(http)")
        #expect((http["refused"] as? [String: Int])?["overConnectionLimit"] ?? 0 >= 1000 - 128, "\(http)")
        // At most 128 held, and some accepted beyond them on their way out.
        let during = openFiles()
        #expect(during - before <= 2 * 128, "\(before) open files before, \(during) during")
        #expect(waitUntil { flood.filter(isClosedByServer).count >= 1000 - 128 }, "\(flood.filter(isClosedByServer).count) closed")
        // Those left open are closed 10 s after accept, as any request that never comes.
        #expect(waitUntil(seconds: 60) { flood.allSatisfy(isClosedByServer) })
        #expect(request(port, "GET", "/status")?.hasPrefix("HTTP/1.1 200 ") == true)
        daemon.interrupt()
        let result = daemon.finish(killingAfter: 30)
        #expect(result.status == 0, "\(result.err)")
        #expect(result.err.components(separatedBy: "128 connections are open, the most taken").count - 1 == 20, "the first 20 logged, then every 1000th")
    }

    /// Out of file descriptors with a connection waiting in its backlog, the page leaves its listener alone a second at
    /// a time instead of trying to accept again at once (the listener stays readable: that spun a core), says so once,
    /// and serves the waiting connection once descriptors are free.
    @Test func outOfFileDescriptorsThePageBacksOffWithoutSpinning() throws {
        let port = freshTCPPort()
        let daemon = try pageDaemon("http: { listen: \(port) }", port: port, launcher: ["--nofile=64", "--"])
        defer { daemon.interrupt() }
        let openFiles = { openDescriptors(daemon.pid, below: 64) }
        var held: [Int32] = []
        defer { held.forEach { close($0) } }
        while openFiles() < 64, held.count < 100, let fd = connection(port) {
            held.append(fd)
            Thread.sleep(forTimeInterval: 0.01)
        }
        #expect(openFiles() == 64)
        let waiting = try #require(connection(port))
        defer { close(waiting) }
        #expect(sendText(waiting, "GET / HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n"))
        let before = cpuTicks(daemon.pid)
        Thread.sleep(forTimeInterval: 3)
        let used = Double(cpuTicks(daemon.pid) - before) / Double(sysconf(Int32(_SC_CLK_TCK)))
        #expect(used < 0.5, "\(used) s of CPU time in 3 s")
        // Its standard error is read by a Dispatch thread, which a busy test process may start late: waited for.
        let said = "status page: cannot accept a connection: Too many open files; trying again every second (1 time so far)"
        #expect(daemon.waitForError(containing: said, seconds: 30), "\(daemon.errorSoFar)")
        #expect(daemon.errorSoFar.components(separatedBy: "status page: cannot accept a connection: ").count == 2, "\(daemon.errorSoFar)")
        held.forEach { close($0) }
        held = []
        #expect(readAll(waiting).hasPrefix("HTTP/1.1 200 OK\r\n"))
        daemon.interrupt()
        let result = daemon.finish(killingAfter: 30)
        #expect(result.status == 0, "\(result.err)")
    }

    /// A connection to 127.0.0.1:`port` from `source` (another loopback address: another client) that asks for
    /// `/events`, with a receive buffer of `receiveBuffer` bytes if given; nil if it could not connect.
    private func eventsClient(_ port: UInt16, from source: String = "127.0.0.1", receiveBuffer: Int32? = nil) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        var local = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: 0, sin_addr: in_addr(s_addr: inet_addr(source)),
                                sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: port.bigEndian,
                                  sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        let connected = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0 && withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
        guard connected, sendText(fd, "GET /events HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n") else {
            close(fd)
            return nil
        }
        return fd
    }

    /// 80 pages that ask for `/events` and never read cannot keep a real page (from another host) out: a new page
    /// takes the place of the oldest page of the host with the most open; and a page whose buffers stay full (here
    /// with a small receive buffer, which fills at once) is dropped.
    @Test func pagesThatNeverReadCannotKeepARealPageOut() throws {
        let port = freshTCPPort()
        let daemon = try pageDaemon("http: { listen: \(port) }", port: port)
        defer { daemon.interrupt() }
        let refused = { (self.pageStatus(port)?["refused"] as? [String: Int]) ?? [:] }
        var silent = (0..<40).compactMap { _ in eventsClient(port) }
        #expect(silent.count == 40)
        #expect(waitUntil { refused()["displacedPage"] == 8 && self.pageStatus(port)?["pages"] as? Int == 32 }, "\(refused())")
        #expect(waitUntil { silent.filter(isClosedByServer).count == 8 })

        // A real page from another host gets its stream at once and reads every event.
        let page = try #require(eventsClient(port, from: "127.0.0.2"))
        defer { close(page) }
        let events = Mutex(0)
        let reading = Thread {
            var buffer = [UInt8](repeating: 0, count: 65536)
            while case let count = recv(page, &buffer, buffer.count, 0), count > 0 {
                let text = String(decoding: buffer[..<count], as: UTF8.self)
                events.withLock { $0 += text.components(separatedBy: "data: ").count - 1 }
            }
        }
        reading.start()
        #expect(waitUntil { events.withLock { $0 } > 0 })
        // 40 more pages from the first host: each takes the place of that host's oldest, never of the real page's.
        silent += (0..<40).compactMap { _ in eventsClient(port) }
        defer { silent.forEach { close($0) } }
        #expect(waitUntil { refused()["displacedPage"] == 49 && silent.filter(isClosedByServer).count == 49 }, "\(refused())")
        let heard = events.withLock { $0 }
        #expect(waitUntil { events.withLock { $0 } > heard + 5 } && !isClosedByServer(page))

        // A page that takes no events, its receive buffer full: dropped once its send buffer has stayed full for 10 s.
        let stalled = try #require(eventsClient(port, receiveBuffer: 4096))
        defer { close(stalled) }
        #expect(waitUntil(seconds: 120) { refused()["stalledStream"] == 1 }, "\(refused())")
        #expect(waitUntil { isClosedByServer(stalled) } && !isClosedByServer(page))
        #expect(pageStatus(port)?["pages"] as? Int == 31)
        daemon.interrupt()
        let result = daemon.finish(killingAfter: 30)
        #expect(result.status == 0, "\(result.err)")
        #expect(result.err.contains("status page: dropped a page that took no events for 10 s (1 so far)"), "\(result.err)")
    }

    /// On a listener on every interface with `control: true`, a command is taken only from a page at this machine's
    /// address or a name `hosts:` lists: `evil.example` (DNS rebinding) and other sites (Origin) are refused,
    /// counted, and the jam is left as it was. Everything is sent to 127.0.0.1.
    @Test func commandsForAnotherHostOrFromAnotherSiteAreRefusedOnAWildcardListener() throws {
        let port = freshTCPPort()
        let daemon = try pageDaemon("http: { listen: \"0.0.0.0:\(port)\", control: true, hosts: [rack.local] }", port: port)
        defer { daemon.interrupt() }
        let json = ["Content-Type: application/json"]
        let tempo = #"{"command": "tempo", "bpm": 300}"#, start = #"{"command": "start"}"#
        let refusals = [
            request(port, "POST", "/control", host: "evil.example:\(port)", headers: json + ["Origin: http://evil.example:\(port)"], body: tempo),
            request(port, "POST", "/control", host: "evil.example", headers: json, body: start),
            request(port, "POST", "/control", headers: json + ["Origin: http://evil.example"], body: start),
            request(port, "POST", "/control", host: "rack.local:\(port)", headers: json + ["Origin: http://evil.example"], body: tempo),
            request(port, "POST", "/control", host: "rack.local:9", headers: json, body: tempo),
        ]
        for reply in refusals { #expect(reply?.hasPrefix("HTTP/1.1 403 ") == true, "\(String(describing: reply))") }
        let state = try #require(self.json(request(port, "GET", "/status"))?["status"] as? [String: Any])
        let jam = try #require(state["jam"] as? [String: Any])
        #expect(jam["role"] as? String == "idle" && jam["tempo"] as? Double != 300, "\(jam)")
        #expect(((state["http"] as? [String: Any])?["refused"] as? [String: Int])?["commandFromElsewhere"] == 5, "\(state)")
        // The page at a listed name, or at this machine's address, is obeyed.
        let atName = self.json(request(port, "POST", "/control", host: "rack.local:\(port)", headers: json + ["Origin: http://rack.local:\(port)"],
                                       body: #"{"command": "tempo", "bpm": 96}"#))
        #expect(atName?["ok"] as? Bool == true, "\(String(describing: atName))")
        let atAddress = self.json(request(port, "POST", "/control", headers: json + ["Origin: http://127.0.0.1:\(port)"], body: start))
        #expect(atAddress?["ok"] as? Bool == true, "\(String(describing: atAddress))")
        daemon.interrupt()
        let result = daemon.finish(killingAfter: 30)
        #expect(result.status == 0, "\(result.err)")
        #expect(result.err.contains("status page: http://0.0.0.0:\(port)/ (with start, stop and tempo, taken from a page at rack.local, localhost "
                                    + "or this machine's addresses)"), "\(result.err)")
        #expect(result.err.contains("naming host 'evil.example:\(port)' from 'http://evil.example:\(port)' (403) (1 so far)"), "\(result.err)")
    }

    /// A client beyond loopback (in a network namespace of the test's, across a veth pair) sees no SSRC and no
    /// address, in `/status` and `/events`; on loopback they are there, unless the request names another host.
    @Test(.enabled(if: getuid() == 0, "network namespaces need root"))
    func ssrcsAndAddressesAreWithheldBeyondLoopback() throws {
        let suffix = UInt32.random(in: 0...999_999)
        let namespace = "jbrack\(suffix)", phone = "jbphone\(suffix)"
        let ip = "/usr/sbin/ip"
        for command in [["netns", "add", namespace], ["netns", "add", phone], ["-n", namespace, "link", "set", "lo", "up"],
                        ["-n", namespace, "link", "add", "lan0", "type", "veth", "peer", "name", "lan1", "netns", phone],
                        ["-n", namespace, "addr", "add", "10.77.0.1/24", "dev", "lan0"], ["-n", namespace, "link", "set", "lan0", "up"],
                        ["-n", phone, "addr", "add", "10.77.0.2/24", "dev", "lan1"], ["-n", phone, "link", "set", "lan1", "up"]] {
            #expect(try run(ip, command, mergingErrors: true).status == 0, "ip \(command)")
        }
        defer {
            _ = try? run(ip, ["netns", "del", namespace])
            _ = try? run(ip, ["netns", "del", phone])
        }
        let directory = try temporaryDirectory()
        let httpPort = freshTCPPort(), rackPort = freshSessionPort(), otherPort = freshSessionPort()
        let rack = directory.appendingPathComponent("rack.yaml"), other = directory.appendingPathComponent("other.yaml")
        try """
            session: { name: rack, port: \(rackPort), advertise: false }
            http: { listen: "0.0.0.0:\(httpPort)" }
            endpoints:
              phone: { osc: { listen: \(otherPort + 2), host: 127.0.0.1, send: ["127.0.0.1:\(otherPort + 3)"] } }
            routes:
              - { from: phone, to: session }
            """.write(to: rack, atomically: true, encoding: .utf8)
        try """
            session: { name: other, port: \(otherPort), bind: 127.0.0.1, advertise: false, invite: [ { host: 127.0.0.1, port: \(rackPort) } ] }
            """.write(to: other, atomically: true, encoding: .utf8)
        let inside = ["netns", "exec", namespace, executable.path, "run", "--stop-after", "120"]
        let rackDaemon = try JamBridgeProcess(inside + [rack.path], launcher: ip)
        let otherDaemon = try JamBridgeProcess(inside + [other.path], launcher: ip)
        defer {
            rackDaemon.interrupt()
            otherDaemon.interrupt()
        }
        #expect(rackDaemon.waitForError(containing: "peer 'other' joined"), "\(rackDaemon.errorSoFar)")
        // GET PATH from the phone's namespace to 10.77.0.1 (across the veth pair), or on the rack's loopback.
        let fetch = { (source: String, path: String, host: String?) -> String in
            let target = source == "127.0.0.1" ? "127.0.0.1" : "10.77.0.1"
            let script = """
                import socket, sys
                s = socket.socket()
                s.settimeout(20)
                s.connect(("\(target)", \(httpPort)))
                s.sendall(b"GET \(path) HTTP/1.1\\r\\nHost: \(host ?? "\(target):\(httpPort)")\\r\\n\\r\\n")
                data = b""
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                    event = data.split(b"data: ", 1)
                    if len(event) == 2 and b"\\n\\n" in event[1]:
                        break
                sys.stdout.write(data.decode())
                """
            return (try? run(ip, ["netns", "exec", source == "127.0.0.1" ? namespace : phone, "/usr/bin/python3", "-c", script]).out) ?? ""
        }
        let local = fetch("127.0.0.1", "/status", nil)
        let state = try #require(json(local)?["status"] as? [String: Any], "\(local)")
        let session = try #require(state["session"] as? [String: Any])
        let ssrc = try #require(session["ssrc"] as? Int)
        let peer = try #require((session["peers"] as? [[String: Any]])?.first)
        let peerSSRC = try #require(peer["ssrc"] as? Int)
        let peerAddress = try #require(peer["address"] as? String)
        #expect(peerAddress == "127.0.0.1:\(otherPort)")
        let identities = ["\(ssrc)", "\(peerSSRC)", peerAddress, "127.0.0.1:\(otherPort + 3)"]
        #expect(local.contains("127.0.0.1:\(otherPort + 3)"), "\(local)")
        for (what, text) in [("/status from 10.77.0.2", fetch("10.77.0.2", "/status", nil)), ("/events from 10.77.0.2", fetch("10.77.0.2", "/events", nil)),
                             ("/status for another host", fetch("127.0.0.1", "/status", "evil.example:\(httpPort)"))] {
            #expect(text.hasPrefix("HTTP/1.1 200 ") && text.contains(#""name":"other""#), "\(what): \(text)")
            for identity in identities { #expect(!text.contains(identity), "\(what) shows \(identity): \(text)") }
            #expect(text.contains(#""ssrc":null"#) && text.contains(#""address":null"#) && text.contains(#""targets":null"#), "\(what): \(text)")
        }
        rackDaemon.interrupt()
        otherDaemon.interrupt()
        #expect(rackDaemon.finish(killingAfter: 30).status == 0)
        #expect(otherDaemon.finish(killingAfter: 30).status == 0)
    }

}

/// A TCP connection from the test to 127.0.0.1:`port` (reads time out after `seconds`), or nil if it could not
/// connect.
func connection(_ port: UInt16, seconds: Int = 30) -> Int32? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var timeout = timeval(tv_sec: seconds, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: port.bigEndian,
                              sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else {
        close(fd)
        return nil
    }
    return fd
}

func sendText(_ fd: Int32, _ text: String) -> Bool {
    let bytes = Array(text.utf8)
    return bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
}

/// True if the server has closed `fd` (its end is there to read, after anything it sent; nothing is read).
func isClosedByServer(_ fd: Int32) -> Bool {
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, 0) == 1 else { return false }
        let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        if count <= 0 { return count == 0 || errno == ECONNRESET }
    }
}
