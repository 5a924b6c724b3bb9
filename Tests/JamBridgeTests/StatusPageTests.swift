import Foundation
import Testing

/// The live status page (`http:`) with the real binary: in Debian's headless chromium (Tests/Peers/browser.py,
/// driven through the DevTools protocol), and over raw TCP as a hostile or careless client would use it.
@Suite(.serialized) struct StatusPageTests {
    /// What a TCP listener on `port` looks like in /proc/net/tcp{,6}: the local address ending in :PORT, state 0A.
    private func isListening(_ port: UInt16) -> Bool {
        let hex = ":" + String(format: "%04X", port)
        return ["/proc/net/tcp", "/proc/net/tcp6"].contains { table in
            let lines = (try? String(contentsOfFile: table, encoding: .utf8))?.split(separator: "\n").dropFirst() ?? []
            return lines.contains { line in
                let columns = line.split(separator: " ")
                return columns.count > 3 && columns[1].hasSuffix(hex) && columns[3] == "0A"
            }
        }
    }

    private func freshTCPPort() -> UInt16 {
        while true {
            let port = UInt16.random(in: 40_000...60_000)
            if !isListening(port) { return port }
        }
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
        let sessionPort = freshSessionPort(), httpPort = freshTCPPort()
        let file = directory.appendingPathComponent("rack.yaml")
        try """
            session: { name: rack, port: \(sessionPort), advertise: false }
            clock: {}
            activity: {}
            drums: { style: rock }
            http: { listen: "127.0.0.1:\(httpPort)", control: true }
            routes:
              - { from: drums, to: session }
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

        // Pages streaming events are counted; the 33rd is turned away.
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
        let first = recv(streams[0], &buffer, buffer.count, 0)
        #expect(String(decoding: buffer[..<max(first, 0)], as: UTF8.self).contains("text/event-stream"))
        let last = recv(streams[32], &buffer, buffer.count, 0)
        #expect(String(decoding: buffer[..<max(last, 0)], as: UTF8.self).hasPrefix("HTTP/1.1 503 "))
        let counted = try #require(json(request(port, "GET", "/status"))?["status"] as? [String: Any])
        #expect((counted["http"] as? [String: Any])?["pages"] as? Int == 32)
        streams.forEach { close($0) }

        // A reload moves the page to another port, with control; one without the block closes it.
        let moved = freshTCPPort()
        try routes(http: "http: { listen: \"127.0.0.1:\(moved)\", control: true }").write(to: file, atomically: true, encoding: .utf8)
        #expect(try jambridge(["reload", "--pid", "\(daemon.pid)"], killingAfter: 60).status == 0)
        #expect(waitUntilListening(moved) && !isListening(port))
        let started = try #require(json(request(moved, "POST", "/control", headers: command, body: #"{"command": "tempo", "bpm": 96}"#)))
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
}
