#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import OSC
import Synchronization
import Testing
import Transport

private let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// A program the tests run as a peer nobody here wrote; fails the test if it is not installed.
private func peerTool(_ path: String, from package: String) throws -> URL {
    guard FileManager.default.isExecutableFile(atPath: path) else {
        Issue.record("\(path) is missing: run scripts/install-deps.sh (it installs \(package))")
        throw CancellationError()
    }
    return URL(fileURLWithPath: path)
}

/// Waits up to `seconds` (generous: the machine may be loaded) for `condition`.
private func waitUntil(seconds: Double = 20, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        if Date() > deadline { return false }
        usleep(10_000)
    }
    return true
}

/// Runs a program to its end; returns its status and what it wrote to stderr.
@discardableResult
private func run(_ tool: URL, _ arguments: [String]) throws -> (status: Int32, err: String) {
    let process = Process()
    process.executableURL = tool
    process.arguments = arguments
    let err = Pipe()
    process.standardError = err
    try process.run()
    let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return (process.terminationStatus, text)
}

/// An OSCSocket reading on a queue of its own, keeping what arrives.
private final class Receiver: Sendable {
    let socket: OSCSocket
    let queue = DispatchQueue(label: "osc test")
    private let arrived = Mutex<[(OSCMessage, NetworkAddress)]>([])
    private let oversized = Mutex<[Int]>([])
    private let errors = Mutex<[OSCDecodeError]>([])

    init(_ address: NetworkAddress, maxDatagram: Int = 65535) throws {
        socket = try OSCSocket(listeningOn: address, maxDatagram: maxDatagram)
        try socket.start(queue: queue) { [self] datagram, sender in
            switch datagram {
            case .bytes(let bytes):
                do throws(OSCDecodeError) {
                    try OSCPacket.decode(bytes) { message, _ in arrived.withLock { $0.append((message, sender)) } }
                } catch {
                    errors.withLock { $0.append(error) }
                }
            case .oversized(let count):
                oversized.withLock { $0.append(count) }
            }
        }
    }

    var messages: [OSCMessage] { arrived.withLock { $0.map(\.0) } }
    var senders: [NetworkAddress] { arrived.withLock { $0.map(\.1) } }
    var oversizedCounts: [Int] { oversized.withLock { $0 } }
    var decodeErrors: [OSCDecodeError] { errors.withLock { $0 } }
    var port: UInt16 { socket.address.port }

    func close() { socket.close() }
}

/// A value several threads touch.
private final class Shared<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func update(_ change: (inout Value) -> Void) { mutex.withLock { change(&$0) } }
    var value: Value { mutex.withLock { $0 } }
}

/// A UDP port free right now on 127.0.0.1.
private func freePort() throws -> UInt16 {
    let probe = try UDPSocket(address: NetworkAddress(ipv4: 127, 0, 0, 1, port: 0), port: 0)
    defer { probe.close() }
    return probe.port
}

@Suite struct OSCSocketTests {
    let everyInterface = NetworkAddress(numeric: "::", port: 0)!

