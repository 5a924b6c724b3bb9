import Foundation
import MIDI
import MIDITestSupport
import Testing

// The real jambridge with `osc:` endpoints, driven by controllers nobody here wrote: liblo's oscsend and
// oscdump (liblo-tools) and PyPI python-osc, all on loopback. What the controllers send is checked in a
// `record:` endpoint's Standard MIDI File, read after jambridge stops; what jambridge sends back is checked
// where the controllers receive it. Instead of sleeping before it stops jambridge, each test waits for the
// feedback of its last message at an observing controller: jambridge handles one endpoint's datagrams in
// order, so by then it has handled everything sent before.

private let ms: UInt64 = 1_000_000

/// The Python with PyPI python-osc that scripts/install-deps.sh sets up.
private let oscsendPath = "/usr/bin/oscsend", oscdumpPath = "/usr/bin/oscdump"

private func pitchBend(_ channel: UInt8, _ value: UInt16) -> MIDIMessage {
    .pitchBend(channel: UInt4(masking: channel), value: UInt14(masking: value))
}

/// `count` different UDP ports for OSC endpoints and receivers, free when picked. They lie above Linux's
/// ephemeral range (32768-60999), where no socket bound to port 0 lands, and above the ports
/// `freshSessionPort` hands out (at most 60003), so other suites running at the same time do not take them.
func freshOSCPorts(_ count: Int) -> [UInt16] {
    var ports: [UInt16] = []
    while ports.count < count {
        let port = UInt16.random(in: 61_000...65_000)
        if !ports.contains(port) && !isBound(port) { ports.append(port) }
    }
    return ports
}

/// Writes `routes` as routes.yaml into `directory` and starts `jambridge run` on it; returns once the
/// `listening` ports are bound.
private func startJamBridge(_ routes: String, in directory: URL, listening: [UInt16],
                            options: [String] = []) throws -> JamBridgeProcess {
    let file = directory.appendingPathComponent("routes.yaml")
    try routes.write(to: file, atomically: true, encoding: .utf8)
    // --stop-after: a test that fails before it stops jambridge does not leave it running.
    let daemon = try JamBridgeProcess(["run"] + (options.contains("--stop-after") ? options : options + ["--stop-after", "120"]) + [file.path])
    if !waitUntilBound(listening) {
        daemon.interrupt()
        Issue.record("jambridge did not bind \(listening): \(daemon.finish().err)")
    }
    return daemon
}

/// Stops `daemon` as Ctrl-C does and expects a clean exit; returns its standard error (the log).
@discardableResult
private func stop(_ daemon: JamBridgeProcess) -> String {
    daemon.interrupt()
    let result = daemon.finish()
    #expect(result.status == 0, "\(result.err)")
    #expect(result.err.contains("SIGINT: stopping"), "\(result.err)")
    return result.err
}

