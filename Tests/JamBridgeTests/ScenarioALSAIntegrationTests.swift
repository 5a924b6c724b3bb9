import Foundation
@testable import JamBridge
import MIDI
import Testing

// The acceptance scenario (issue 16): a jam session in a box, everything together the way its users meet it. Run by
// scripts/alsa-tests.sh (so by scripts/test.sh) in the VM of scripts/alsa-vm.sh, which has the sequencer, snd-virmidi,
// snd-aloop, network namespaces and netem. Three hosts of scripts/scenario-lab.sh on one LAN that delays every packet
// 5 ms +- 2 ms and loses 1 % of them, each with its own avahi-daemon:
// - rack: jambridge (Tests/Scenario/rack.yaml) with a "USB keyboard" (Virtual Raw MIDI 0-0), a drum machine (0-1)
//   that gets the session's clock, and its drums playing on hw:Loopback,0, captured by arecord on hw:Loopback,1;
// - phone: jambridge (Tests/Scenario/phone.yaml) fed by a controller app (python-osc, Tests/Peers/phone_controls.py):
//   faders, pads, Start/Stop and an accelerometer; its synth (0-3) gets the session's notes and clock;
// - laptop: PyPI pymidi's RTP-MIDI responder (Tests/Peers/laptop.py), announced on Bonjour by avahi-publish.
// amidi reads the drum machine and the synth with the kernel's timestamps: one clock for both hosts' outputs. The test
// prints a timeline of what each host saw, step by step, and a line per point of the issue. docs/testing.md, "The
// scenario", says what is checked and the figures measured.

private let lab = repositoryRoot.appendingPathComponent("scripts/scenario-lab.sh").path
/// Where scripts/scenario-lab.sh keeps each host's /run (its JB_SCENARIO_LAB_DIR default).
private let labDirectory = "/tmp/jambridge-scenario-lab"
private let scenarioFiles = repositoryRoot.appendingPathComponent("Tests/Scenario")
private let peers = repositoryRoot.appendingPathComponent("Tests/Peers")

/// Now on CLOCK_MONOTONIC, in seconds: the clock of amidi's timestamps, of the laptop's lines and of the timeline.
private func monotonic() -> Double { Double(MonotonicClock.now().nanoseconds) / 1e9 }

/// A process whose lines (standard output and standard error) are kept with the time each arrived.
///
/// Started with posix_spawn and an empty signal mask: Foundation's Process passes on the mask of the thread that
/// starts it, and the test's threads block SIGINT and SIGTERM, so amidi, arecord and the laptop could not be stopped
/// as Ctrl-C stops them (arecord then leaves its WAV file unfinished). Every path given is absolute.
private final class TimedLines: @unchecked Sendable { // `received`, `partial` and `exit` are guarded by `lock`
    struct Line: Sendable {
        var time: Double
        var text: String
        /// True if it came on standard error.
        var error: Bool
    }

    let pid: pid_t
    private let lock = NSLock()
    private var received: [Line] = []
    /// What standard output holds after its last line break (amidi ends each line only when the next read comes).
    private var partial = ""
    private var exit: Int32?
    private let readers = DispatchGroup()

