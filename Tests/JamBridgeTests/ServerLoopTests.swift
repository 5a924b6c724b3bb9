import Dispatch
import Foundation
@testable import JamBridge
import Logging
import MIDI
import RouteFile
import Synchronization
import Testing

// The control socket and the status page on the servers' event loop (docs/internals.md, "The control socket"), in this
// process with a stand-in for the daemon: an answer that waits for a busy control queue holds up no other client, and a
// stop returns within its bound while clients hold their connections and answers wait behind it.

private let logger = Logger(label: "jambridge-server-loop-test")

/// The daemon as its servers see it: each answer is made on `queue` (the control queue), after what is there.
private final class StandInDaemon: Sendable {
    let queue = DispatchQueue(label: "stand-in control queue")
    /// The requests asked so far.
    let asked = Atomic(0)

    var access: DaemonAccess {
        DaemonAccess { [self] request, _, reply in
            asked.add(1, ordering: .relaxed)
            queue.async {
                switch request {
                case .status: reply(ControlReply(ok: true, message: "stand-in running", status: DaemonStatus(pid: 1, routeFiles: ["stand-in.yaml"])))
                default: reply(ControlReply(ok: true, message: "done"))
                }
            }
        }
    }

    /// Keeps the control queue busy for `seconds`.
    func busy(for seconds: Double) {
        queue.async { Thread.sleep(forTimeInterval: seconds) }
    }

    /// Waits until `count` requests were asked.
    func waitUntilAsked(_ count: Int) -> Bool {
        waitUntil { asked.load(ordering: .relaxed) >= count }
    }
}

/// Seconds since `start`.
private func seconds(since start: Date) -> Double { Date().timeIntervalSince(start) }

/// Sends `text` on `fd` and reads until the server closes.
private func exchange(_ fd: Int32, _ text: String) -> String {
    #expect(sendText(fd, text))
    return readAll(fd)
}

/// A status page on a free port of 127.0.0.1 on `servers`' loop.
private func statusPage(_ daemon: StandInDaemon, on servers: ServerLoop) throws -> (StatusPageServer, port: UInt16) {
    for _ in 0..<20 {
        let port = freshTCPPort()
        let declaration = HTTPDeclaration(port: port, location: SourceLocation(file: "test.yaml", line: 1, column: 1))
        if let server = try? StatusPageServer(declaration, daemon: daemon.access, servers: servers, logger: logger) { return (server, port) }
    }
    throw POSIXError(.EADDRINUSE)
}

private func get(_ path: String, port: UInt16) -> String {
    guard let fd = connection(port) else { return "" }
    defer { close(fd) }
    return exchange(fd, "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n")
}

@Suite(.serialized) struct ServerLoopTests {
    @Test func aStatusWaitingForABusyControlQueueHoldsUpNoOtherClientOfTheSocket() throws {
        let servers = ServerLoop()
        defer { servers.shutDown() }
        let daemon = StandInDaemon()
        let path = try temporaryDirectory().appendingPathComponent("control.sock").path
        let socket = try ControlSocket(path: path, servers: servers, logger: logger, daemon: daemon.access)
        defer { socket.stop() }

        let start = Date()
        daemon.busy(for: 1.5)
        let waiting = try connected(path)
        defer { close(waiting) }
        #expect(sendText(waiting, #"{"command": "status"}"# + "\n"))
        #expect(daemon.waitUntilAsked(1))
        // Another client is answered at once, and a third connects and is held.
        let other = try connected(path)
        defer { close(other) }
        #expect(exchange(other, "hello\n").contains("not a request"))
        #expect(seconds(since: start) < 1.2, "\(seconds(since: start)) s")
        let silent = try connected(path)
        defer { close(silent) }
        #expect(!hungUp(silent))
        // The status, once the queue is free.
        let status = readAll(waiting)
        #expect(status.contains(#""message":"stand-in running""#) && status.contains(#""routeFiles":["stand-in.yaml"]"#), "\(status)")
        #expect(seconds(since: start) >= 1.4, "\(seconds(since: start)) s")
    }