/// What every Python controller script starts with. `run` keeps only standard output, so tracebacks go there.
private let pythonPrelude = #"""
    import json, math, random, select, socket, struct, sys, time
    sys.stderr = sys.stdout
    from pythonosc.osc_message import OscMessage
    from pythonosc.osc_message_builder import OscMessageBuilder

    PORT = int(sys.argv[1])

    def osc(address, *args):
        builder = OscMessageBuilder(address=address)
        for arg in args:
            builder.add_arg(arg)
        return builder.build().dgram

    def controller(port=0, host="127.0.0.1"):
        """A UDP socket on loopback (any of 127/8, or ::1): sends from, and receives feedback at, its own port."""
        s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((host, port))
        return s

    def send(s, address, *args, port=None):
        """Sends to jambridge on 127.0.0.1, or on ::1 from an IPv6 socket."""
        s.sendto(osc(address, *args), ("::1" if s.family == socket.AF_INET6 else "127.0.0.1", port or PORT))

    def hello(s, port=None):
        """Makes `s` a controller with 4 KB of feedback to come: jambridge sends a controller at most four times
        the bytes it sent (an observer that said a bare /hello would get about 50 bytes)."""
        send(s, "/hello", "x" * 1000, port=port)

    def show(data):
        """A received message as one line: address, then arguments (floats with 6 decimals)."""
        message = OscMessage(data)
        return " ".join([message.address] + ["%.6f" % a if isinstance(a, float) else str(a) for a in message.params])

    def receive(s, count, timeout=20.0):
        """The next `count` messages `s` receives (fewer if they do not come within `timeout`)."""
        got, deadline = [], time.monotonic() + timeout
        while len(got) < count and time.monotonic() < deadline:
            if select.select([s], [], [], max(0.0, deadline - time.monotonic()))[0]:
                got.append(show(s.recv(65536)))
        return got

    def pending(s):
        """What `s` has received and not read yet."""
        got = []
        while select.select([s], [], [], 0)[0]:
            got.append(show(s.recv(65536)))
        return got

    def receive_until(s, line, timeout=20.0):
        """Reads `s` until the message shown as `line` arrives."""
        got, deadline = [], time.monotonic() + timeout
        while time.monotonic() < deadline:
            if select.select([s], [], [], max(0.0, deadline - time.monotonic()))[0]:
                got.append(show(s.recv(65536)))
                if got[-1] == line:
                    return got
        raise SystemExit("no %r within %s s; received %r" % (line, timeout, got))

    """#

/// Runs `script` (after `pythonPrelude`) with python-osc's Python and `arguments` (the first is the port
/// `PORT` sends to); expects it to succeed and returns its standard output.
private func python(_ script: String, _ arguments: [String]) throws -> String {
    try #require(FileManager.default.isExecutableFile(atPath: peersPython.path),
                 "python-osc's Python \(peersPython.path) is missing: run scripts/install-deps.sh")
    let result = try run(peersPython.path, ["-c", pythonPrelude + script] + arguments)
    #expect(result.status == 0, "\(result.out)")
    return result.out
}

/// Sends one message with liblo's oscsend, e.g. `oscsend(port, "/1/fader1", "f", "0.5")`.
private func oscsend(_ port: UInt16, _ address: String, _ types: String, _ values: String...) throws {
    try #require(FileManager.default.isExecutableFile(atPath: oscsendPath), "oscsend is missing: run scripts/install-deps.sh (liblo-tools)")
    let result = try run(oscsendPath, ["127.0.0.1", "\(port)", address, types] + values)
    #expect(result.status == 0, "oscsend \(address) \(types) \(values)")
}

/// A message as oscdump printed it (`eeaeeabe.d559a308 /1/fader1 f 0.503937`, the time tag first).
private struct Dumped: Equatable, CustomStringConvertible {
    var address: String
    var types: String
    var values: [Double]

    init(_ address: String, _ types: String, _ values: Double...) {
        self.address = address
        self.types = types
        self.values = values
    }

    init?(line: Substring) {
        let words = line.split(separator: " ")
        guard let start = words.firstIndex(where: { $0.hasPrefix("/") }), start + 1 < words.endIndex else { return nil }
        address = String(words[start])
        types = String(words[start + 1])
        values = words[(start + 2)...].compactMap { Double($0) }
    }

    /// Same address and types, values within oscdump's 6 decimals.
    func matches(_ other: Dumped) -> Bool {
        address == other.address && types == other.types && values.count == other.values.count
            && zip(values, other.values).allSatisfy { abs($0 - $1) < 2e-6 }
    }

    var description: String { "\(address) \(types) \(values.map { String($0) }.joined(separator: " "))" }
}

/// The counts an OSC endpoint logs when jambridge stops.
private struct OSCCounts: Equatable {
    var messages, rejected, unmatched, undecodable, sendFailures, notAccepted, heldBack: Int

    init?(log: String, endpoint: String) {
        let pattern = /: (\d+) OSC messages in, (\d+) rejected, (\d+) unmatched, (\d+) undecodable datagrams, (\d+) send failures, (\d+) datagrams from senders not accepted, (\d+) feedback messages held back/
        guard let line = log.split(separator: "\n").first(where: { $0.contains("\(endpoint): ") && $0.contains("OSC messages in") }),
              let match = line.firstMatch(of: pattern) else { return nil }
        messages = Int(match.1)!
        rejected = Int(match.2)!
        unmatched = Int(match.3)!
        undecodable = Int(match.4)!
        sendFailures = Int(match.5)!
        notAccepted = Int(match.6)!
        heldBack = Int(match.7)!
    }
}

@Suite(.serialized) struct OSCEndToEndTests {
    /// A TouchOSC-like layout on one route, with the MIDI-over-OSC family on too.
    private static func phoneRoutes(listen port: UInt16, extraEntries: String = "") -> String {
        """
        endpoints:
          phone: { osc: { listen: \(port), host: 127.0.0.1 } }
          tape: { record: out.mid }
        routes:
          - from: phone
            to: [tape, phone]
            osc:
              /1/fader<n:1-8>: { cc: "n + 20" }
              /1/push<n:1-16>: { note: "n + 35", channel: 10 }
              /3/xy: { cc: [12, 13] }
              /pitch: { pitchbend: true, from: [-1, 1] }
              midi: true\(extraEntries)
        """
    }

    @Test func oscsendAndPythonOSCFadersButtonsXYPitchAndMIDIOverOSCArriveInOrder() throws {
        let dir = try temporaryDirectory()
        let port = freshOSCPorts(1)[0]
        let daemon = try startJamBridge(Self.phoneRoutes(listen: port), in: dir, listening: [port])

        // liblo's oscsend, one process (and one source port) per message.
        try oscsend(port, "/1/fader1", "f", "0.5")   // CC 21 = 64: 0.5 of 0-127, rounded
        try oscsend(port, "/1/fader8", "i", "1")     // CC 28 = 127: integers are numbers too
        try oscsend(port, "/1/push1", "f", "1")      // note 36 on, channel 10
        try oscsend(port, "/1/push1", "f", "0")      // and off
        try oscsend(port, "/3/xy", "ff", "1", "0")   // CC 12 = 127, CC 13 = 0
        try oscsend(port, "/pitch", "f", "0")        // the middle of [-1, 1]: bend centre 8192
        try oscsend(port, "/pitch", "f", "-1")       // bend 0
        try oscsend(port, "/note", "ii", "60", "100") // the family: channel 1 when left out
        try oscsend(port, "/note", "ii", "60", "0")   // velocity 0 is a note-off
        try oscsend(port, "/cc", "iii", "2", "7", "99")

        // python-osc, one controller; an observer gets the feedback of the last message.
        let out = try python(#"""
            observer, phone = controller(), controller()
            hello(observer)
            send(phone, "/1/fader2", 0.25)   # CC 22 = 32
            send(phone, "/1/fader2", 0.25)   # unchanged: nothing
            send(phone, "/1/fader9", 1.0)    # outside <n:1-8>: unmatched
            send(phone, "/1/push3", True)    # T: note 38 on
            send(phone, "/1/push3", False)   # F: off
            send(phone, "/3/xy", 0.25, 0.75) # CC 12 = 32, CC 13 = 95
            send(phone, "/pitch", 0.5)       # bend 12287
            send(phone, "/note", 3, 64, 90)
            send(phone, "/note", 3, 64, 0)
            send(phone, "/cc", 16, 1, 127)
            receive_until(observer, "/cc 16 1 127")
            print("synced")
            """#, ["\(port)"])
        #expect(out.contains("synced"), "\(out)")
        let log = stop(daemon)

        #expect(try recorded(dir.appendingPathComponent("out.mid")) == [
            cc(0, 21, 64), cc(0, 28, 127), noteOn(9, 36, 100), noteOff(9, 36), cc(0, 12, 127), cc(0, 13, 0),
            pitchBend(0, 8192), pitchBend(0, 0), noteOn(0, 60, 100), noteOff(0, 60), cc(1, 7, 99),
            cc(0, 22, 32), noteOn(9, 38, 100), noteOff(9, 38), cc(0, 12, 32), cc(0, 13, 95),
            pitchBend(0, 12287), noteOn(2, 64, 90), noteOff(2, 64), cc(15, 1, 127),
        ])
        // 10 from oscsend, 11 from python-osc (the observer's /hello and /1/fader9 unmatched).
        #expect(OSCCounts(log: log, endpoint: "phone").map { [$0.messages, $0.rejected, $0.unmatched, $0.undecodable] } == [21, 0, 2, 0], "\(log)")
    }

    @Test func theMonitorShowsOSCInAndOutAroundTheMappedMIDI() throws {
        let dir = try temporaryDirectory()
        let port = freshOSCPorts(1)[0]
        let daemon = try startJamBridge(Self.phoneRoutes(listen: port), in: dir, listening: [port], options: ["--monitor"])
        let out = try python(#"""
            observer, phone = controller(), controller()
            hello(observer)
            send(phone, "/1/fader1", 0.5)
            receive_until(observer, "/1/fader1 0.503937")
            print("observer %d" % observer.getsockname()[1])
            """#, ["\(port)"])
        let observer = try #require(out.split(separator: "\n").first { $0.hasPrefix("observer ") }?.dropFirst(9), "\(out)")
        daemon.interrupt()
        let result = daemon.finish()
        #expect(result.status == 0, "\(result.err)")
        // Each line: time, "FROM -> TO", then the OSC message or the MIDI one.
        let lines = result.out.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().joined(separator: " ") }
        let start = try #require(lines.firstIndex { $0.hasSuffix("-> phone OSC /1/fader1 f 0.5") }, "\(result.out)")
        #expect(Array(lines[(start + 1)...].prefix(3)) == [
            "phone -> tape Control change 1, controller 21, value 64",
            "phone -> phone Control change 1, controller 21, value 64",
            "phone -> 127.0.0.1:\(observer) OSC /1/fader1 f 0.503937",
        ], "\(result.out)")
    }

    /// A button held across a reload (SIGHUP): with its osc: block unchanged, letting go still sends the
    /// note-off; with the block changed, the reload itself releases the note. A marker after letting go
    /// shows where the note-off came (it would come only at the stop if the button were forgotten).
    @Test(arguments: ["n + 35", "n + 47"]) func aButtonHeldAcrossAReloadLetsGo(_ noteAfterReload: String) throws {
        let dir = try temporaryDirectory()
        let port = freshOSCPorts(1)[0]
        let routes = { (note: String) in """
            endpoints:
              phone: { osc: { listen: \(port), host: 127.0.0.1 } }
              tape: { record: out.mid }
            routes:
              - from: phone
                to: [tape, phone]
                osc:
                  /1/push<n:1-16>: { note: "\(note)", channel: 10 }
                  /mark: { cc: 100, from: [0, 127] }
            """ }
        let daemon = try startJamBridge(routes("n + 35"), in: dir, listening: [port])
        let press = try python(#"""
            observer, phone = controller(), controller()
            hello(observer)
            send(phone, "/1/push1", 1.0)
            receive_until(observer, "/1/push1 1.000000")
            print("pressed")
            """#, ["\(port)"])
        #expect(press.contains("pressed"), "\(press)")
        try routes(noteAfterReload).write(to: dir.appendingPathComponent("routes.yaml"), atomically: true, encoding: .utf8)
        kill(daemon.pid, SIGHUP)
        Thread.sleep(forTimeInterval: 2) // the reload is logged; generous for a loaded machine
        let release = try python(#"""
            observer, phone = controller(), controller()
            hello(observer)
            send(phone, "/1/push1", 0.0)
            send(phone, "/mark", 1)
            receive_until(observer, "/mark 1.000000")
            print("released")
            """#, ["\(port)"])
        #expect(release.contains("released"), "\(release)")
        let log = stop(daemon)
        #expect(log.contains("reloaded"), "\(log)")
        #expect(try recorded(dir.appendingPathComponent("out.mid")) == [noteOn(9, 36, 100), noteOff(9, 36), cc(0, 100, 1)])
    }

    @Test func midiFromAFileReachesOscdumpAsFeedbackThroughTheInverseMapping() throws {
        try #require(FileManager.default.isExecutableFile(atPath: oscdumpPath), "oscdump is missing: run scripts/install-deps.sh (liblo-tools)")
        let dir = try temporaryDirectory()
        let ports = freshOSCPorts(2)
        let (port, dumpPort) = (ports[0], ports[1])
        let dump = try JamBridgeProcess(["-L", "\(dumpPort)"], launcher: oscdumpPath)
        // oscdump does not stop on SIGINT here; its output is line-buffered (-L), so killing it loses nothing.
        var dumpKilled = false
        defer { if !dumpKilled { kill(dump.pid, SIGKILL) } }
        #expect(waitUntilBound([dumpPort]), "oscdump did not bind \(dumpPort)")
        let song: [MIDIMessage] = [
            cc(0, 21, 64),  // /1/fader1 at 64/127
            cc(0, 12, 127), // /3/xy: x to 1, y still 0
            cc(0, 13, 32),  // /3/xy: x kept at 1, y to 32/127
            cc(0, 28, 0),   // /1/fader8
            cc(0, 30, 5),   // n = 10 is outside <n:1-8>: only the family
            noteOn(0, 60, 100), noteOff(0, 60),
            pitchBend(1, 8192 + 100),
        ]
        // After a lead-in, 20 ms apart: the order is the song's whatever the scheduling.
        let entries = song.enumerated().map { TimedSong.Entry(offset: 300 * ms + UInt64($0.offset) * 20 * ms, message: $0.element) }
        try Data(StandardMIDIFile.recording(entries).encoded()).write(to: dir.appendingPathComponent("song.mid"))
        let daemon = try startJamBridge("""
            endpoints:
              song: { file: song.mid }
              phone: { osc: { listen: \(port), host: 127.0.0.1, send: ["127.0.0.1:\(dumpPort)"] } }
            routes:
              - from: song
                to: phone
                osc:
                  /1/fader<n:1-8>: { cc: "n + 20" }
                  /3/xy: { cc: [12, 13] }
                  midi: true
            """, in: dir, listening: [port], options: ["--stop-after", "1.5"])
        let result = daemon.finish()
        #expect(result.status == 0, "\(result.err)")
        kill(dump.pid, SIGKILL)
        dumpKilled = true
        let dumped = dump.finish().out.split(separator: "\n").compactMap(Dumped.init(line:))
        let expected = [
            Dumped("/1/fader1", "f", 64.0 / 127), Dumped("/cc", "iii", 1, 21, 64),
            Dumped("/3/xy", "ff", 1, 0), Dumped("/cc", "iii", 1, 12, 127),
            Dumped("/3/xy", "ff", 1, 32.0 / 127), Dumped("/cc", "iii", 1, 13, 32),
            Dumped("/1/fader8", "f", 0), Dumped("/cc", "iii", 1, 28, 0),
            Dumped("/cc", "iii", 1, 30, 5),
            Dumped("/note", "iii", 1, 60, 100), Dumped("/note", "iii", 1, 60, 0),
            Dumped("/pitchbend", "ii", 2, 100),
        ]
        #expect(dumped.count == expected.count && zip(dumped, expected).allSatisfy { $0.matches($1) },
                "oscdump received \(dumped), expected \(expected)")
    }

    @Test func feedbackSkipsTheControllerWhoseChangeItIsAndAControllerThatAppearsGetsTheFullState() throws {
        let dir = try temporaryDirectory()
        let ports = freshOSCPorts(3)
        let (port, tabletPort, tabletReply) = (ports[0], ports[1], ports[2])
        // The tablet sends from one port and listens on another (`reply:`), as TouchOSC does.
        let daemon = try startJamBridge("""
            endpoints:
              phone: { osc: { listen: \(port), host: 127.0.0.1 } }
              tablet: { osc: { listen: \(tabletPort), host: 127.0.0.1, reply: \(tabletReply) } }
            routes:
              - from: phone
                to: [phone, tablet]
                osc:
                  /1/fader<n:1-8>: { cc: "n + 20" }
            """, in: dir, listening: [port, tabletPort])
        let out = try python(#"""
            TABLET, REPLY = int(sys.argv[2]), int(sys.argv[3])
            a, b = controller(), controller()
            got = {"A": [], "B": []}
            hello(b)
            hello(a)
            # Each controller's own change is not sent back to it: the next message it receives is the
            # other's change.
            send(a, "/1/fader1", 0.5)
            got["B"] += receive(b, 1)
            send(b, "/1/fader2", 0.25)
            got["A"] += receive(a, 1)
            send(a, "/1/fader3", 1.0)
            got["B"] += receive(b, 1)
            # Controllers that appear later get the last value of every control.
            c = controller()
            hello(c)
            got["C"] = receive(c, 3)
            tablet_out, tablet_in = controller(), controller(REPLY)
            hello(tablet_out, port=TABLET)
            got["tablet"] = receive(tablet_in, 3)
            # From then on they follow too.
            send(b, "/1/fader4", 0.0)
            got["A"] += receive(a, 1)
            got["C"] += receive(c, 1)
            got["tablet"] += receive(tablet_in, 1)
            got["tablet_out"] = pending(tablet_out)
            print(json.dumps(got))
            """#, ["\(port)", "\(tabletPort)", "\(tabletReply)"])
        let log = stop(daemon)
        let lastLine = out.split(separator: "\n").last.map(String.init) ?? ""
        let got = try JSONSerialization.jsonObject(with: Data(lastLine.utf8)) as? [String: [String]]
        let everything = ["/1/fader1 0.503937", "/1/fader2 0.251969", "/1/fader3 1.000000", "/1/fader4 0.000000"]
        #expect(got == [
            "A": ["/1/fader2 0.251969", "/1/fader4 0.000000"],
            "B": ["/1/fader1 0.503937", "/1/fader3 1.000000"],
            "C": everything,
            "tablet": everything,
            "tablet_out": [],
        ], "\(out)\n\(log)")
    }

    @Test func stillGentleAndHardShakingGiveLowMiddleAndHighActivity() throws {
        let dir = try temporaryDirectory()
        let port = freshOSCPorts(1)[0]
        // /mark n at the end of each phase: CC 100 = n in the recording, in order with the activity.
        let daemon = try startJamBridge("""
            endpoints:
              phone: { osc: { listen: \(port), host: 127.0.0.1 } }
              tape: { record: out.mid }
            routes:
              - from: phone
                to: [tape, phone]
                osc:
                  /accxyz: { activity: motion }
                  /mark: { cc: 100, from: [0, 127] }
            """, in: dir, listening: [port])
        let out = try python(#"""
            rng = random.Random(int(sys.argv[2]))
            observer, phone = controller(), controller()
            hello(observer)

            def shake(peak, frequency, seconds, rate=60.0):
                """TouchOSC's /accxyz in g: gravity on z, sensor noise of 0.01 g, shaking along a slant."""
                phase = rng.uniform(0, 2 * math.pi)
                start = time.monotonic()
                for i in range(int(seconds * rate)):
                    t = i / rate
                    wait = start + t - time.monotonic()
                    if wait > 0:
                        time.sleep(wait)
                    a = peak * math.sin(2 * math.pi * frequency * t + phase)
                    send(phone, "/accxyz", 0.8 * a + rng.gauss(0, 0.01), 0.6 * a + rng.gauss(0, 0.01), 1 + rng.gauss(0, 0.01))

            for mark, (peak, frequency) in enumerate([(0.0, 0.0), (0.3, 2.0), (1.75, 4.5)], start=1):
                shake(peak, frequency, 3.0)
                send(phone, "/mark", mark)
            receive_until(observer, "/mark 3.000000")
            print("synced")
            """#, ["\(port)", "2026"])
        #expect(out.contains("synced"), "\(out)")
        let log = stop(daemon)

        var level = 0, highestWhileStill = 0
        var atMark: [Int: Int] = [:]
        for message in try recorded(dir.appendingPathComponent("out.mid")) {
            guard case .controlChange(let channel, let controller, let value) = message, channel.value == 0 else { continue }
            if controller.value == 11 {
                level = Int(value.value)
                if atMark.isEmpty { highestWhileStill = max(highestWhileStill, level) }
            } else if controller.value == 100 {
                atMark[Int(value.value)] = level
            }
        }
        #expect(atMark.keys.sorted() == [1, 2, 3], "\(log)")
        #expect(highestWhileStill < 15, "activity while still: \(highestWhileStill)")
        #expect((atMark[1] ?? 127) < 15, "at the end of still: \(atMark)")
        #expect((35...90).contains(atMark[2] ?? 0), "at the end of gentle: \(atMark)")
        #expect((atMark[3] ?? 0) > 110, "at the end of hard: \(atMark)")
        #expect(OSCCounts(log: log, endpoint: "phone").map { [$0.rejected, $0.undecodable] } == [0, 0], "\(log)")
    }

    @Test func hostileDatagramsAreCountedAndAGoodFaderStillMaps() throws {
        let dir = try temporaryDirectory()
        let port = freshOSCPorts(1)[0]
        let daemon = try startJamBridge(Self.phoneRoutes(listen: port), in: dir, listening: [port])
        let out = try python(#"""
            observer, hostile = controller(), controller()
            hello(observer)
            expected = {"undecodable": 0, "rejected": 0, "unmatched": 1, "random": 0}

            def raw(data, outcome):
                hostile.sendto(data, ("127.0.0.1", PORT))
                expected[outcome] += 1

            def pad(data):
                return data + b"\0" * (4 - len(data) % 4)

            def message(address, tags, payload=b""):
                return pad(address) + pad(tags) + payload

            def bundle(*elements):
                return b"#bundle\0" + struct.pack(">Q", 1) + b"".join(struct.pack(">i", len(e)) + e for e in elements)

            good = osc("/1/fader1", 0.5)  # 12 bytes of address, 4 of type tags, 4 of float
            # Truncated: in the address, in its padding, before the type tags, before and in the argument.
            for cut in (1, 4, 10, 12, 16, 19):
                raw(good[:cut], "undecodable")
            # Type tags: unknown, without the comma, more than there are arguments; then types the mapping
            # cannot read, too few arguments, and family values out of range or of the wrong kind.
            raw(message(b"/1/fader1", b",x", b"\0\0\0\1"), "undecodable")
            raw(message(b"/1/fader1", b"f", struct.pack(">f", 0.5)), "undecodable")
            raw(message(b"/1/fader1", b",iii", struct.pack(">i", 5)), "undecodable")
            raw(osc("/1/fader1", "loud"), "rejected")
            raw(osc("/3/xy", 0.5), "rejected")
            raw(osc("/cc", 1, 200), "rejected")
            raw(osc("/note", "C4", 100), "rejected")
            raw(osc("/note", 1), "rejected")
            # 60 KB: a string argument, and an address.
            raw(osc("/1/fader1", "x" * 60000), "rejected")
            raw(osc("/" + "a" * 60000, 0.5), "unmatched")
            # Bundles: nested 100 deep; a good message beside a bad one (nothing of it applies); an element
            # size beyond the end.
            deep = osc("/1/fader8", 1.0)
            for _ in range(100):
                deep = bundle(deep)
            raw(deep, "undecodable")
            raw(bundle(bundle(osc("/1/fader6", 1.0), good[:16])), "undecodable")
            raw(b"#bundle\0" + struct.pack(">Qi", 1, 1000) + good, "undecodable")
            # NaN and infinities, as floats and doubles.
            raw(osc("/1/fader1", float("nan")), "rejected")
            raw(osc("/1/fader2", float("inf")), "rejected")
            raw(osc("/3/xy", 0.5, float("-inf")), "rejected")
            raw(message(b"/1/fader3", b",d", struct.pack(">d", float("nan"))), "rejected")
            raw(osc("/cc", 1, float("nan")), "rejected")
            # Random bytes, bare and behind what starts a message or a bundle.
            rng = random.Random(7)
            for i in range(300):
                raw([b"", b"/", b"#bundle\0"][i % 3] + rng.randbytes(rng.randint(1, 600)), "random")
            # Still alive and mapping: a fader, and a fader in a bundle in a bundle.
            send(hostile, "/1/fader1", 0.5)
            hostile.sendto(bundle(bundle(osc("/1/fader7", 1.0))), ("127.0.0.1", PORT))
            receive_until(observer, "/cc 1 27 127")
            print(json.dumps(expected))
            """#, ["\(port)"])
        let log = stop(daemon)
        #expect(try recorded(dir.appendingPathComponent("out.mid")) == [cc(0, 21, 64), cc(0, 27, 127)], "\(log)")
        let lastLine = out.split(separator: "\n").last.map(String.init) ?? ""
        let sent = try #require(try JSONSerialization.jsonObject(with: Data(lastLine.utf8)) as? [String: Int], "\(out)")
        let counts = try #require(OSCCounts(log: log, endpoint: "phone"), "\(log)")
        // Every random datagram (seeded) is undecodable too; what decodes is the observer's /hello, the 60 KB
        // address, the rejected messages and the two good ones.
        #expect(counts.undecodable == sent["undecodable", default: 0] + sent["random", default: 0], "\(log)")
        #expect(counts.rejected == sent["rejected"], "\(log)")
        #expect(counts.unmatched == sent["unmatched"], "\(log)")
        #expect(counts.messages == sent["rejected", default: 0] + sent["unmatched", default: 0] + 2, "\(log)")
        #expect(counts.sendFailures == 0, "\(log)")
        // Each is logged with its reason (the first 20 of each sort).
        for reason in ["OSC bundles nested more than 8 deep", "has an unknown type tag 'x'", "no type tag string",
                       "has type 's', which is not a number here", "is NaN or infinite", "argument 1 is 200, outside 0...127"] {
            #expect(log.contains(reason), "no '\(reason)' in \(log)")
        }
    }

    /// `accept` lists 127.0.0.2 (IPv4) or ::1 (IPv6, on an endpoint listening on every address) but not 127.0.0.1:
    /// the stranger at 127.0.0.1 plays nothing, is sent nothing, and is counted.
    @Test(arguments: [("127.0.0.1", "[127.0.0.2]", "127.0.0.2"), ("\"::\"", "[\"::1\"]", "::1")])
    func aSenderOutsideTheAcceptListIsIgnoredCountedAndNeverAnswered(host: String, accept: String, listed: String) throws {
        let dir = try temporaryDirectory()
        let port = freshOSCPorts(1)[0]
        let daemon = try startJamBridge("""
            endpoints:
              phone: { osc: { listen: \(port), host: \(host), accept: \(accept) } }
              tape: { record: out.mid }
            routes:
              - from: phone
                to: [tape, phone]
                osc:
                  /1/fader<n:1-8>: { cc: "n + 20" }
                  midi: true
            """, in: dir, listening: [port])
        let out = try python(#"""
            LISTED = sys.argv[2]
            stranger, observer, player = controller(), controller(host=LISTED), controller(host=LISTED)
            hello(stranger)                      # a controller if it were listed: it would get what follows
            send(stranger, "/1/fader1", 0.5)
            send(stranger, "/note", 1, 60, 100)
            hello(observer)
            send(player, "/1/fader2", 0.25)
            # Datagrams are handled in order: by now the stranger's have been.
            got = receive_until(observer, "/cc 1 22 32")
            time.sleep(0.2)                      # what would have been sent to the stranger has arrived
            print(json.dumps({"observer": got, "stranger": pending(stranger)}))
            """#, ["\(port)", listed])
        let log = stop(daemon)
        let lastLine = out.split(separator: "\n").last.map(String.init) ?? ""
        let got = try #require(try JSONSerialization.jsonObject(with: Data(lastLine.utf8)) as? [String: [String]], "\(out)")
        #expect(got == ["observer": ["/1/fader2 0.251969", "/cc 1 22 32"], "stranger": []], "\(log)")
        #expect(try recorded(dir.appendingPathComponent("out.mid")) == [cc(0, 22, 32)])
        let counts = try #require(OSCCounts(log: log, endpoint: "phone"), "\(log)")
        #expect(counts.notAccepted == 3 && counts.messages == 2 && counts.unmatched == 1, "\(log)")
        #expect(log.contains("phone: ignored OSC from 127.0.0.1:"), "\(log)")
    }

    /// The reflection case: eight faders and the note family fed by a looping song. A stranger that sends one
    /// 20-byte datagram (a forged source address would draw the same) gets back at most four times that,
    /// however long the song plays; a controller that keeps talking (an accelerometer stream, as a phone sends)
    /// gets every change.
    @Test func aOneDatagramStrangerGetsLittleBackAndATalkingControllerEveryChange() throws {
        let dir = try temporaryDirectory()
        let port = freshOSCPorts(1)[0]
        // Step i, 40 ms apart: controller 21 + i % 8 set to i, and note 40 + i on, then off 20 ms later.
        let steps = 32
        let entries = (0..<steps).flatMap { i in
            let start = UInt64(i) * 40 * ms
            return [TimedSong.Entry(offset: start, message: cc(0, UInt8(21 + i % 8), UInt8(i))),
                    TimedSong.Entry(offset: start, message: noteOn(0, UInt8(40 + i), 100)),
                    TimedSong.Entry(offset: start + 20 * ms, message: noteOff(0, UInt8(40 + i)))]
        }
        try Data(StandardMIDIFile.recording(entries).encoded()).write(to: dir.appendingPathComponent("song.mid"))
        let daemon = try startJamBridge("""
            endpoints:
              song: { file: song.mid, loop: true }
              phone: { osc: { listen: \(port), host: 127.0.0.1 } }
            routes:
              - from: song
                to: phone
                osc:
                  /1/fader<n:1-8>: { cc: "n + 20" }
                  midi: true
            """, in: dir, listening: [port])
        let out = try python(#"""
            talker, stranger = controller(), controller()
            hello(talker)
            heard, stranger_bytes, stranger_got = [], 0, []
            stranger_sent_at, next_talk = None, time.monotonic()
            while stranger_sent_at is None or time.monotonic() < stranger_sent_at + 3.0:
                now = time.monotonic()
                if now >= next_talk:
                    send(talker, "/accxyz", 0.0, 0.0, 1.0)   # 28 bytes every 20 ms
                    next_talk = max(next_talk + 0.02, now)
                if stranger_sent_at is None and len(heard) >= 60:   # the song is playing: the stranger appears
                    datagram = osc("/1/fader1", 0.5)
                    stranger.sendto(datagram, ("127.0.0.1", PORT))
                    stranger_sent_at, stranger_sent = now, len(datagram)
                for s in select.select([talker, stranger], [], [], max(0.0, next_talk - time.monotonic()))[0]:
                    data = s.recv(65536)
                    if s is talker:
                        heard.append(show(data))
                    else:
                        stranger_bytes += len(data)
                        stranger_got.append(show(data))
            print(json.dumps({"sent": stranger_sent, "bytes": stranger_bytes, "stranger": stranger_got, "talker": heard}))
            """#, ["\(port)"])
        let log = stop(daemon)
        let lastLine = out.split(separator: "\n").last.map(String.init) ?? ""
        let got = try #require(try JSONSerialization.jsonObject(with: Data(lastLine.utf8)) as? [String: Any], "\(out)")
        let sent = try #require(got["sent"] as? Int), bytes = try #require(got["bytes"] as? Int)
        let strangerGot = try #require(got["stranger"] as? [String]), talker = try #require(got["talker"] as? [String])
        #expect(sent == 20)
        #expect(bytes <= 4 * sent && !strangerGot.isEmpty, "the stranger got \(bytes) bytes: \(strangerGot)")
        let counts = try #require(OSCCounts(log: log, endpoint: "phone"), "\(log)")
        #expect(counts.heldBack > 0, "\(log)")

        // The talker: after the full state it was owed when it appeared, every step in order, none left out. It
        // may appear between a note's on and off (then it hears that off first): count from its first note-on.
        let live = talker.drop { !($0.hasPrefix("/note ") && $0.hasSuffix(" 100")) }
        let ccSteps = live.filter { $0.hasPrefix("/cc ") }.compactMap { Int($0.split(separator: " ")[3]) }
        let notes = live.filter { $0.hasPrefix("/note ") }.map { $0.split(separator: " ").dropFirst(2).joined(separator: " ") }
        #expect(ccSteps.count > steps, "\(talker)")
        #expect(zip(ccSteps, ccSteps.dropFirst()).allSatisfy { ($0 + 1) % steps == $1 }, "\(ccSteps)")
        let firstNote = try #require(notes.first.flatMap { Int($0.split(separator: " ")[0]) }, "\(talker)")
        let expectedNotes = (0..<notes.count).map { k in "\(40 + (firstNote - 40 + k / 2) % steps) \(k % 2 == 0 ? 100 : 0)" }
        #expect(notes == expectedNotes, "\(talker)")
    }
}