    init(_ executable: String, _ arguments: [String]) throws {
        var out: [Int32] = [0, 0], err: [Int32] = [0, 0]
        guard pipe(&out) == 0, pipe(&err) == 0 else { throw POSIXError(.EMFILE) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, out[1], 1)
        posix_spawn_file_actions_adddup2(&actions, err[1], 2)
        for fd in out + err { posix_spawn_file_actions_addclose(&actions, fd) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), stopping = sigset_t()
        sigemptyset(&none)
        sigemptyset(&stopping)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGPIPE] { sigaddset(&stopping, signal) }
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &stopping)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        close(out[1])
        close(err[1])
        guard spawned == 0 else {
            close(out[0])
            close(err[0])
            throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .ENOENT)
        }
        self.pid = pid
        for (fd, error) in [(out[0], false), (err[0], true)] {
            readers.enter()
            DispatchQueue.global().async { [self] in
                let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
                var pending = Data()
                while case let data = handle.availableData, !data.isEmpty {
                    pending.append(data)
                    let time = monotonic()
                    while let newline = pending.firstIndex(of: 0x0A) {
                        let text = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                        pending.removeSubrange(pending.startIndex...newline)
                        lock.withLock { received.append(Line(time: time, text: text, error: error)) }
                    }
                    if !error { lock.withLock { partial = String(decoding: pending, as: UTF8.self) } }
                }
                if !pending.isEmpty {
                    let text = String(decoding: pending, as: UTF8.self)
                    lock.withLock {
                        received.append(Line(time: monotonic(), text: text, error: error))
                        if !error { partial = "" }
                    }
                }
                readers.leave()
            }
        }
        let child = pid
        Thread.detachNewThread { [self] in
            let code = waitForExit(child)
            lock.withLock { exit = code }
        }
    }

    var lines: [Line] { lock.withLock { received } }
    /// The lines so far and the start of the next one on standard output.
    var linesAndPartial: (lines: [Line], partial: String) { lock.withLock { (received, partial) } }
    var text: String { lines.map(\.text).joined(separator: "\n") }
    var isRunning: Bool { lock.withLock { exit == nil } }

    /// Waits (at most `seconds`) for a line that `matches`, among those that came after `after`; returns it.
    @discardableResult
    func waitForLine(after: Double = 0, seconds: Double = 60, _ matches: (String) -> Bool) -> Line? {
        let deadline = monotonic() + seconds
        while true {
            if let line = lines.first(where: { $0.time >= after && matches($0.text) }) { return line }
            guard monotonic() < deadline, isRunning else { return lines.first { $0.time >= after && matches($0.text) } }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// Waits for it to end (killed after `seconds`); its exit status (128 + the signal that ended it).
    @discardableResult
    func finish(killingAfter seconds: Double = 60) -> Int32 {
        let deadline = monotonic() + seconds
        while isRunning && monotonic() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if isRunning { kill(pid, SIGKILL) }
        while isRunning { Thread.sleep(forTimeInterval: 0.01) }
        readers.wait()
        return lock.withLock { exit ?? -1 }
    }

    func signal(_ signal: Int32) { kill(pid, signal) }
}

/// The timeline the scenario prints as it goes (written at once, unbuffered, so that a VM that dies keeps it), and
/// the issue's points, each failed check recorded as a test issue.
private final class Timeline: @unchecked Sendable {
    let start = monotonic()
    private(set) var failures: [Int: [String]] = [:]
    private(set) var checked: Set<Int> = []

    func write(_ text: String) { FileHandle.standardOutput.write(Data((text + "\n").utf8)) }

    func seconds(_ time: Double) -> String { String(format: "%6.1f s", time - start) }

    func step(_ title: String) { write("\n[\(seconds(monotonic()))] \(title)") }

    func saw(_ host: String, _ text: String, at time: Double? = nil) {
        let when = time.map { seconds($0) } ?? String(repeating: " ", count: 8)
        write("  \(when)  \(host.padding(toLength: 12, withPad: " ", startingAt: 0)) \(text)")
    }

    /// Checks one of the issue's points: a line in the timeline, and a test issue if it does not hold.
    func check(_ point: Int, _ holds: Bool, _ what: String, _ detail: @autoclosure () -> String = "",
               sourceLocation: Testing.SourceLocation = #_sourceLocation) {
        checked.insert(point)
        saw("check", "\(holds ? "ok  " : "FAIL") \(point). \(what)" + (holds ? "" : ": \(detail())"))
        if !holds {
            failures[point, default: []].append(what)
            Issue.record("point \(point): \(what): \(detail())", sourceLocation: sourceLocation)
        }
    }
}

/// One message read from a device, at the time amidi's kernel timestamp gives.
private struct Heard {
    var time: Double
    var message: MIDIMessage
}

/// A MIDI device read by amidi (alsa-utils) with the kernel's timestamps (`-T monotonic`), for the whole scenario; its
/// dump is parsed as it comes (amidi prints a line per read, "13.764447927) F8"; a message in running status may follow
/// on a line of its own without a time), each message at the time of the read that completed it.
private final class DeviceReader: @unchecked Sendable { // the parser's state is guarded by `lock`
    let name: String
    let process: TimedLines
    private let lock = NSLock()
    private var parser = MIDIParser()
    private var linesParsed = 0, time = 0.0
    private var parsed: [Heard] = []

    init(_ name: String, device: Int) throws {
        self.name = name
        process = try TimedLines("/usr/bin/amidi", ["-p", "hw:0,\(device)", "-d", "-c", "-T", "monotonic"])
    }

    /// What it heard at or after `after` and before `before`.
    func heard(after: Double = 0, before: Double = .infinity) -> [Heard] {
        lock.withLock {
            let (all, partial) = process.linesAndPartial
            let lines = all.filter { !$0.error }
            for line in lines.dropFirst(linesParsed) { Self.parse(line.text, parser: &parser, time: &time, into: &parsed) }
            linesParsed = lines.count
            // The line amidi has not ended yet, parsed on copies (it is parsed for good once it ends).
            var (partialParser, partialTime, unended) = (parser, time, [Heard]())
            Self.parse(partial, parser: &partialParser, time: &partialTime, into: &unended)
            let first = parsed.partitioningIndex { $0.time >= after }
            return (parsed[first...] + unended.filter { $0.time >= after }).prefix { $0.time < before }.map { $0 }
        }
    }

    /// Parses one line of amidi's dump.
    private static func parse(_ line: String, parser: inout MIDIParser, time: inout Double, into heard: inout [Heard]) {
        let parts = line.split(separator: ")", maxSplits: 1)
        if parts.count == 2, let stamp = Double(parts[0].trimmingCharacters(in: .whitespaces)) { time = stamp }
        let at = time
        for byte in dumpedBytes(String(parts.last ?? "")) {
            parser.parse([byte]) { if case .message(let message) = $0 { heard.append(Heard(time: at, message: message)) } }
        }
    }

    /// Waits (at most `seconds`) until what it heard after `after` satisfies `holds`; whether it did.
    func wait(after: Double, seconds: Double = 30, until holds: ([Heard]) -> Bool) -> Bool {
        waitUntil(seconds: seconds) { holds(heard(after: after)) }
    }
}

private extension Array {
    /// The first index whose element satisfies `belongs` (all after it do too), by bisection.
    func partitioningIndex(where belongs: (Element) -> Bool) -> Int {
        var low = 0, high = count
        while low < high {
            let middle = (low + high) / 2
            if belongs(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}

/// A note on a channel (0-15).
private struct Key: Hashable, Comparable, CustomStringConvertible {
    var channel: Int
    var note: Int
    static func < (a: Key, b: Key) -> Bool { (a.channel, a.note) < (b.channel, b.note) }
    var description: String { "\(note) (ch \(channel + 1))" }
}

/// A note message as "note_on 72 50" or "note_off 72" (the laptop's words); nil for anything else.
private func noteWords(_ message: MIDIMessage) -> String? {
    switch message {
    case .noteOn(_, let note, let velocity) where velocity.value > 0: "note_on \(note.value) \(velocity.value)"
    case .noteOn(_, let note, _), .noteOff(_, let note, _): "note_off \(note.value)"
    default: nil
    }
}

/// The note number of a note-on or note-off.
private func noteNumber(_ message: MIDIMessage) -> Int? {
    switch message {
    case .noteOn(_, let note, _), .noteOff(_, let note, _): Int(note.value)
    default: nil
    }
}

/// The notes `messages` leave on.
private func keysLeftOn(_ messages: [MIDIMessage]) -> [Key] {
    var on = Set<Key>()
    for message in messages {
        switch message {
        case .noteOn(let channel, let note, let velocity) where velocity.value > 0:
            on.insert(Key(channel: Int(channel.value), note: Int(note.value)))
        case .noteOn(let channel, let note, _), .noteOff(let channel, let note, _):
            on.remove(Key(channel: Int(channel.value), note: Int(note.value)))
        default: break
        }
    }
    return on.sorted()
}

/// A line of the laptop's (Tests/Peers/laptop.py), decoded.
private struct LaptopEvent: Decodable {
    var t: Double
    var event: String
    var name: String?
    var pid: Int32?
    var channel: Int?
    var key: Int?
    var velocity: Int?
    var controller: Int?
    var value: Int?
    var lost: Int?
    var notes: [[Int]]?
    var error: String?
}

/// The laptop's lines, decoded as they come.
private final class LaptopLog: @unchecked Sendable { // guarded by `lock`
    let process: TimedLines
    private let lock = NSLock()
    private var linesDecoded = 0
    private var decoded: [LaptopEvent] = []

    init(_ process: TimedLines) { self.process = process }

    /// Its events at or after `after`.
    func events(after: Double = 0) -> [LaptopEvent] {
        lock.withLock {
            let lines = process.lines.filter { !$0.error }
            decoded += lines.dropFirst(linesDecoded).compactMap { try? JSONDecoder().decode(LaptopEvent.self, from: Data($0.text.utf8)) }
            linesDecoded = lines.count
            return decoded.filter { $0.t >= after }
        }
    }

    /// Waits (at most `seconds`) until its events after `after` satisfy `holds`; whether they did.
    func wait(after: Double, seconds: Double = 30, until holds: ([LaptopEvent]) -> Bool) -> Bool {
        waitUntil(seconds: seconds) { holds(events(after: after)) }
    }

    /// The notes it holds: what pymidi decoded, with the journal's repairs.
    var notesLeftOn: [Key] {
        var on = Set<Key>()
        for event in events() {
            guard let channel = event.channel, let key = event.key else { continue }
            if ["note_on", "repaired_on"].contains(event.event) { on.insert(Key(channel: channel, note: key)) } else { on.remove(Key(channel: channel, note: key)) }
        }
        return on.sorted()
    }
}

/// The clock runs on a device: each Start (or Continue) with the ticks after it by their index in the song (from 0
/// after a Start, from where the song stood after a Continue: its Song Position's, or where it stopped), until the next
/// Stop, Start or Continue.
private func clockRuns(_ heard: [Heard]) -> [(start: Double, ticks: [Int: Double], stopped: Double?)] {
    var runs: [(start: Double, ticks: [Int: Double], stopped: Double?)] = []
    var running = false, position = 0
    for item in heard {
        switch item.message {
        case .songPosition(let sixteenths):
            position = Int(sixteenths.value) * 6
        case .start, .continue:
            if item.message == .start { position = 0 }
            runs.append((item.time, [:], nil))
            running = true
        case .stop where running:
            runs[runs.count - 1].stopped = item.time
            running = false
        case .timingClock where running:
            runs[runs.count - 1].ticks[position] = item.time
            position += 1
        default: break
        }
    }
    return runs
}

/// Milliseconds, written "1.23 ms".
private func ms(_ value: Double) -> String { String(format: "%.2f ms", value) }

/// Offsets in milliseconds, summed up.
private struct OffsetFigures: CustomStringConvertible {
    /// The offsets themselves, in order.
    var offsets: [Double]
    var meanAbsolute: Double
    var medianAbsolute: Double
    var mean: Double
    var maximum: Double
    var count: Int { offsets.count }

    init(_ offsets: [Double]) {
        let magnitudes = offsets.map(abs).sorted()
        self.offsets = offsets
        meanAbsolute = magnitudes.reduce(0, +) / Double(max(1, offsets.count))
        medianAbsolute = magnitudes.isEmpty ? 0 : magnitudes[offsets.count / 2]
        mean = offsets.reduce(0, +) / Double(max(1, offsets.count))
        maximum = magnitudes.last ?? 0
    }

    var description: String {
        "\(count): mean |offset| \(ms(meanAbsolute)), median \(ms(medianAbsolute)), mean \(ms(mean)), max \(ms(maximum))"
    }
}

/// A follower's clock output against the master's, both read on one clock, over the ticks from `from` to `until`
/// (the first two beats of the song left out: the follower locks in one).
/// - `ticks`: tick by tick, by song index on each (from Start, or a Song Position and Continue): a tick slipped shows as
///   a whole period, 21 ms at 120 BPM.
/// - `beats`: where each instance put its beats. A tick is never sent early, but in the VM it is often sent late: the
///   emulated processors stall, and both instances send their ticks from a thread at their due time. So each
///   instance's timeline is read, per 2-beat window, from the earliest tenth of its ticks (their times less k
///   periods); the offset is the follower's less the master's.
/// - `masterJitter`: how far the master's own ticks strayed from its period, in milliseconds: the VM's share.
private struct ClockComparison: CustomStringConvertible {
    var ticks: OffsetFigures
    var beats: OffsetFigures
    var masterJitter: Double
    var description: String { "ticks \(ticks); beats \(beats); the master's own ticks off its period by up to \(ms(masterJitter))" }
}

private func clockComparison(master: [Int: Double], follower: [Int: Double], from: Double, until: Double) -> ClockComparison? {
    let period = 60.0 / 120 / 24
    let indices = master.keys.filter { k in
        guard k >= 48, let m = master[k], let f = follower[k] else { return false }
        return m >= from && f >= from && m < until && f < until
    }.sorted()
    guard let first = indices.first, let last = indices.last else { return nil }
    let ticks = indices.map { (follower[$0]! - master[$0]!) * 1000 }
    let line = { (k: Int) in master[first]! + Double(k - first) * period }
    var beats: [Double] = []
    for start in stride(from: first, through: last - 47, by: 48) {
        let window = start..<(start + 48)
        let earliest = { (times: [Int: Double]) -> Double? in
            let offsets = window.compactMap { k in times[k].map { $0 - line(k) } }.sorted()
            return offsets.count > 4 ? offsets[4] : nil
        }
        if let f = earliest(follower), let m = earliest(master) { beats.append((f - m) * 1000) }
    }
    let jitter = zip(indices.dropFirst(), indices).compactMap { k, before in
        k == before + 1 ? abs((master[k]! - master[before]!) - period) * 1000 : nil
    }.max() ?? 0
    return ClockComparison(ticks: OffsetFigures(ticks), beats: OffsetFigures(beats), masterJitter: jitter)
}

/// What the status page's `GET /status` answers.
private struct StatusPageReply: Decodable {
    var control: Bool
    var status: DaemonStatus
}

/// What `wav_levels.py` says of a capture.
private struct WAVLevels: Decodable {
    struct Window: Decodable {
        var start: Double
        var rms: Double
        var peak: Double
        var onsets: Int
    }

    var rate: Int
    var channels: Int
    var frames: Int
    var windows: [Window]
}

/// One of the simulated hosts of scripts/scenario-lab.sh.
private struct Host {
    let name: String

    /// Starts `command` on the host (in its network namespace, seeing its own /run and avahi-daemon).
    func start(_ command: [String]) throws -> TimedLines {
        try TimedLines("/bin/bash", [lab, "exec", name] + command)
    }

    /// Runs `command` on the host to its end; its exit status and what it printed.
    func run(_ command: [String], killingAfter seconds: Double = 120) throws -> (status: Int32, out: String) {
        let process = try start(command)
        let status = process.finish(killingAfter: seconds)
        return (status, process.text)
    }

    /// Runs `jambridge ARGUMENTS` on the host (the daemon there is found by its control socket in the host's /run).
    func jambridge(_ arguments: String...) throws -> (status: Int32, out: String) {
        try run([executable.path] + arguments)
    }

    /// `jambridge status --json` on the host, decoded; nil if it failed.
    func status() throws -> DaemonStatus? {
        let process = try start([executable.path, "status", "--json"])
        guard process.finish(killingAfter: 60) == 0 else { return nil }
        let json = process.lines.filter { !$0.error }.map(\.text).joined(separator: "\n")
        return try? JSONDecoder().decode(DaemonStatus.self, from: Data(json.utf8))
    }

    /// The control socket of the host's daemon (in the host's own /run), if one runs.
    var controlSocket: String? {
        let directory = "\(labDirectory)/\(name)/run/jambridge"
        return (try? FileManager.default.contentsOfDirectory(atPath: directory))?
            .first { $0.hasPrefix("control-") && $0.hasSuffix(".sock") }.map { "\(directory)/\($0)" }
    }

    /// The host's daemon's status read from its control socket by the test itself (the JSON `status --json` prints):
    /// for polling, which in the emulated VM would cost seconds of its processors per `jambridge status`.
    func peek() -> DaemonStatus? {
        guard let socket = controlSocket else { return nil }
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(socket.utf8.prefix(107))) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let request = Array(#"{"command": "status"}"#.utf8) + [10]
        guard connected == 0, write(fd, request, request.count) == request.count else { return nil }
        var reply: [UInt8] = [], buffer = [UInt8](repeating: 0, count: 65536)
        while case let count = read(fd, &buffer, buffer.count), count > 0 { reply += buffer[..<count] }
        return (try? JSONDecoder().decode(ControlReply.self, from: Data(reply)))?.status
    }

    /// Waits (at most `seconds`) until the host's status satisfies `holds` (polled from the control socket), then reads
    /// it as a user does, `jambridge status --json`; returns that, or the last status polled.
    func waitForStatus(seconds: Double = 60, _ holds: (DaemonStatus) -> Bool) throws -> DaemonStatus? {
        let deadline = monotonic() + seconds
        var last = peek()
        while monotonic() < deadline {
            if last.map(holds) ?? false, let status = try status(), holds(status) { return status }
            Thread.sleep(forTimeInterval: 0.5)
            last = peek()
        }
        return last
    }

    /// GETs `url` from the host with Python's urllib (a browser's request); the status code, the content type and the body.
    func fetch(_ url: String) throws -> (code: Int, type: String, body: String) {
        let result = try run(["/usr/bin/python3", "-c", """
            import sys, urllib.request
            with urllib.request.urlopen(sys.argv[1], timeout=30) as reply:
                print(reply.status, reply.headers.get("Content-Type"))
                sys.stdout.write(reply.read().decode())
            """, url])
        let head = result.out.prefix { $0 != "\n" }.split(separator: " ", maxSplits: 1)
        return (head.first.flatMap { Int($0) } ?? 0, head.count > 1 ? String(head[1]) : "", String(result.out.drop { $0 != "\n" }.dropFirst()))
    }

    /// Runs the phone's controller app (Tests/Peers/phone_controls.py) with `actions`, to its end.
    func controls(_ actions: String...) throws -> Int32 {
        try run([peersPython.path, peers.appendingPathComponent("phone_controls.py").path, "8000"] + actions).status
    }
}

/// A jambridge log line without its timestamp and label: "info peer 'Phone' joined ...".
private func logText(_ line: String) -> String {
    guard let match = line.firstMatch(of: /^\S+ (\w+) jambridge: \[\w+\] (.*)$/) else { return line }
    return match.1 == "info" ? String(match.2) : "\(match.1): \(match.2)"
}

/// Where the scenario leaves its logs, the devices' dumps and the drums' capture for a reader (under .build, which the
/// VM writes through to this machine).
private let artifacts = repositoryRoot.appendingPathComponent(".build/scenario")

@Suite(.serialized) struct ScenarioALSAIntegrationTests {
    @Test func aJamSessionInABox() throws {
        try #require(getuid() == 0, "the lab needs root to create network namespaces")
        try #require(FileManager.default.isExecutableFile(atPath: peersPython.path), "run scripts/install-deps.sh")
        let timeline = Timeline()
        let rack = Host(name: "rack"), phone = Host(name: "phone"), laptop = Host(name: "laptop")
        let dir = try temporaryDirectory()
        try? FileManager.default.removeItem(at: artifacts)
        try FileManager.default.createDirectory(at: artifacts, withIntermediateDirectories: true)
        var processes: [(name: String, process: TimedLines)] = []
        defer {
            for (name, process) in processes {
                if process.isRunning { process.signal(SIGKILL) }
                try? process.lines.map(\.text).joined(separator: "\n").write(to: artifacts.appendingPathComponent(name), atomically: true, encoding: .utf8)
            }
            try? FileManager.default.copyItem(at: dir.appendingPathComponent("drums.wav"), to: artifacts.appendingPathComponent("drums.wav"))
            _ = try? run("/bin/bash", [lab, "down"])
            timeline.write("\nThe scenario's logs, the devices' dumps and the drums' capture: \(artifacts.path)")
        }

        // ---------------------------------------------------------------------------------------------------------
        timeline.step("1. The LAN comes up: rack, phone and laptop, each with its own avahi-daemon; the route files are checked")
        let up = try run("/bin/bash", [lab, "up"])
        try #require(up.status == 0, "scripts/scenario-lab.sh up failed")
        for line in try run("/bin/bash", [lab, "status"]).out.split(separator: "\n") where line.contains("netem") {
            timeline.saw("lan", line.trimmingCharacters(in: .whitespaces))
        }
        let routes = dir.appendingPathComponent("rack.yaml")
        try FileManager.default.copyItem(at: scenarioFiles.appendingPathComponent("rack.yaml"), to: routes)
        for file in ["rack.yaml", "rack-reloaded.yaml", "phone.yaml"] {
            let checked = try jambridge(["check", scenarioFiles.appendingPathComponent(file).path], killingAfter: 60)
            timeline.saw("check", checked.out.trimmingCharacters(in: .newlines).replacingOccurrences(of: repositoryRoot.path + "/", with: ""))
            try #require(checked.status == 0, "\(checked.err)")
        }

        // The drum machine and the synth are read for the whole scenario, with the kernel's timestamps.
        let drumMachine = try DeviceReader("drum machine", device: 1), synth = try DeviceReader("synth", device: 3)
        processes += [("drum-machine.txt", drumMachine.process), ("synth.txt", synth.process)]
        Thread.sleep(forTimeInterval: 1) // the readers have the devices open before anything plays
        // The laptop is a machine of its own: here it shares the VM's two processors with everything else, and pymidi, in
        // Python under emulation, must keep up with the rack's clock (48 packets a second and as many journal-only ones,
        // as it sends no receiver feedback) or its answers to clock sync come too late and the rack drops it. nice -10
        // gives it the share its own machine would.
        let laptopProcess = try laptop.start(["nice", "-n", "-10", peersPython.path, peers.appendingPathComponent("laptop.py").path, "5004", "900"])
        let announcement = try laptop.start(["avahi-publish", "-s", "Laptop", "_apple-midi._udp", "5004"])
        let phoneDaemon = try phone.start([executable.path, "run", "--stop-after", "900", scenarioFiles.appendingPathComponent("phone.yaml").path])
        let rackDaemon = try rack.start([executable.path, "run", "--stop-after", "900", routes.path])
        processes += [("laptop.jsonl", laptopProcess), ("avahi-publish.txt", announcement), ("phone.log", phoneDaemon), ("rack.log", rackDaemon)]
        let laptopLog = LaptopLog(laptopProcess)

        // What each host saw since the last step: the daemons' logs, the laptop's and the devices' MIDI, summed up.
        var shown: [String: Double] = [:]
        func showWhatEachHostSaw() {
            let until = monotonic()
            for (name, daemon) in [("rack", rackDaemon), ("phone", phoneDaemon)] {
                for line in daemon.lines where line.time >= shown[name, default: 0] && line.time < until {
                    timeline.saw(name, logText(line.text), at: line.time)
                }
                shown[name] = until
            }
            let events = laptopLog.events(after: shown["laptop", default: 0]).filter { $0.t < until }
            for line in laptopProcess.lines where line.error && line.time >= shown["laptop", default: 0] && line.time < until {
                timeline.saw("laptop", "(stderr) \(line.text)", at: line.time)
            }
            shown["laptop"] = until
            for event in events where ["connected", "disconnected", "error"].contains(event.event)
                || ((event.event.hasPrefix("note") || event.event.hasPrefix("repaired")) && event.channel != 9) {
                let what = switch event.event {
                case "connected", "disconnected": "\(event.event): \(event.name ?? "?")"
                case "repaired": "note off \(event.key ?? -1) (ch \((event.channel ?? 0) + 1)) from the journal, \(event.lost ?? 0) packet(s) lost"
                case "repaired_on": "note on  \(event.key ?? -1) (ch \((event.channel ?? 0) + 1)) velocity \(event.velocity ?? -1) from the journal, \(event.lost ?? 0) packet(s) lost"
                case "error": "ERROR \(event.error ?? "")"
                default: "\(event.event == "note_on" ? "note on " : "note off") \(event.key ?? -1) (ch \((event.channel ?? 0) + 1)) velocity \(event.velocity ?? -1)"
                }
                timeline.saw("laptop", what, at: event.t)
            }
            let drums = events.filter { $0.event == "note_on" && $0.channel == 9 }.count
            let drumRepairs = events.filter { $0.event.hasPrefix("repaired") && $0.channel == 9 }.count
            let totals = events.filter { $0.event == "cc" && $0.controller == 7 }.compactMap(\.value)
            if drums > 0 || !totals.isEmpty {
                timeline.saw("laptop", "\(drums) drum note-ons (ch 10)" + (drumRepairs > 0 ? ", \(drumRepairs) drum notes from the journal" : "")
                             + (totals.isEmpty ? "" : "; total activity (CC 7) \(totals.min()!)-\(totals.max()!), last \(totals.last!)"))
            }
            for reader in [drumMachine, synth] {
                let heard = reader.heard(after: shown[reader.name, default: 0], before: until)
                shown[reader.name] = until
                var ticks = 0, drumNotes = 0
                for item in heard {
                    switch item.message {
                    case .timingClock: ticks += 1
                    case .start, .stop, .continue, .songPosition:
                        timeline.saw(reader.name, "\(item.message)" + (ticks > 0 ? " (after \(ticks) clock ticks)" : ""), at: item.time)
                        ticks = 0
                    case _ where reader === synth && item.message.channel?.value == 9 && noteNumber(item.message) != nil:
                        if !item.message.isNoteOff { drumNotes += 1 }
                    default: timeline.saw(reader.name, "\(item.message)", at: item.time)
                    }
                }
                if ticks > 0 || drumNotes > 0 {
                    timeline.saw(reader.name, [ticks > 0 ? "\(ticks) clock ticks" : nil, drumNotes > 0 ? "\(drumNotes) drum note-ons (ch 10)" : nil]
                        .compactMap { $0 }.joined(separator: ", "))
                }
            }
        }

        // ---------------------------------------------------------------------------------------------------------
        timeline.step("2. Rack finds Phone and Laptop on Bonjour and invites them; each host shows the others")
        let phoneJoined = rackDaemon.waitForLine(seconds: 180) { $0.contains("peer 'Phone' joined") }
        let laptopJoined = rackDaemon.waitForLine(seconds: 60) { $0.contains("peer 'Laptop' joined") }
        showWhatEachHostSaw()
        timeline.check(1, phoneJoined != nil, "Rack found Phone on Bonjour and Phone joined", rackDaemon.text)
        timeline.check(1, laptopJoined != nil, "Rack found Laptop on Bonjour and Laptop joined", rackDaemon.text)
        try #require(phoneJoined != nil && laptopJoined != nil, "nothing else can work without the session")
        let rackStatus = try #require(try rack.waitForStatus {
            $0.session?.peers.count == 2 && $0.session!.peers.allSatisfy { $0.roundTripMs != nil }
                && $0.alsa?.ports.values.allSatisfy { !$0.connections.isEmpty } == true
        })
        let phoneStatus = try #require(try phone.waitForStatus {
            $0.session?.peers.count == 1 && $0.alsa?.ports["synth"]?.connections.isEmpty == false
        })
        let rackPID = rackStatus.pid, phonePID = phoneStatus.pid
        let rackSession = try #require(rackStatus.session), phoneSession = try #require(phoneStatus.session)
        for peer in rackSession.peers {
            timeline.saw("rack", "$ jambridge status: peer '\(peer.name)' at \(peer.address), round trip \(String(format: "%.1f", peer.roundTripMs ?? -1)) ms")
        }
        timeline.saw("phone", "$ jambridge status: peers \(phoneSession.peers.map { "'\($0.name)' at \($0.address)" }.joined(separator: ", "))")
        timeline.check(1, rackSession.name == "Rack" && rackSession.peers.map(\.name).sorted() == ["Laptop", "Phone"],
                       "rack's status shows Phone and Laptop", "\(rackSession)")
        timeline.check(1, rackSession.peers.first { $0.name == "Phone" }?.address == "10.78.0.2:5004"
                           && rackSession.peers.first { $0.name == "Laptop" }?.address == "10.78.0.3:5004"
                           && rackSession.peers.allSatisfy(\.weInvited), "rack invited them at their LAN addresses", "\(rackSession.peers)")
        timeline.check(1, phoneSession.peers.map(\.name) == ["Rack"] && phoneSession.peers[0].ssrc == rackSession.ssrc,
                       "phone's status shows Rack (by its SSRC)", "\(phoneSession)")
        timeline.check(1, rackStatus.alsa?.ports["keyboard"]?.connections.isEmpty == false
                           && rackStatus.alsa?.ports["drum-machine"]?.connections.isEmpty == false,
                       "rack's keyboard and drum machine are connected", "\(String(describing: rackStatus.alsa))")
        let phoneBrowse = try phone.jambridge("peers", "--browse", "3")
        for line in phoneBrowse.out.split(separator: "\n") { timeline.saw("phone", "$ jambridge peers: \(line)") }
        timeline.check(1, phoneBrowse.out.contains("\"Rack\"\track.local\t10.78.0.1:5004")
                           && phoneBrowse.out.contains("\"Laptop\"\tlaptop.local\t10.78.0.3:5004"),
                       "phone's `jambridge peers` sees Rack and Laptop on Bonjour", phoneBrowse.out)
        let laptopBrowse = try laptop.run(["avahi-browse", "-rpt", "_apple-midi._udp"])
        let laptopSees = laptopBrowse.out.split(separator: "\n").filter { $0.hasPrefix("=") }.map { $0.split(separator: ";") }
            .filter { $0.count > 8 }.map { "\($0[3]) at \($0[7]):\($0[8])" }
        timeline.saw("laptop", "$ avahi-browse: \(laptopSees.joined(separator: ", "))")
        timeline.check(1, Set(laptopSees).isSuperset(of: ["Rack at 10.78.0.1:5004", "Phone at 10.78.0.2:5004"]),
                       "laptop sees Rack and Phone on Bonjour", laptopBrowse.out)
        timeline.check(1, laptopLog.events().contains { $0.event == "connected" && $0.name == "Rack" }, "laptop (pymidi) accepted Rack")
        // The rack's status page, read from the laptop as its browser would.
        let page = try laptop.fetch("http://10.78.0.1:8080/")
        let pageStatus = try laptop.fetch("http://10.78.0.1:8080/status")
        let pageReply = try? JSONDecoder().decode(StatusPageReply.self, from: Data(pageStatus.body.utf8))
        timeline.saw("laptop", "GET http://10.78.0.1:8080/: \(page.code) \(page.type), \(page.body.utf8.count) bytes; /status: \(pageStatus.code), "
                     + "peers \(pageReply?.status.session?.peers.map(\.name).sorted().joined(separator: ", ") ?? "?")")
        timeline.check(1, rackStatus.http?.listen == "10.78.0.1:8080" && rackStatus.http?.control == false,
                       "rack's status shows its status page on the LAN, without controls", "\(String(describing: rackStatus.http))")
        timeline.check(1, page.code == 200 && page.type.hasPrefix("text/html") && pageStatus.code == 200 && pageReply?.control == false
                           && pageReply?.status.session?.peers.map(\.name).sorted() == ["Laptop", "Phone"],
                       "the laptop's browser reads the page and its /status: the same peers", "\(page.code) \(page.type) \(pageStatus)")

        // ---------------------------------------------------------------------------------------------------------
        timeline.step("3. The keyboard plays (the route: an octave up, half the velocity, channel 2); the phone's fader moves")
        let keysPlayed = monotonic()
        try play("90 3C 64")
        Thread.sleep(forTimeInterval: 0.3)
        try play("80 3C 00 90 43 50")
        Thread.sleep(forTimeInterval: 0.3)
        try play("80 43 00")
        #expect(try phone.controls("/1/fader1=1.0") == 0)
        let expected = ["note_on 72 50", "note_off 72", "note_on 79 40", "note_off 79"]
        // What the laptop heard on channel 2, as notes: a repair from the journal (after a packet lost) as the note it gave.
        let describe = { (events: [LaptopEvent]) in
            events.filter { ($0.event.hasPrefix("note") || $0.event.hasPrefix("repaired")) && $0.channel == 1 }.map { event in
                ["note_on", "repaired_on"].contains(event.event) ? "note_on \(event.key ?? -1) \(event.velocity ?? -1)" : "note_off \(event.key ?? -1)"
            }
        }
        let keyboardAtSynth = { (after: Double) in synth.heard(after: after).map(\.message).filter { $0.channel?.value == 1 }.compactMap(noteWords) }
        _ = laptopLog.wait(after: keysPlayed) { describe($0).count >= 4 }
        _ = synth.wait(after: keysPlayed) { _ in keyboardAtSynth(keysPlayed).count >= 4 }
        let faderMoved = MIDIMessage.controlChange(channel: UInt4(masking: 0), controller: UInt7(masking: 74), value: UInt7(masking: 127))
        let faderAtRack = drumMachine.wait(after: keysPlayed) { $0.contains { $0.message == faderMoved } }
        showWhatEachHostSaw()
        timeline.check(2, describe(laptopLog.events(after: keysPlayed)) == expected, "laptop heard the keyboard through the route: 72 and 79 at velocity 50 and 40 on channel 2",
                       "\(describe(laptopLog.events(after: keysPlayed)))")
        timeline.check(2, keyboardAtSynth(keysPlayed) == expected, "phone's synth heard the same", "\(keyboardAtSynth(keysPlayed))")
        timeline.check(2, faderAtRack, "the phone's fader 1 (CC 21 from the phone) reached the rack's drum machine as CC 74 (127)",
                       "\(drumMachine.heard(after: keysPlayed).filter { $0.message.channel != nil }.map(\.message))")

        // ---------------------------------------------------------------------------------------------------------
        timeline.step("4. The phone starts the rhythm (its Start button) and leads; the rack's start is refused; the phone stops, the rack starts and leads")
        // Each leads for a quiet while (nothing else runs then, no command, no status) in which the clocks are compared:
        // the VM's emulated processors already make every process late now and then.
        let quiet = 16.0
        let phoneStarted = monotonic()
        #expect(try phone.controls("/jambridge/start") == 0)
        let phoneLeads = try phone.waitForStatus { $0.jam?.role == "master" }
        let rackFollowsPhone = try rack.waitForStatus { $0.jam?.role == "follower" && $0.jam?.master == "Phone" && $0.jam?.tempo != nil }
        let phoneQuiet = monotonic()
        Thread.sleep(forTimeInterval: quiet)
        let refused = try rack.jambridge("start")
        timeline.saw("rack", "$ jambridge start: exit status \(refused.status): \(refused.out.trimmingCharacters(in: .newlines))")
        #expect(try phone.controls("/jambridge/stop") == 0)
        let rackIdle = try rack.waitForStatus { $0.jam?.role == "idle" }
        Thread.sleep(forTimeInterval: 1) // a start right after the master's stop would count as pressed with it
        let rackStarted = monotonic()
        let started = try rack.jambridge("start")
        timeline.saw("rack", "$ jambridge start: exit status \(started.status): \(started.out.trimmingCharacters(in: .newlines))")
        let phoneFollowsRack = try phone.waitForStatus { $0.jam?.role == "follower" && $0.jam?.master == "Rack" && $0.jam?.tempo != nil }
        let rackQuiet = monotonic()
        Thread.sleep(forTimeInterval: quiet)
        let rackQuietEnd = monotonic()
        showWhatEachHostSaw()
        timeline.check(3, phoneLeads?.jam?.master == "Phone", "the phone leads", "\(String(describing: phoneLeads?.jam))")
        timeline.check(3, rackFollowsPhone?.jam?.master == "Phone" && rackFollowsPhone?.jam?.masterSSRC == phoneSession.ssrc,
                       "the rack follows the phone", "\(String(describing: rackFollowsPhone?.jam))")
        timeline.check(3, refused.status == 1 && refused.out.contains("refused: Phone"), "the rack's start was refused while the phone led",
                       refused.out)
        timeline.check(3, rackIdle?.jam?.role == "idle", "the phone's stop ended the rhythm on the rack", "\(String(describing: rackIdle?.jam))")
        timeline.check(3, started.status == 0 && phoneFollowsRack?.jam?.master == "Rack", "then the rack started and leads, the phone follows",
                       "\(started.out) \(String(describing: phoneFollowsRack?.jam))")

        // ---------------------------------------------------------------------------------------------------------
        timeline.step("5. The phone is shaken: its activity, the total (CC 7) the rack sends, the drums' level and their sound rise")
        // arecord captures the drums from before the shaking until seven bars after their level rose (stopped by SIGINT,
        // it finishes the WAV file); the shaking goes on until then. How long that takes depends on the VM's speed.
        let capture = dir.appendingPathComponent("drums.wav")
        let calmStatus = try rack.status()
        let recording = try TimedLines("/usr/bin/arecord", ["-D", "hw:Loopback,1", "-f", "FLOAT_LE", "-r", "48000", "-c", "2", capture.path])
        processes.append(("arecord.txt", recording))
        let recordingStarted = monotonic()
        Thread.sleep(forTimeInterval: 8)
        let shakeStarted = monotonic()
        let shaking = try phone.start([peersPython.path, peers.appendingPathComponent("phone_controls.py").path, "8000", "pid", "shake:300"])
        processes.append(("shaking.txt", shaking))
        // The statuses while it shakes: the highest each reached, until everything rose (four minutes at most).
        var phoneLevel = 0, phoneHeard = 0, rackTotal = 0, rackHeardPhone = 0, drumLevel = calmStatus?.drums?.level ?? 0
        var drumsRose: Double?, polls = 0
        while monotonic() < shakeStarted + 240, phoneLevel == 0 || phoneHeard == 0 || rackHeardPhone == 0 || drumsRose == nil {
            Thread.sleep(forTimeInterval: 1)
            polls += 1
            if let status = rack.peek() {
                rackTotal = max(rackTotal, status.jam?.total ?? 0)
                rackHeardPhone = max(rackHeardPhone, status.jam?.players.first { $0.name == "Phone" }?.level ?? 0)
                drumLevel = max(drumLevel, status.drums?.level ?? 0)
                if drumLevel >= 3, drumsRose == nil { drumsRose = monotonic() }
            }
            if phoneLevel == 0 || phoneHeard == 0, let jam = phone.peek()?.jam {
                phoneLevel = max(phoneLevel, jam.players.first { $0.name == "controls" }?.level ?? 0)
                if jam.totalFromMaster { phoneHeard = max(phoneHeard, jam.total) }
            }
        }
        // The page, read until it shows what the status showed: a busy VM may serve it a while behind.
        var shakenPage: StatusPageReply?
        let pageDeadline = monotonic() + 60
        repeat {
            shakenPage = try? JSONDecoder().decode(StatusPageReply.self, from: Data(try laptop.fetch("http://10.78.0.1:8080/status").body.utf8))
            if (shakenPage?.status.jam?.total ?? 0) > 0, (shakenPage?.status.drums?.level ?? 0) > calmStatus?.drums?.level ?? 0 { break }
            Thread.sleep(forTimeInterval: 1)
        } while monotonic() < pageDeadline
        Thread.sleep(forTimeInterval: max(0, (drumsRose ?? monotonic()) + 14 - monotonic()))
        let shakenUntil = monotonic()
        func totals(after: Double) -> [LaptopEvent] { laptopLog.events(after: after).filter { $0.event == "cc" && $0.controller == 7 && $0.channel == 0 } }
        recording.signal(SIGINT)
        recording.finish(killingAfter: 60)
        if let pid = shaking.lines.first.flatMap({ Int32($0.text) }) { kill(pid, SIGTERM) }
        shaking.finish(killingAfter: 30)
        showWhatEachHostSaw()
        timeline.saw("phone", "status (while shaken): its level up to \(phoneLevel), the master's total heard up to \(phoneHeard)")
        timeline.saw("rack", "status (while shaken): Phone's level up to \(rackHeardPhone), total up to \(rackTotal), drums' level up to \(drumLevel)"
                     + (drumsRose.map { String(format: " (3 or more %.1f s into the shaking, status read %d times)", $0 - shakeStarted, polls) } ?? ""))
        if let shakerStarted = shaking.lines.first?.time, let firstTotal = totals(after: shakeStarted).first(where: { $0.value ?? 0 > 0 }) {
            timeline.saw("phone", String(format: "the controller app began shaking %.1f s after it was launched; the laptop heard a total above 0 %.1f s after that",
                                         shakerStarted - shakeStarted, firstTotal.t - shakerStarted))
        }
        timeline.check(4, phoneLevel > 0, "the phone's activity rose (its level up to \(phoneLevel))")
        timeline.check(4, rackHeardPhone > 0 && rackTotal > 0, "the rack (master) counted it in its total (up to \(rackTotal))")
        timeline.check(4, phoneHeard > 0, "the phone heard the master's total rise (up to \(phoneHeard))")
        timeline.saw("laptop", "GET http://10.78.0.1:8080/status (while shaken): total \(shakenPage?.status.jam?.total ?? -1), "
                     + "Phone \(shakenPage?.status.jam?.players.first { $0.name == "Phone" }?.level ?? -1), drums' level \(shakenPage?.status.drums?.level ?? -1)")
        timeline.check(4, (shakenPage?.status.jam?.total ?? 0) > 0 && (shakenPage?.status.drums?.level ?? 0) > calmStatus?.drums?.level ?? 0,
                       "the status page shows the total and the drums up", "\(String(describing: shakenPage?.status.jam))")
        let heardTotals = totals(after: 0)
        let calmTotal = heardTotals.filter { $0.t < shakeStarted }.last?.value ?? 0
        let shakenTotal = heardTotals.filter { $0.t >= shakeStarted }.compactMap(\.value).max() ?? 0
        timeline.check(4, shakenTotal > calmTotal, "the laptop heard the total (CC 7) rise from \(calmTotal) to \(shakenTotal)", "\(heardTotals.map(\.value))")
        let calmLevel = calmStatus?.drums?.level ?? 0
        timeline.check(4, drumLevel >= 3 && drumLevel > calmLevel, "the drums' level rose from \(calmLevel) to \(drumLevel) (of \(calmStatus?.drums?.levels ?? 0))")
        let levels = try run("/usr/bin/python3", [peers.appendingPathComponent("wav_levels.py").path, capture.path, "2"])
        let measured = try JSONDecoder().decode(WAVLevels.self, from: Data(levels.out.utf8))
        // The capture began at about `recordingStarted`: its bars (2 s) before the shaking are the calm ones; those from a
        // bar after the drums' level was seen up (the level changes on bar lines) to the end, the shaken ones.
        let calm = measured.windows.filter { $0.start >= 1 && $0.start + 2 <= shakeStarted - recordingStarted }
        let busy = measured.windows.filter { $0.start >= (drumsRose ?? .infinity) - recordingStarted + 2 && $0.start + 2 <= shakenUntil - recordingStarted - 0.5 }
        let mean = { (windows: [WAVLevels.Window], value: (WAVLevels.Window) -> Double) in windows.map(value).reduce(0, +) / Double(max(1, windows.count)) }
        let (calmRMS, busyRMS) = (mean(calm) { $0.rms }, mean(busy) { $0.rms })
        let (calmOnsets, busyOnsets) = (mean(calm) { Double($0.onsets) }, mean(busy) { Double($0.onsets) })
        timeline.saw("rack audio", String(format: "arecord captured %.1f s: a bar calm RMS %.4f, %.1f onsets; a bar shaken RMS %.4f, %.1f onsets",
                                          Double(measured.frames) / Double(max(1, measured.rate)), calmRMS, calmOnsets, busyRMS, busyOnsets))
        timeline.check(4, calm.count >= 2 && busy.count >= 3 && calmRMS > 0 && busyRMS > calmRMS * 1.2,
                       "the drums got louder in the audio captured from snd-aloop", "\(measured.windows.map { String(format: "%.0f s: %.4f", $0.start, $0.rms) })")

        // ---------------------------------------------------------------------------------------------------------
        timeline.step("6. Rack's route file changes (the keyboard a fifth up, not an octave) and is reloaded while a key is held")
        let beforeReload = try #require(try rack.status()), phoneBeforeReload = try #require(try phone.status())
        let held = monotonic()
        try play("90 40 64") // E4, held through the reload: 76 went out
        let heldAtLaptop = laptopLog.wait(after: held) { describe($0).contains("note_on 76 50") }
        try FileManager.default.removeItem(at: routes)
        try FileManager.default.copyItem(at: scenarioFiles.appendingPathComponent("rack-reloaded.yaml"), to: routes)
        let reloading = monotonic()
        let reloaded = try rack.jambridge("reload")
        timeline.saw("rack", "$ jambridge reload: exit status \(reloaded.status): \(reloaded.out.trimmingCharacters(in: .newlines))")
        Thread.sleep(forTimeInterval: 2)
        let cutEarly = describe(laptopLog.events(after: reloading)).contains("note_off 76")
            || synth.heard(after: reloading).contains { $0.message.isNoteOff && noteNumber($0.message) == 76 }
        let released = monotonic()
        try play("80 40 00 90 40 64")
        Thread.sleep(forTimeInterval: 0.3)
        try play("80 40 00")
        let afterRelease = { describe(laptopLog.events(after: released)) }
        _ = laptopLog.wait(after: released) { _ in afterRelease().count >= 3 }
        _ = synth.wait(after: released) { _ in keyboardAtSynth(released).count >= 3 }
        let afterReload = try #require(try rack.status()), phoneAfterReload = try #require(try phone.status())
        showWhatEachHostSaw()
        timeline.check(6, reloaded.status == 0 && reloaded.out.contains("reloaded"), "the reload was accepted", reloaded.out)
        timeline.check(6, heldAtLaptop && !cutEarly, "the note held through the reload sounded on: no note-off before the key was released",
                       "\(describe(laptopLog.events(after: held)))")
        timeline.check(6, afterRelease() == ["note_off 76", "note_on 71 50", "note_off 71"] && keyboardAtSynth(released) == afterRelease(),
                       "its release went where its note-on went (76), at the laptop and the phone's synth; the next note took the new route (71)",
                       "laptop \(afterRelease()), synth \(keyboardAtSynth(released))")
        timeline.check(6, afterReload.pid == rackPID && afterReload.session?.ssrc == beforeReload.session?.ssrc
                           && afterReload.session?.peers.map(\.ssrc).sorted() == beforeReload.session?.peers.map(\.ssrc).sorted()
                           && phoneAfterReload.session?.peers.map(\.ssrc) == phoneBeforeReload.session?.peers.map(\.ssrc),
                       "nobody was disconnected: the same SSRCs on the rack and the phone",
                       "\(String(describing: afterReload.session)) \(String(describing: phoneAfterReload.session))")
        timeline.check(6, laptopLog.events(after: reloading).allSatisfy { !["connected", "disconnected"].contains($0.event) }
                           && !rackDaemon.lines.contains { $0.time >= reloading && ($0.text.contains(" left") || $0.text.contains(" joined")) },
                       "no peer left or joined again", rackDaemon.text)

        // ---------------------------------------------------------------------------------------------------------
        timeline.step("7. The phone holds a pad, then its cable is pulled: the rack notices, releases the pad, plays on; the cable back, the phone rejoins")
        let padPressed = monotonic()
        #expect(try phone.controls("/1/push1=1.0") == 0) // note 36 on channel 10, to the rack's drum machine
        let isPad = { (message: MIDIMessage) in message.channel?.value == 9 && noteNumber(message) == 36 }
        let padAtRack = drumMachine.wait(after: padPressed) { $0.contains { isPad($0.message) && !$0.message.isNoteOff } }
        let unplugged = monotonic()
        #expect(try run("/bin/bash", [lab, "unplug", "phone"]).status == 0)
        timeline.saw("lan", "phone's cable pulled", at: unplugged)
        let timeout = 15.0 // rack.yaml's session timeout
        let noticed = rackDaemon.waitForLine(after: unplugged, seconds: timeout) { $0.contains("peer 'Phone' left") }
        let padReleased = drumMachine.wait(after: unplugged, seconds: 10) { $0.contains { isPad($0.message) && $0.message.isNoteOff } }
        Thread.sleep(forTimeInterval: 2)
        let alone = try rack.status()
        let plugged = monotonic()
        #expect(try run("/bin/bash", [lab, "plug", "phone"]).status == 0)
        timeline.saw("lan", "phone's cable back", at: plugged)
        // A new session (the phone takes the rack's invitation), or the old one if the phone's packets come first.
        let rejoined = rackDaemon.waitForLine(after: plugged, seconds: 60) {
            $0.contains("peer 'Phone' joined") || $0.contains("peer 'Phone' is back")
        }
        let phoneBack = try phone.waitForStatus { $0.session?.peers.map(\.name) == ["Rack"] }
        let rackBack = try rack.waitForStatus { $0.session?.peers.count == 2 }
        #expect(try phone.controls("/1/push1=0.0") == 0)
        Thread.sleep(forTimeInterval: 2)
        let phoneJamBack = try phone.waitForStatus { $0.jam?.master == "Rack" }
        showWhatEachHostSaw()
        timeline.check(7, padAtRack, "the phone's pad (note 36, ch 10) reached the rack's drum machine")
        timeline.check(7, noticed != nil, "the rack noticed the phone gone within its session timeout (\(Int(timeout)) s)"
                       + (noticed.map { String(format: ": after %.1f s", $0.time - unplugged) } ?? ""), rackDaemon.text)
        timeline.check(7, padReleased, "the rack released the pad the phone held",
                       "\(drumMachine.heard(after: unplugged).filter { $0.message.channel != nil })")
        let alongAlone = drumMachine.heard(after: unplugged, before: plugged)
        let ticksAlone = alongAlone.filter { $0.message == .timingClock }.count
        timeline.check(7, alone?.jam?.role == "master" && alone?.drums?.playing == true && alone?.session?.peers.map(\.name) == ["Laptop"]
                           && ticksAlone > 0 && !alongAlone.contains { $0.message == .stop },
                       "the rack played on without the phone (still master, drums playing, \(ticksAlone) clock ticks to its drum machine, no Stop)",
                       "\(String(describing: alone?.jam)) \(String(describing: alone?.drums))")
        timeline.check(7, rejoined != nil && phoneBack?.pid == phonePID && rackBack?.session?.peers.map(\.name).sorted() == ["Laptop", "Phone"],
                       "the phone rejoined without a restart (the same process)"
                       + (rejoined.map { String(format: ", %.1f s after its cable was back", $0.time - plugged) } ?? ""),
                       "\(String(describing: phoneBack?.session)) \(rackDaemon.text)")
        timeline.saw("phone", "status: jam \(phoneJamBack?.jam.map { "\($0.role), clock master \($0.master ?? "nobody")" } ?? "?")")
        // Its follower lost the rack's clock while the cable was out (its song stopped); back, it is a late joiner.
        let synthBack = synth.heard(after: plugged).map(\.message).filter { $0 != .timingClock && $0.channel == nil }
        timeline.check(7, phoneJamBack?.jam?.role == "follower" && synthBack.first.map { if case .songPosition = $0 { true } else { false } } == true
                           && synthBack.dropFirst().first == .continue && !synthBack.contains(.start),
                       "back, the phone follows the rack's running song: its synth got Song Position and Continue, no Start",
                       "\(String(describing: phoneJamBack?.jam)) \(synthBack)")

        // ---------------------------------------------------------------------------------------------------------
        timeline.step("8. The rack stops the rhythm: no note is left on anywhere")
        let stopped = try rack.jambridge("stop")
        timeline.saw("rack", "$ jambridge stop: exit status \(stopped.status): \(stopped.out.trimmingCharacters(in: .newlines))")
        Thread.sleep(forTimeInterval: 4) // guard packets repair a lost last note-off within about a second
        let laptopLeft = laptopLog.notesLeftOn
        let synthLeft = keysLeftOn(synth.heard().map(\.message)), drumMachineLeft = keysLeftOn(drumMachine.heard().map(\.message))
        let rackCounters = rack.peek()?.session?.counters ?? [:], phoneCounters = phone.peek()?.session?.counters ?? [:]
        showWhatEachHostSaw()
        let losses = { (counters: [String: Int]) in
            counters.filter { counter in ["lost", "repair", "late", "guard"].contains { counter.key.lowercased().contains($0) } }
                .sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        }
        timeline.saw("rack", "session counters: \(losses(rackCounters))")
        timeline.saw("phone", "session counters: \(losses(phoneCounters))")
        timeline.saw("laptop", "\(laptopLog.events().filter { $0.event == "note_on" }.count) note-ons heard; from the journals after lost packets "
                     + "\(laptopLog.events().filter { $0.event == "repaired" }.count) note-offs and \(laptopLog.events().filter { $0.event == "repaired_on" }.count) note-ons")
        timeline.check(5, stopped.status == 0, "the rack stopped the rhythm", stopped.out)
        timeline.check(5, laptopLeft.isEmpty, "nothing left on at the laptop", "\(laptopLeft)")
        timeline.check(5, synthLeft.isEmpty, "nothing left on at the phone's synth", "\(synthLeft)")
        timeline.check(5, drumMachineLeft.isEmpty, "nothing left on at the rack's drum machine", "\(drumMachineLeft)")
        timeline.check(5, !laptopLog.events().contains { $0.event == "error" }, "the laptop read every datagram",
                       "\(laptopLog.events().filter { $0.event == "error" }.map { $0.error ?? "" })")

        // The daemons stop (as Ctrl-C stops them), then the laptop and the readers.
        kill(rackPID, SIGINT)
        kill(phonePID, SIGINT)
        let rackExit = rackDaemon.finish(killingAfter: 60), phoneExit = phoneDaemon.finish(killingAfter: 60)
        timeline.saw("rack", "jambridge exited with status \(rackExit)", at: monotonic())
        timeline.saw("phone", "jambridge exited with status \(phoneExit)", at: monotonic())
        if let laptopPID = laptopLog.events().first(where: { $0.event == "listening" })?.pid { kill(laptopPID, SIGTERM) }
        laptopProcess.finish(killingAfter: 30)
        Thread.sleep(forTimeInterval: 1)
        // amidi flushes every read as it prints it, and notices SIGINT only when a byte comes: nothing more will.
        for reader in [drumMachine, synth] { reader.process.signal(SIGINT) }
        for reader in [drumMachine, synth] { reader.process.finish(killingAfter: 1) }
        showWhatEachHostSaw()
        timeline.check(5, rackExit == 0 && phoneExit == 0, "both daemons stopped cleanly", "rack \(rackExit), phone \(phoneExit)")
        let finalHeld = laptopLog.events().last { $0.event == "held" }?.notes
        timeline.check(5, finalHeld == [], "nothing left on at the laptop after the goodbyes", "\(String(describing: finalHeld))")
        timeline.check(5, keysLeftOn(synth.heard().map(\.message)).isEmpty && keysLeftOn(drumMachine.heard().map(\.message)).isEmpty,
                       "nor at the synth or the drum machine")

        // ---------------------------------------------------------------------------------------------------------
        timeline.step("9. The beats of Rack and Phone, from their clock outputs on one clock (amidi's kernel timestamps)")
        let rackRuns = clockRuns(drumMachine.heard()), phoneRuns = clockRuns(synth.heard())
        func songTicks(_ runs: [(start: Double, ticks: [Int: Double], stopped: Double?)], from time: Double) -> [Int: Double] {
            runs.first { $0.start >= time - 0.5 }?.ticks ?? [:]
        }
        // The phone leading, its synth has its generator's ticks and the rack's drum machine the rack's follower's; then
        // the other way round. Compared tick by tick (by song index on each: from Start, or a Song Position and Continue), in the quiet whiles.
        let comparisons = [
            ("phone leads", "the rack's ticks - the phone's", songTicks(phoneRuns, from: phoneStarted), songTicks(rackRuns, from: phoneStarted), phoneQuiet, phoneQuiet + quiet),
            ("rack leads", "the phone's ticks - the rack's", songTicks(rackRuns, from: rackStarted), songTicks(phoneRuns, from: rackStarted), rackQuiet, rackQuietEnd),
        ]
        for (who, difference, master, follower, from, until) in comparisons {
            let sync = clockComparison(master: master, follower: follower, from: from, until: until)
            guard let sync else {
                timeline.check(8, false, "\(who): the clocks ran side by side", "no ticks to compare")
                continue
            }
            timeline.saw(who, "\(difference), \(sync.ticks.count) ticks: median |offset| \(ms(sync.ticks.medianAbsolute)), mean \(ms(sync.ticks.mean)), "
                         + "max \(ms(sync.ticks.maximum)); the master's own ticks off its period by up to \(ms(sync.masterJitter))")
            timeline.saw(who, "beat by beat (each instance's beats from the earliest tenth of its ticks in 2-beat windows, \(sync.beats.count) windows): "
                         + "mean |offset| \(ms(sync.beats.meanAbsolute)), mean \(ms(sync.beats.mean)), max \(ms(sync.beats.maximum))")
            timeline.check(8, sync.ticks.count >= 400, "\(who): the clocks ran side by side (\(sync.ticks.count) ticks compared)")
            timeline.check(8, sync.beats.meanAbsolute < 2 && sync.beats.maximum < 5,
                           "\(who): the beats within 2 ms on average (\(ms(sync.beats.meanAbsolute))) and 5 ms at most (\(ms(sync.beats.maximum)))", "\(sync)")
        }

        // ---------------------------------------------------------------------------------------------------------
        timeline.step("The points of issue 16")
        let names = [1: "discovery and status", 2: "notes and faders through the routes", 3: "who leads", 4: "activity, total and drums",
                     5: "no note left on", 6: "reload mid-session", 7: "a link down and back", 8: "beats in sync"]
        for point in 1...8 {
            let failed = timeline.failures[point] ?? []
            timeline.write("  \(point). \(names[point]!): "
                           + (!timeline.checked.contains(point) ? "NOT CHECKED" : failed.isEmpty ? "PASS" : "FAIL (\(failed.joined(separator: "; ")))"))
        }
        #expect(timeline.checked == Set(1...8))
    }

    /// Issue 31, in the VM with netem: the lab's LAN delays every packet 0-10 ms (reordering them) and loses 1 %, each
    /// way. The rack and the phone each have a clock output (the drum machine, the synth), read by amidi.
    /// - The rack also invites 10.78.0.9, where nobody is: a warning names it, and its status lists the invitation with
    ///   its tries.
    /// - 20 rounds of both told to start within 5 ms of each other (through their control sockets): each time one
    ///   master on both, and each clock output gets one Start per song.
    /// - The rack leads and quits (SIGTERM): the phone (`on-master-lost: next`) carries the song, its synth gets no
    ///   Stop and no second Start, and its ticks go on.
    @Test func theJamInARealRoomThroughNetem() throws {
        /// What both daemons logged about the jam, for a round that went wrong.
        try withRackAndPhone(netem: "delay 5ms 5ms loss 1%", rack: """
            session: { name: Rack, advertise: false, invite: [{ host: 10.78.0.2, port: 5004 }, { host: 10.78.0.9, port: 5004 }] }
            clock: { on-master-lost: next, to: [drum-machine] }
            endpoints:
              drum-machine: { alsa: "Virtual Raw MIDI 0-1" }
            """, phone: """
            session: { name: Phone, advertise: false }
            clock: { on-master-lost: next, to: [synth] }
            endpoints:
              synth: { alsa: "Virtual Raw MIDI 0-3" }
            """) { lab in
            let (rack, phone) = (lab.rack, lab.phone)
            // The invitation nobody answers.
            let warning = lab.rackDaemon.waitForLine { $0.contains("no answer from") && $0.contains("10.78.0.9") }
            #expect(warning != nil, "\(lab.rackDaemon.text)")
            let pending = rack.peek()?.session?.invitations.first { $0.address.contains("10.78.0.9") }
            #expect(pending.map { $0.state == "inviting" && $0.tries >= 2 } == true, "\(String(describing: pending))")

            // Simultaneous starts.
            let sockets = try [rack, phone].map { try #require($0.controlSocket) }
            func masters() -> [String?] { [rack, phone].map { $0.peek()?.jam?.master } }
            func waitFor(_ holds: () -> Bool) -> Bool {
                let deadline = monotonic() + 10
                while !holds(), monotonic() < deadline { Thread.sleep(forTimeInterval: 0.05) }
                return holds()
            }
            for round in 0..<20 {
                startAtOnce(sockets, round: round)
                #expect(waitFor { let m = masters(); return m[0] != nil && m[0] == m[1] }, "round \(round): \(masters())\n\(lab.jamLines)")
                Thread.sleep(forTimeInterval: 0.5)
                let leader = masters()[0] == "Phone" ? 1 : 0
                #expect((try? ControlClient.send(.command(.jam(.stop)), to: sockets[leader])) != nil, "round \(round)\n\(lab.jamLines)")
                #expect(waitFor { [rack, phone].allSatisfy { $0.peek()?.jam?.role == "idle" } }, "round \(round)\n\(lab.jamLines)")
            }

            // The master quits.
            let rackPID = try #require(rack.peek()?.pid)
            _ = try ControlClient.send(.command(.jam(.start)), to: sockets[0])
            #expect(waitFor { phone.peek()?.jam?.master == "Rack" }, "\(lab.jamLines)")
            Thread.sleep(forTimeInterval: 2)
            let quit = monotonic()
            kill(rackPID, SIGTERM)
            #expect(waitFor { phone.peek()?.jam?.role == "master" }, "\(String(describing: phone.peek()?.jam))\n\(lab.jamLines)")
            Thread.sleep(forTimeInterval: 2)
            let stopped = monotonic()
            _ = try ControlClient.send(.command(.jam(.stop)), to: sockets[1])
            Thread.sleep(forTimeInterval: 1)
            lab.stop()

            for reader in [lab.drumMachine, lab.synth] {
                let transport = reader.heard().map(\.message).filter { $0.isClockOrTransport && $0 != .timingClock }
                // Songs end with a Stop; a Song Position may come between songs (a journal repairing a packet lost around a Stop).
                let songs = transport.split(separator: .stop, omittingEmptySubsequences: false).map { $0.filter { if case .songPosition = $0 { false } else { true } } }
                #expect(songs.count >= 21 && songs.prefix(20).allSatisfy { $0 == [.start] }, "\(reader.name): \(songs)\n\(lab.jamLines)")
            }
            let afterQuit = lab.synth.heard(after: quit)
            #expect(!afterQuit.contains { $0.time < stopped && ($0.message == .stop || $0.message == .start) },
                    "\(afterQuit.filter { $0.message != .timingClock })\n\(lab.jamLines)")
            #expect(afterQuit.filter { $0.time < stopped && $0.message == .timingClock }.count > 80,
                    "the song went on after the rack quit: \(afterQuit.filter { $0.message != .timingClock })\n\(lab.jamLines)")
        }
    }

    /// Issue 31, in the VM with netem: the lab's LAN delays every packet 0-20 ms or 0-50 ms (netem's uniform jitter,
    /// reordering them; clock sync included) and loses 5 %, each way. The rack leads 60 s at 120 BPM to its drum
    /// machine; the phone follows, to its synth. Read with the kernel's timestamps, tick by tick (by song index
    /// on each), the phone's beats are within 2 ms of the rack's on average and never half a period off: its clock
    /// never slipped a tick.
    @Test(arguments: ["delay 10ms 10ms loss 5%", "delay 25ms 25ms loss 5%"])
    func theClockThroughWiFiJitterAndLoss(netem: String) throws {
        try withRackAndPhone(netem: netem, rack: """
            session: { name: Rack, advertise: false, invite: [{ host: 10.78.0.2, port: 5004 }] }
            clock: { tempo: 120, to: [drum-machine] }
            endpoints:
              drum-machine: { alsa: "Virtual Raw MIDI 0-1" }
            """, phone: """
            session: { name: Phone, advertise: false }
            clock: { to: [synth] }
            endpoints:
              synth: { alsa: "Virtual Raw MIDI 0-3" }
            """) { lab in
            let started = monotonic()
            try #require(try lab.rack.jambridge("start").status == 0)
            Thread.sleep(forTimeInterval: 62)
            let stopped = monotonic()
            #expect(try lab.rack.jambridge("stop").status == 0, "\(lab.jamLines)")
            Thread.sleep(forTimeInterval: 1)
            lab.stop()
            let master = clockRuns(lab.drumMachine.heard()).first { $0.start >= started - 0.5 }?.ticks ?? [:]
            let follower = clockRuns(lab.synth.heard()).first { $0.start >= started - 0.5 }?.ticks ?? [:]
            // On failure, whichever fails: how each device's song began and every transport message it got (in ms
            // from the rack's start command: a song broken off shows its Stop, Start or Continue), and the daemons'
            // jam lines.
            func opening(_ reader: DeviceReader) -> String {
                reader.heard(after: started - 0.5, before: started + 5).prefix(12)
                    .map { "\($0.message == .timingClock ? "tick" : "\($0.message)") \(ms(($0.time - started) * 1000))" }.joined(separator: ", ")
            }
            func transport(_ reader: DeviceReader) -> String {
                reader.heard(after: started - 0.5).filter { $0.message != .timingClock }.prefix(40)
                    .map { "\($0.message) \(ms(($0.time - started) * 1000))" }.joined(separator: ", ")
            }
            let devices = """
                rack's device: \(opening(lab.drumMachine))
                  its transport: \(transport(lab.drumMachine))
                phone's device: \(opening(lab.synth))
                  its transport: \(transport(lab.synth))
                \(lab.jamLines)
                """
            let sync = try #require(clockComparison(master: master, follower: follower, from: started + 2, until: stopped),
                                    "rack \(master.count) ticks, phone \(follower.count)\n\(devices)")
            print("netem \(netem): \(sync)")
            let detail = "beats: \(sync.beats.offsets.map { ($0 * 10).rounded() / 10 })\n\(devices)"
            #expect(sync.ticks.count >= 2_500, "\(sync)\n\(detail)")
            // Paired by index, a slip would put every beat after it a period (20.8 ms) off: none is half a period off.
            // (Clock sync goes through the jitter too, and the VM stalls: 0-50 ms put one beat 5.1 ms off, 2026-11-27.)
            #expect(sync.beats.meanAbsolute < 2 && sync.beats.maximum < 10, "\(sync)\n\(detail)")
        }
    }
}

