import Foundation
import MIDI
import MIDITestSupport
import Testing

// The jam's clock on a real sequencer with snd-virmidi devices (issue 13): run by scripts/alsa-tests.sh, in a VM
// where this machine has no /dev/snd/seq. The devices stand in for a drum machine: what jambridge sends to the seq
// port of "Virtual Raw MIDI 0-N" is read from rawmidi hw:0,N by amidi (alsa-utils, a reader nobody here wrote), with
// the kernel's timestamps; bytes written into hw:0,N come out of that seq port as a drum machine's would. Timing in
// the VM is emulated: the bounds are broad, what is checked is behaviour (order, what is there and what is not,
// ticks per beat, who leads).

/// One byte `amidi -d -T monotonic` printed, with the kernel's CLOCK_MONOTONIC time of its arrival, in seconds.
struct TimedByte: Equatable {
    var time: Double
    var byte: UInt8
}

/// Starts `amidi` reading hw:0,`device` (clock bytes too: `-c`) with arrival timestamps until `idleSeconds` of silence.
func startTimedReading(device: Int, idleSeconds: Int) throws -> JamBridgeProcess {
    let reader = try JamBridgeProcess(["-p", "hw:0,\(device)", "-d", "-c", "-T", "monotonic", "-t", "\(idleSeconds)"],
                                      launcher: "/usr/bin/amidi")
    Thread.sleep(forTimeInterval: 1) // it has the device open before anything is played
    return reader
}

/// The bytes in amidi's timestamped dump: a line per read, such as "13.764447927) FA" or "14.01) 903C64"; a message
/// in running status may follow on a line of its own without a time ("    0750"). A line's bytes share its time.
func timedBytes(_ output: String) -> [TimedByte] {
    var time = 0.0
    return output.split(separator: "\n").flatMap { line -> [TimedByte] in
        let parts = line.split(separator: ")", maxSplits: 1)
        if parts.count == 2, let stamp = Double(parts[0].trimmingCharacters(in: .whitespaces)) { time = stamp }
        return dumpedBytes(String(parts.last ?? "")).map { TimedByte(time: time, byte: $0) }
    }
}

/// The messages in `bytes` (running status and real-time bytes inside a message read as a receiver would).
private func messages(_ bytes: [TimedByte]) -> [MIDIMessage] {
    var parser = MIDIParser(), found: [MIDIMessage] = []
    parser.parse(bytes.map(\.byte)) { if case .message(let message) = $0 { found.append(message) } }
    return found
}

/// The system real-time bytes the clock is made of (clock, start, continue, stop), in order.
func clockBytes(_ bytes: [TimedByte]) -> [TimedByte] { bytes.filter { (0xF8...0xFC).contains($0.byte) } }

/// Runs `jambridge COMMAND --pid PID`, the control socket's client; its status and what it printed.
func control(_ daemon: JamBridgeProcess, _ arguments: String...) throws -> (status: Int32, out: String, err: String) {
    try jambridge(arguments + ["--pid", "\(daemon.pid)"], killingAfter: 60)
}

/// The jam's line of `jambridge status`, e.g. "jam: master, clock master drums, 100.2 BPM, beat 6; total activity 0".
private func jamStatus(_ daemon: JamBridgeProcess) throws -> String {
    let result = try control(daemon, "status")
    return result.out.split(separator: "\n").first { $0.hasPrefix("jam: ") }.map(String.init) ?? "(no jam line) \(result)"
}

/// Who leads and at what tempo in a jam status line.
private func leader(_ line: String) -> (master: String, tempo: Double?) {
    let master = line.firstMatch(of: /clock master ([^,;]+)/).map { String($0.1) } ?? "?"
    return (master, line.firstMatch(of: /, ([0-9.]+) BPM/).flatMap { Double($0.1) })
}

/// How many of `ticks` fall in the `seconds` after `from`, per second.
private func rate(of ticks: [TimedByte], from start: Double, seconds: Double) -> Double {
    Double(ticks.filter { $0.time >= start && $0.time < start + seconds }.count) / seconds
}

/// Now on CLOCK_MONOTONIC, amidi's timestamps' clock, in seconds.
private func monotonicSeconds() -> Double { Double(MonotonicClock.now().nanoseconds) / 1e9 }

/// A drum machine's clock: writes Start into hw:0,0, then 24-ppq ticks at `bpm` on absolute deadlines until `stopFile`
/// exists (two minutes at most), then Stop; prints how many ticks it wrote.
private let drumMachine = """
    import os, sys, time
    bpm, stop_file = float(sys.argv[1]), sys.argv[2]
    period = 60.0 / bpm / 24
    ticks = 0
    with open('/dev/snd/midiC0D0', 'wb', buffering=0) as device:
        device.write(b'\\xfa')
        start = time.monotonic()
        while not os.path.exists(stop_file) and ticks < 120 / period:
            time.sleep(max(0.0, start + ticks * period - time.monotonic()))
            device.write(b'\\xf8')
            ticks += 1
        device.write(b'\\xfc')
    print(ticks, flush=True)
    """