    @Test func theSocketStopsWithinItsBoundWhileAClientHoldsItsConnectionAndAnAnswerWaitsBehindTheStop() throws {
        let servers = ServerLoop()
        let daemon = StandInDaemon()
        let path = try temporaryDirectory().appendingPathComponent("control.sock").path
        let socket = try ControlSocket(path: path, servers: servers, logger: logger, daemon: daemon.access)

        // The stop runs on the control queue, as the daemon's does; a status asked meanwhile waits behind it.
        let clientsReady = DispatchSemaphore(value: 0)
        let took = Mutex<Double?>(nil)
        daemon.queue.async {
            clientsReady.wait()
            let start = Date()
            socket.stop()
            took.withLock { $0 = seconds(since: start) }
        }
        let silent = try connected(path)
        defer { close(silent) }
        let asking = try connected(path)
        defer { close(asking) }
        #expect(sendText(asking, #"{"command": "status"}"# + "\n"))
        #expect(daemon.waitUntilAsked(1))
        #expect(!hungUp(silent))
        clientsReady.signal()
        daemon.queue.sync {} // the stop, then the answer made after it, which nobody takes

        let stopped = try #require(took.withLock { $0 })
        #expect(stopped < Double(ServerLoop.waitLimit.nanoseconds) / 1e9 && stopped < 0.5, "the stop took \(stopped) s")
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(hungUp(silent) && readAll(silent).isEmpty)
        #expect(readAll(asking).isEmpty, "answered after the stop")
        #expect(servers.shutDown())
    }

    @Test func aStatusWaitingForABusyControlQueueHoldsUpNoOtherRequestOfThePage() throws {
        let servers = ServerLoop()
        defer { servers.shutDown() }
        let daemon = StandInDaemon()
        let (page, port) = try statusPage(daemon, on: servers)
        defer { page.stop() }

        let start = Date()
        daemon.busy(for: 1.5)
        let status = Mutex<(String, Double)?>(nil)
        let asking = Thread {
            let answer = get("/status", port: port)
            status.withLock { $0 = (answer, seconds(since: start)) }
        }
        asking.start()
        #expect(daemon.waitUntilAsked(1))
        // The page itself, and a connection that only holds its place, meanwhile.
        let silent = try #require(connection(port))
        defer { close(silent) }
        #expect(get("/", port: port).hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(seconds(since: start) < 1.2, "\(seconds(since: start)) s")
        #expect(status.withLock { $0 } == nil)
        #expect(waitUntil { status.withLock { $0 } != nil })
        let (answer, after) = try #require(status.withLock { $0 })
        #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n") && answer.contains(#""routeFiles":["stand-in.yaml"]"#), "\(answer)")
        #expect(after >= 1.4, "\(after) s")
    }

    @Test func thePageStopsWithinItsBoundWhileClientsHoldConnectionsAndAnAnswerWaitsBehindTheStop() throws {
        let servers = ServerLoop()
        let daemon = StandInDaemon()
        let (page, port) = try statusPage(daemon, on: servers)

        let clientsReady = DispatchSemaphore(value: 0)
        let took = Mutex<Double?>(nil)
        daemon.queue.async {
            clientsReady.wait()
            let start = Date()
            page.stop()
            took.withLock { $0 = seconds(since: start) }
        }
        // One connection says nothing, one page streams (its first event waits), one asks for the status.
        let silent = try #require(connection(port))
        defer { close(silent) }
        let stream = try #require(connection(port))
        defer { close(stream) }
        #expect(sendText(stream, "GET /events HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n"))
        let asking = try #require(connection(port))
        defer { close(asking) }
        #expect(sendText(asking, "GET /status HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n"))
        #expect(daemon.waitUntilAsked(1) && waitUntil { page.connections.count == 3 && page.streams.count == 1 })
        clientsReady.signal()
        daemon.queue.sync {}

        let stopped = try #require(took.withLock { $0 })
        #expect(stopped < Double(ServerLoop.waitLimit.nanoseconds) / 1e9 && stopped < 0.5, "the stop took \(stopped) s")
        #expect(waitUntil { isClosedByServer(silent) && isClosedByServer(stream) && isClosedByServer(asking) })
        // The port is free at once: a page made again listens there.
        let declaration = HTTPDeclaration(port: port, location: SourceLocation(file: "test.yaml", line: 1, column: 1))
        let again = try StatusPageServer(declaration, daemon: daemon.access, servers: servers, logger: logger)
        #expect(get("/", port: port).hasPrefix("HTTP/1.1 200 OK\r\n"))
        again.stop()
        #expect(servers.shutDown())
    }

    @Test func nothingReachesTheLoopOnceItHasShutDown() throws {
        let servers = ServerLoop()
        #expect(servers.shutDown())
        let ran = Atomic(false)
        servers.execute { ran.store(true, ordering: .relaxed) }
        #expect(throws: ServerLoopError.self) { try servers.wait { servers.eventLoop.makeSucceededFuture(()) } }
        Thread.sleep(forTimeInterval: 0.1)
        let didRun = ran.load(ordering: .relaxed)
        #expect(!didRun)
    }
}