/// The lab's rack and phone for issue 31's tests, each running jambridge: their clock outputs (the drum machine and
/// the synth) read by amidi, the phone joined to the rack.
private struct RackAndPhone {
    let rack = Host(name: "rack"), phone = Host(name: "phone")
    let drumMachine: DeviceReader, synth: DeviceReader
    let rackDaemon: TimedLines, phoneDaemon: TimedLines

    /// The daemons' last 20 lines each about the jam.
    var jamLines: String {
        [("rack", rackDaemon), ("phone", phoneDaemon)].map { name, daemon in
            daemon.text.split(separator: "\n").filter { $0.contains("jam") || $0.contains("clock master") || $0.contains("queue started") }.suffix(20)
                .map { "\(name): \($0)" }.joined(separator: "\n")
        }.joined(separator: "\n")
    }

    /// Stops the daemons and the readers (SIGINT), and waits for them.
    func stop() {
        let processes = [drumMachine.process, synth.process, phoneDaemon, rackDaemon]
        for process in processes { process.signal(SIGINT) }
        for process in processes { process.finish(killingAfter: 10) }
    }
}

/// Brings the lab up with `netem` on its LAN, runs jambridge with route file `rack` on the rack and `phone` on the
/// phone, waits for the phone to join, and runs `body`; then kills what still runs and takes the lab down.
private func withRackAndPhone(netem: String, rack rackRoutes: String, phone phoneRoutes: String,
                              _ body: (RackAndPhone) throws -> Void) throws {
    try #require(getuid() == 0, "the lab needs root to create network namespaces")
    let dir = try temporaryDirectory()
    var processes: [TimedLines] = []
    defer {
        for process in processes where process.isRunning { process.signal(SIGKILL) }
        _ = try? run("/bin/bash", [lab, "down"])
    }
    try #require(try run("/bin/bash", [lab, "up"], environment: ["SCENARIO_NETEM": netem]).status == 0, "scripts/scenario-lab.sh up failed")
    let rackFile = dir.appendingPathComponent("rack.yaml"), phoneFile = dir.appendingPathComponent("phone.yaml")
    try rackRoutes.write(to: rackFile, atomically: true, encoding: .utf8)
    try phoneRoutes.write(to: phoneFile, atomically: true, encoding: .utf8)
    let drumMachine = try DeviceReader("drum machine", device: 1), synth = try DeviceReader("synth", device: 3)
    processes += [drumMachine.process, synth.process]
    Thread.sleep(forTimeInterval: 1)
    let rack = Host(name: "rack"), phone = Host(name: "phone")
    let phoneDaemon = try phone.start([executable.path, "run", "--stop-after", "600", phoneFile.path])
    let rackDaemon = try rack.start([executable.path, "run", "--stop-after", "600", rackFile.path])
    processes += [phoneDaemon, rackDaemon]
    let joined = try rack.waitForStatus { $0.session?.peers.contains { $0.name == "Phone" } == true }
    try #require(joined?.session?.peers.contains { $0.name == "Phone" } == true, "the phone never joined")
    try body(RackAndPhone(drumMachine: drumMachine, synth: synth, rackDaemon: rackDaemon, phoneDaemon: phoneDaemon))
}