    @Test func receivesWhatOscsendSends() throws {
        let oscsend = try peerTool("/usr/bin/oscsend", from: "liblo-tools")
        let receiver = try Receiver(everyInterface)
        defer { receiver.close() }
        let fader = try run(oscsend, ["localhost", "\(receiver.port)", "/1/fader1", "f", "0.5"])
        #expect(fader.status == 0, "\(fader.err)")
        let all = try run(oscsend, ["127.0.0.1", "\(receiver.port)", "/all", "ishdTFNIcmS", "-3", "hi", "7", "2.5", "x", "01904064", "sym"])
        #expect(all.status == 0, "\(all.err)")
        #expect(waitUntil { receiver.messages.count == 2 }, "received \(receiver.messages)")
        #expect(receiver.messages == [
            OSCMessage("/1/fader1", [.float(0.5)]),
            OSCMessage("/all", [.int32(-3), .string("hi"), .int64(7), .double(2.5), .bool(true), .bool(false), .nil_, .impulse,
                                .char(UInt8(ascii: "x")), .midi([0x01, 0x90, 0x40, 0x64]), .string("sym")]),
        ])
        #expect(receiver.senders.allSatisfy { $0.host == "127.0.0.1" || $0.host == "::1" }, "\(receiver.senders)")
    }

    @Test func receivesWhatPythonOSCSends() throws {
        let python = try peerTool(repositoryRoot.appendingPathComponent(".build-peers/venv/bin/python").path, from: "PyPI python-osc")
        let receiver = try Receiver(everyInterface)
        defer { receiver.close() }
        let script = """
            import sys
            from pythonosc.udp_client import SimpleUDPClient
            from pythonosc.osc_bundle_builder import OscBundleBuilder, IMMEDIATELY
            from pythonosc.osc_message_builder import OscMessageBuilder
            client = SimpleUDPClient("127.0.0.1", int(sys.argv[1]))
            client.send_message("/1/xy1", [0.25, 0.75])
            client.send_message("/1/push1", 1.0)
            bundle = OscBundleBuilder(IMMEDIATELY)
            for address, args in [("/accxyz", [0.5, -0.25, 9.75]), ("/flag", [True, "on", 3])]:
                message = OscMessageBuilder(address=address)
                for arg in args:
                    message.add_arg(arg)
                bundle.add_content(message.build())
            client.send(bundle.build())
            """
        let result = try run(python, ["-c", script, "\(receiver.port)"])
        #expect(result.status == 0, "\(result.err)")
        #expect(waitUntil { receiver.messages.count == 4 }, "received \(receiver.messages)")
        #expect(receiver.messages == [
            OSCMessage("/1/xy1", [.float(0.25), .float(0.75)]),
            OSCMessage("/1/push1", [.float(1)]),
            OSCMessage("/accxyz", [.float(0.5), .float(-0.25), .float(9.75)]),
            OSCMessage("/flag", [.bool(true), .string("on"), .int32(3)]),
        ])
        #expect(receiver.decodeErrors.isEmpty)
    }

    @Test func oscdumpReceivesWhatWeSend() throws {
        let oscdump = try peerTool("/usr/bin/oscdump", from: "liblo-tools")
        let port = try freePort()
        let process = Process()
        process.executableURL = oscdump
        process.arguments = ["-L", "\(port)"]
        let out = Pipe()
        process.standardOutput = out
        let printed = Shared("")
        out.fileHandleForReading.readabilityHandler = { handle in
            let text = String(decoding: handle.availableData, as: UTF8.self)
            printed.update { $0 += text }
        }
        try process.run()
        defer {
            kill(process.processIdentifier, SIGKILL) // oscdump ignores SIGTERM
            process.waitUntilExit()
            out.fileHandleForReading.readabilityHandler = nil
        }
        let socket = try OSCSocket(listeningOn: NetworkAddress(ipv4: 127, 0, 0, 1, port: 0))
        defer { socket.close() }
        let target = NetworkAddress(ipv4: 127, 0, 0, 1, port: port)
        // oscdump says nothing when it is ready: knock until it prints a knock.
        let listening = waitUntil {
            try? socket.send(OSCMessage("/knock"), to: target)
            usleep(50_000)
            return printed.value.contains("/knock")
        }
        #expect(listening, "oscdump never printed /knock: \(printed.value)")
        try socket.send(OSCMessage("/1/fader1", [.float(0.5)]), to: target)
        try socket.send(OSCMessage("/label", [.string("hello")]), to: target)
        try socket.send(OSCMessage("/mixed", [.int32(3), .int64(-4), .double(2.5), .bool(true), .char(UInt8(ascii: "x"))]), to: target)
        let expected = ["/1/fader1 f 0.500000", "/label s \"hello\"", "/mixed ihdTc 3 -4 2.500000 #T 'x'"]
        // Each line is "SECONDS.FRACTION ADDRESS TYPES VALUES".
        func lines() -> [String] {
            printed.value.split(separator: "\n").map { $0.split(separator: " ", maxSplits: 1).last.map(String.init) ?? "" }
                .filter { !$0.hasPrefix("/knock") }
        }
        #expect(waitUntil { lines().count >= expected.count }, "oscdump printed \(printed.value)")
        #expect(lines() == expected)
    }

    @Test func aTakenPortIsReportedClearly() throws {
        let first = try OSCSocket(listeningOn: NetworkAddress(ipv4: 127, 0, 0, 1, port: 0))
        defer { first.close() }
        let port = first.address.port
        #expect(throws: TransportError.self) { try OSCSocket(listeningOn: first.address) }
        do {
            _ = try OSCSocket(listeningOn: first.address)
        } catch {
            #expect(error.description == "cannot listen for OSC on 127.0.0.1:\(port): Address already in use"
                + " (another program, or another jambridge, uses it; choose another 'listen:' port)")
        }
    }

    @Test func oversizedDatagramsAreReportedNotDecoded() throws {
        let receiver = try Receiver(NetworkAddress(ipv4: 127, 0, 0, 1, port: 0), maxDatagram: 64)
        defer { receiver.close() }
        let sender = try UDPSocket(address: NetworkAddress(ipv4: 127, 0, 0, 1, port: 0), port: 0)
        defer { sender.close() }
        var big: [UInt8] = []
        try OSCPacket.encode(OSCMessage("/big", [.blob(Array(repeating: 7, count: 180))]), into: &big)
        var small: [UInt8] = []
        try OSCPacket.encode(OSCMessage("/small", [.int32(1)]), into: &small)
        let target = receiver.socket.address
        #expect(big.withUnsafeBytes { sender.send($0, to: target) } == nil)
        #expect(small.withUnsafeBytes { sender.send($0, to: target) } == nil)
        #expect(waitUntil { receiver.messages.count == 1 })
        #expect(receiver.oversizedCounts == [big.count])
        #expect(receiver.messages == [OSCMessage("/small", [.int32(1)])])
        #expect(receiver.decodeErrors.isEmpty)
    }

    @Test func closingOffTheQueueFreesThePortAtOnceAndOnTheQueueNeverWaits() throws {
        let loopback = NetworkAddress(ipv4: 127, 0, 0, 1, port: 0)
        let receiver = try Receiver(loopback)
        let address = receiver.socket.address
        receiver.close()
        let again = try OSCSocket(listeningOn: address) // the reader thread closed the socket before close returned
        let queue = DispatchQueue(label: "closing")
        let delivered = Shared(0)
        try again.start(queue: queue) { _, _ in
            delivered.update { $0 += 1 }
            again.close() // on the queue, from the handler: must not wait for the reader
        }
        // Sent from a socket of their own: the handler closes `again` while they may still be going out.
        let sender = try UDPSocket(address: loopback, port: 0)
        defer { sender.close() }
        var datagram: [UInt8] = []
        try OSCPacket.encode(OSCMessage("/x"), into: &datagram)
        for _ in 0..<3 { #expect(datagram.withUnsafeBytes { sender.send($0, to: address) } == nil) }
        #expect(waitUntil { delivered.value >= 1 })
        queue.sync {} // the handler has returned
        usleep(100_000)
        #expect(delivered.value == 1)
    }

    /// A close made on the reading queue (as the engine's is) cannot wait for the reader thread, which may be waiting
    /// for that queue with a datagram: waiting for the port to be free is bounded, and ends once the queue is free.
    @Test func waitingForThePortToBeFreeIsBoundedWhileTheQueueIsBusy() throws {
        let queue = DispatchQueue(label: "busy engine")
        let socket = try OSCSocket(listeningOn: NetworkAddress(ipv4: 127, 0, 0, 1, port: 0))
        try socket.start(queue: queue) { _, _ in }
        let sent = DispatchSemaphore(value: 0)
        let closed = Shared(false)
        queue.async {
            sent.wait()
            usleep(200_000) // the reader thread is waiting for the queue with the datagram
            socket.close()
            closed.update { $0 = true }
            usleep(1_500_000) // and the queue stays busy
        }
        let sender = try UDPSocket(address: NetworkAddress(ipv4: 127, 0, 0, 1, port: 0), port: 0)
        defer { sender.close() }
        var datagram: [UInt8] = []
        try OSCPacket.encode(OSCMessage("/x"), into: &datagram)
        #expect(datagram.withUnsafeBytes { sender.send($0, to: socket.address) } == nil)
        sent.signal()
        #expect(waitUntil { closed.value })
        let start = Date()
        #expect(!socket.waitUntilClosed(within: .milliseconds(300)))
        let waited = Date().timeIntervalSince(start)
        #expect(waited >= 0.29 && waited < 1, "\(waited) s")
        #expect(socket.waitUntilClosed(within: .seconds(10)))
    }

    @Test func sendingRefusesWhatCannotGo() throws {
        let socket = try OSCSocket(listeningOn: NetworkAddress(ipv4: 127, 0, 0, 1, port: 0))
        defer { socket.close() }
        #expect(throws: OSCSocket.SendError.encoding(.addressWithoutSlash("x"))) {
            try socket.send(OSCMessage("x"), to: socket.address)
        }
        let v6 = NetworkAddress(numeric: "::1", port: 9000)!
        #expect(throws: OSCSocket.SendError.transport(TransportError(operation: "send OSC to [::1]:9000", code: EAFNOSUPPORT))) {
            try socket.send(OSCMessage("/x"), to: v6)
        }
    }

    @Test func targetsResolveNumericFirstThenByName() throws {
        #expect(try NetworkAddress.resolve("10.0.0.2", port: 9000) == NetworkAddress(ipv4: 10, 0, 0, 2, port: 9000))
        #expect(try NetworkAddress.resolve("::1", port: 9000) == NetworkAddress(ipv6: 0, 1, port: 9000))
        let localhost = try NetworkAddress.resolve("localhost", port: 9000)
        #expect(localhost.port == 9000 && (localhost.host == "127.0.0.1" || localhost.host == "::1"))
        let error = #expect(throws: HostResolutionError.self) { try NetworkAddress.resolve("no-such-host.invalid", port: 9000) }
        #expect(error?.description.hasPrefix("cannot resolve host 'no-such-host.invalid': ") == true, "\(String(describing: error))")
    }
}