@Suite(.serialized) struct JamClockALSAIntegrationTests {
    /// `jambridge start` makes this instance clock master: the drum machine on `clock: { to: }` gets Start, 24 ticks
    /// a beat at the file's tempo and then at `jambridge tempo`'s, Stop on `jambridge stop`, and nothing else: the
    /// keyboard's notes come through its route, its activity level (CC 11) and a total-like CC 7 on channel 1 do not.
    @Test func jambridgesClockReachesADrumMachineStartTicksAtTheTempoStopAndNoActivityControllers() throws {
        let (daemon, _) = try startJamBridge("""
            endpoints:
              keys: { alsa: "Virtual Raw MIDI 0-0" }
              drums: { alsa: "Virtual Raw MIDI 0-1" }
            clock: { to: [drums], tempo: 120 }
            routes:
              - { from: keys, to: drums }
            """, seconds: 240)
        try waitForConnections(4) // both devices, both ways
        let reader = try startTimedReading(device: 1, idleSeconds: 10)
        let started = try control(daemon, "start")
        #expect(started.status == 0 && started.out.contains("started at 120 BPM"), "\(started)")
        Thread.sleep(forTimeInterval: 3)
        try play("B0 0B 64 B0 07 50 B1 0B 40 90 3C 64 80 3C 00")
        let tempo = try control(daemon, "tempo", "90")
        let tempoChanged = monotonicSeconds() // at most a beat (0.5 s at 120 BPM) before the ticks slow down
        #expect(tempo.status == 0 && tempo.out.contains("tempo 90 BPM from the next beat"), "\(tempo)")
        Thread.sleep(forTimeInterval: 4)
        let status = try jamStatus(daemon)
        #expect(status.hasPrefix("jam: master, clock master jambridge, 90.0 BPM, beat "), "\(status)")
        let stopped = try control(daemon, "stop")
        #expect(stopped.status == 0 && stopped.out.contains("stopped"), "\(stopped)")
        let got = reader.finish(killingAfter: 120) // a clock that never stopped keeps amidi reading: killed, status 9
        #expect(got.status == 0, "amidi: \(got)")
        daemon.interrupt()
        let result = daemon.finish(killingAfter: 60)
        #expect(result.status == 0, "\(result.err)")

        let bytes = timedBytes(got.out)
        let clock = clockBytes(bytes)
        // Start first, then only ticks, then Stop last: nothing after it.
        #expect(clock.first?.byte == 0xFA && clock.last?.byte == 0xFC && clock.dropFirst().dropLast().allSatisfy { $0.byte == 0xF8 },
                "\(clock.map { String($0.byte, radix: 16) }.joined(separator: " "))")
        #expect(bytes.last?.byte == 0xFC)
        // The route's music and the other controllers come through; the jam's controllers (CC 11 and 7 on channel 1) do not.
        let music = messages(bytes).filter { ![.timingClock, .start, .stop].contains($0) }
        #expect(music == [cc(1, 11, 64), noteOn(0, 60, 100), noteOff(0, 60)], "\(got.out)")
        guard let start = clock.first?.time, let stop = clock.last?.time else { return }
        let ticks = clock.filter { $0.byte == 0xF8 }
        // 24 a beat: 48 a second at 120 BPM, 36 at 90, over two seconds of each (broad bounds: the VM's timing is emulated).
        #expect(tempoChanged + 3 < stop, "the clock stopped early: \(stop - tempoChanged) s after the tempo change")
        let fast = rate(of: ticks, from: start + 0.5, seconds: 2), slow = rate(of: ticks, from: tempoChanged + 1, seconds: 2)
        #expect((40...56).contains(fast), "\(fast) ticks a second at 120 BPM")
        #expect((30...42).contains(slow), "\(slow) ticks a second at 90 BPM")
    }

    /// A drum machine pressing Start leads: its clock reaches the other `clock: { to: }` device as it comes, the
    /// follower locks to its tempo (status shows it as clock master at about 100 BPM), another device's Start and
    /// jambridge's own start are refused while it leads, and its Stop ends the rhythm, after which anyone may start.
    @Test func aDrumMachinesClockLeadsTheFollowerLocksAndAnotherStartIsRefusedUntilItStops() throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"))
        let (daemon, dir) = try startJamBridge("""
            endpoints:
              drums: { alsa: "Virtual Raw MIDI 0-0" }
              synth: { alsa: "Virtual Raw MIDI 0-1" }
              other: { alsa: "Virtual Raw MIDI 0-2" }
            clock: { to: [synth] }
            """, seconds: 300)
        try waitForConnections(6) // three devices, both ways
        let reader = try startTimedReading(device: 1, idleSeconds: 20)
        let stopFile = dir.appendingPathComponent("stop-the-drums")
        let drums = try JamBridgeProcess(["-c", drumMachine, "100", stopFile.path], launcher: "/usr/bin/python3")
        #expect(daemon.waitForError(containing: "clock master: drums (started the rhythm); this instance is the master"),
                "\(daemon.errorSoFar)")

        // The follower locks: the status shows the drums leading at their tempo, twice running (a reading taken while
        // the loop settles may pass through the range; the VM's Python keeps the tempo within 1%).
        var line = "", inRange = 0
        let locked = waitUntil(seconds: 90) {
            line = (try? jamStatus(daemon)) ?? ""
            let (master, tempo) = leader(line)
            inRange = master == "drums" && tempo.map { (97...103).contains($0) } == true ? inRange + 1 : 0
            if inRange < 2 { Thread.sleep(forTimeInterval: 1) }
            return inRange == 2
        }
        #expect(locked, "\(line)")
        #expect(line.hasPrefix("jam: master, clock master drums, "), "\(line)")

        // While the drums lead, another device's Start is refused (counted, one log line) and so is jambridge's own.
        try play("FA", device: 2)
        #expect(daemon.waitForError(containing: "jam: refused Start from other: drums leads (1 message refused so far)"),
                "\(daemon.errorSoFar)")
        let start = try control(daemon, "start")
        #expect(start.status != 0 && start.err.contains("refused: drums leads"), "\(start)")
        let (master, tempo) = leader(try jamStatus(daemon))
        #expect(master == "drums" && tempo.map { (97...103).contains($0) } == true, "\(master) \(String(describing: tempo))")

        // The drums' Stop ends it; then the other device may start (and stop) a rhythm of its own.
        _ = FileManager.default.createFile(atPath: stopFile.path, contents: nil)
        let written = drums.finish(killingAfter: 60)
        #expect(written.status == 0, "\(written)")
        #expect(daemon.waitForError(containing: "no clock master (drums stopped the rhythm); this instance is idle"),
                "\(daemon.errorSoFar)")
        #expect(try jamStatus(daemon).hasPrefix("jam: idle, clock master nobody"))
        try play("FA F8 F8 FC", device: 2)
        #expect(daemon.waitForError(containing: "no clock master (other stopped the rhythm)"), "\(daemon.errorSoFar)")
        #expect(daemon.errorSoFar.contains("clock master: other (started the rhythm)"), "\(daemon.errorSoFar)")

        let got = reader.finish(killingAfter: 120)
        daemon.interrupt()
        let result = daemon.finish(killingAfter: 60)
        #expect(result.status == 0, "\(result.err)")
        // The synth got the drums' Start, every tick they wrote and their Stop, relayed as they came, then the other's:
        // the refused Start never reached it, and nothing but clock did.
        let ticks = try #require(Int(written.out.trimmingCharacters(in: .whitespacesAndNewlines)), "\(written)")
        let expected: [UInt8] = [0xFA] + Array(repeating: 0xF8, count: ticks) + [0xFC, 0xFA, 0xF8, 0xF8, 0xFC]
        let bytes = timedBytes(got.out).map(\.byte)
        #expect(bytes == expected, "\(bytes.count) bytes, \(bytes.filter { $0 == 0xF8 }.count) ticks of \(ticks): \(got.out.suffix(400))")
    }

    /// A drum machine unplugged while it leads has left (its clock fell silent): the rhythm ends (`on-master-lost:
    /// stop`, the default), and once it is plugged back in it may start again.
    @Test func aLeadingDrumMachineUnpluggedEndsTheRhythmAndLeadsAgainWhenPluggedBackIn() throws {
        let (daemon, dir) = try startJamBridge("""
            endpoints:
              drums: { alsa: "Virtual Raw MIDI 0-0" }
              synth: { alsa: "Virtual Raw MIDI 0-1" }
            clock: { to: [synth] }
            """, seconds: 240)
        try waitForConnections(4) // both devices, both ways
        let drums = try JamBridgeProcess(["-c", drumMachine, "100", dir.appendingPathComponent("never").path],
                                         launcher: "/usr/bin/python3")
        #expect(daemon.waitForError(containing: "clock master: drums (started the rhythm)"), "\(daemon.errorSoFar)")
        Thread.sleep(forTimeInterval: 2)
        try "snd_virmidi.0".write(toFile: "/sys/bus/platform/drivers/snd_virmidi/unbind", atomically: false, encoding: .utf8)
        #expect(daemon.waitForError(containing: "no clock master (drums left); this instance is idle"), "\(daemon.errorSoFar)")
        _ = drums.finish(killingAfter: 30) // its device went away under it
        #expect(try jamStatus(daemon).hasPrefix("jam: idle, clock master nobody"))
        try "snd_virmidi.0".write(toFile: "/sys/bus/platform/drivers/snd_virmidi/bind", atomically: false, encoding: .utf8)
        try waitForConnections(4) // matched by name: the client numbers may have changed
        try play("FA F8 F8 FC")
        #expect(daemon.waitForError(containing: "no clock master (drums stopped the rhythm)"), "\(daemon.errorSoFar)")
        #expect(daemon.errorSoFar.components(separatedBy: "clock master: drums (started the rhythm)").count == 3,
                "\(daemon.errorSoFar)")
        daemon.interrupt()
        let result = daemon.finish(killingAfter: 60)
        #expect(result.status == 0, "\(result.err)")
    }
}
