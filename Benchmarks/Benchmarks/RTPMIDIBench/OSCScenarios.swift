#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MIDI
import RTPMIDI
import Transport

// OSC into a running jambridge, MIDI out to an RTP-MIDI peer (issue 6 targets: OSC in -> MIDI out p99 under
// 200 µs on loopback; 20,000 OSC messages/s without loss or unbounded memory).
//
// jambridge runs a route file with an `osc:` endpoint listening on 127.0.0.1 and a `peer: PeerB` endpoint,
// routed one to the other; peer B (a `BenchPeer`) invites the session as in `latency`. The benchmark sends OSC
// datagrams it encodes itself (one message per datagram) from a plain UDP socket and timestamps each just
// before `sendto`; B timestamps each MIDI message right after its `recvfrom`.
//
// Settings come from the environment (main.swift takes only the mode names for these scenarios):
//   OSC_LATENCY_SECONDS (10), OSC_LATENCY_RATE (1000 messages/s per path), OSC_WARMUP_SECONDS (1),
//   OSC_THROUGHPUT_SECONDS (10), OSC_THROUGHPUT_RATE (20000 messages/s), OSC_BATCH (20 datagrams per batch).

private func setting(_ name: String, _ fallback: Double) -> Double {
    ProcessInfo.processInfo.environment[name].flatMap(Double.init) ?? fallback
}

/// OSC 1.0 messages built by hand: the address and the type tag string NUL-terminated and padded to 4 bytes,
/// then the arguments big-endian. Each message is a template whose argument bytes are patched in place.
struct OSCDatagram {
    private(set) var bytes: [UInt8]
    private let argumentsAt: Int

    init(address: String, tags: String) {
        func padded(_ text: String) -> [UInt8] {
            var b = Array(text.utf8) + [0]
            while b.count % 4 != 0 { b.append(0) }
            return b
        }
        bytes = padded(address) + padded("," + tags)
        argumentsAt = bytes.count
        bytes += [UInt8](repeating: 0, count: 4 * tags.count)
    }

    mutating func set(_ index: Int, int value: Int32) { setWord(index, UInt32(bitPattern: value)) }
    mutating func set(_ index: Int, float value: Float) { setWord(index, value.bitPattern) }

    private mutating func setWord(_ index: Int, _ word: UInt32) {
        let at = argumentsAt + 4 * index
        bytes[at] = UInt8(word >> 24); bytes[at + 1] = UInt8(word >> 16 & 0xFF)
        bytes[at + 2] = UInt8(word >> 8 & 0xFF); bytes[at + 3] = UInt8(word & 0xFF)
    }
}

/// A UDP socket on 127.0.0.1 connected to jambridge's OSC port: a controller.
final class OSCSender {
    let fd: Int32
    private(set) var failures = 0

    init(to port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var local = UDPRelay.loopback(0)
        var target = UDPRelay.loopback(port)
        let ok = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0 && withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
        guard ok else { throw BenchError("OSC sender: \(String(cString: strerror(errno)))") }
        // Feedback, if jambridge ever sends any, is never read: let it drop.
    }

    func send(_ datagram: OSCDatagram) {
        let sent = datagram.bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, 0) }
        if sent != datagram.bytes.count { failures += 1 }
    }

    deinit { close(fd) }
}

/// The OSC messages that stand for sequence numbers, each distinct from the previous one of its control (the
/// mapper sends only values that change), and how each arriving MIDI message gives its code back.
enum OSCCode {
    /// `/1/fader<1-8> f`, mapped to CC 21-28 on channel 1 through the route's `osc:` entry (TouchOSC's faders,
    /// default input range 0-1): code = 8 x value + fader - 1, modulus 1024; consecutive codes go to different
    /// faders and each fader's value moves by one, so no message is a repeat of its fader's last value.
    static let faderModulus = 1024
    static func fader(_ sequence: Int, into datagrams: inout [OSCDatagram]) -> Int {
        let code = sequence % faderModulus
        let fader = code % 8, value = code / 8
        // (value + 0.25) / 127 maps to `value` whether the mapper rounds or truncates.
        datagrams[fader].set(0, float: (Float(value) + 0.25) / 127)
        return fader
    }
    static func faderCode(_ message: MIDIMessage) -> Int? {
        guard case .controlChange(let channel, let controller, let value) = message, channel.value == 0,
              (21...28).contains(controller.value) else { return nil }
        return 8 * Int(value.value) + Int(controller.value) - 21
    }
    static func faderDatagrams() -> [OSCDatagram] { (1...8).map { OSCDatagram(address: "/1/fader\($0)", tags: "f") } }

    /// `/note iii` (channel 1-16, note, velocity 1-127) of the MIDI-over-OSC family: the note-on of
    /// `SequenceCode`, modulus 260,096.
    static func note(_ sequence: Int, into datagram: inout OSCDatagram) {
        guard case .noteOn(let c, let n, let v) = SequenceCode.message(sequence) else { return }
        datagram.set(0, int: Int32(c.value) + 1); datagram.set(1, int: Int32(n.value)); datagram.set(2, int: Int32(v.value))
    }
}

/// jambridge with an OSC endpoint on 127.0.0.1 routed to peer B; with `withRelay`, also peer A connected to B
/// through the bare UDP relay (the floor of the RTP-MIDI `latency` scenario, for comparison in the same run).
final class OSCRig {
    let daemon: Daemon
    let b: BenchPeer
    let a: BenchPeer?
    let relay: Relay?
    let oscPort: UInt16

    init(_ o: Options, withRelay: Bool) throws {
        let p = o.basePort
        oscPort = p + 20
        daemon = try Daemon(binary: o.jambridge, port: p,
                            endpoints: """
                              osc: { osc: { listen: \(oscPort), host: 127.0.0.1 } }
                              b: { peer: PeerB }
                            """,
                            routes: """
                              - from: osc
                                to: b
                                osc:
                                  "/1/fader<n:1-8>": { cc: "n + 20" }
                                  midi: true
                            """)
        usleep(300_000)
        guard daemon.isRunning else { throw BenchError("jambridge exited at start:\n\(daemon.log)") }
        b = try BenchPeer(name: "PeerB", port: p + 4)
        if withRelay {
            a = try BenchPeer(name: "PeerA", port: p + 2)
            relay = try UDPRelay(frontPort: p + 6, backPort: p + 8, targetControlPort: p + 4)
        } else {
            a = nil
            relay = nil
        }
        relay?.start()
        a?.start()
        b.start()
        b.invite(port: p, label: "jambridge")
        a?.invite(port: p + 6, label: "relay")
        let (a, b) = (self.a, self.b)
        guard waitFor(seconds: 10, { b.joinedNames.isSuperset(of: withRelay ? ["Bridge", "PeerA"] : ["Bridge"]) }) else {
            throw BenchError("peers did not connect: A has \(a?.joinedNames ?? []), B has \(b.joinedNames)\n\(daemon.log)")
        }
        usleep(500_000)
    }

    /// Stops everything; returns jambridge's closing counts (the OSC endpoint's and the session's log lines).
    func finish() -> [String] {
        a?.close()
        b.close()
        relay?.stop()
        let status = daemon.stop()
        if status != 0 { log("jambridge exit status \(status)") }
        let lines = daemon.log.split(separator: "\n").filter {
            $0.contains("OSC messages in") || $0.contains("stopped:") || $0.contains("dropped") || $0.contains("rejected so far")
                || $0.contains("undecodable")
        }.map { "jambridge: " + String($0) }
        daemon.removeFiles()
        return lines
    }
}

/// `osc-latency`: three paths interleaved, each at OSC_LATENCY_RATE: A -> bare relay -> B (an RTP-MIDI note-on
/// per packet), OSC `/1/faderN f` -> jambridge (mapped entry) -> B, and OSC `/note iii` -> jambridge (MIDI-over-OSC
/// family) -> B.
func runOSCLatency(_ o: Options) throws {
    let seconds = setting("OSC_LATENCY_SECONDS", 10), rate = Int(setting("OSC_LATENCY_RATE", 1000))
    let warmup = Int(setting("OSC_WARMUP_SECONDS", 1) * Double(rate))
    let perPath = warmup + Int(seconds * Double(rate))
    let rig = try OSCRig(o, withRelay: true)
    defer { for line in rig.finish() { emit(line) } }
    let sender = try OSCSender(to: rig.oscPort)
    let relayPath = Collector(count: perPath, skip: warmup, modulus: SequenceCode.modulus)
    let faderPath = Collector(count: perPath, skip: warmup, modulus: OSCCode.faderModulus)
    let notePath = Collector(count: perPath, skip: warmup, modulus: SequenceCode.modulus)
    let paths = [relayPath, faderPath, notePath]
    rig.b.queue.sync {
        rig.b.onMessage = { message, peer, time in
            if peer.name == "PeerA" {
                if let s = SequenceCode.sequence(message) { relayPath.receive(code: s, at: time) }
            } else if peer.name == "Bridge" {
                if let code = OSCCode.faderCode(message) { faderPath.receive(code: code, at: time) }
                else if let s = SequenceCode.sequence(message) { notePath.receive(code: s, at: time) }
            }
        }
    }
    var faders = OSCCode.faderDatagrams()
    var note = OSCDatagram(address: "/note", tags: "iii")
    let a = rig.a!
    let interval = 1e9 / Double(rate * 3) // the three paths alternate, a third of an interval apart
    let start = nowNanoseconds() + 10_000_000
    let pid = rig.daemon.pid
    var cpu0 = ProcStats.cpuSeconds(pid), measuredFrom = start
    for i in 0..<(perPath * 3) {
        let path = i % 3, index = i / 3
        if index == warmup && path == 0 { cpu0 = ProcStats.cpuSeconds(pid); measuredFrom = nowNanoseconds() }
        sleepUntil(start + UInt64(Double(i) * interval))
        switch path {
        case 0:
            a.queue.sync {
                let t = MonotonicClock.now()
                relayPath.sendTimes.set(index, t.nanoseconds)
                a.session.send(SequenceCode.message(index), at: t) { $0.name == "PeerB" }
                a.session.flush()
            }
        case 1:
            let fader = OSCCode.fader(index, into: &faders)
            faderPath.sendTimes.set(index, nowNanoseconds())
            sender.send(faders[fader])
        default:
            OSCCode.note(index, into: &note)
            notePath.sendTimes.set(index, nowNanoseconds())
            sender.send(note)
        }
    }
    let elapsed = Double(nowNanoseconds() - measuredFrom) / 1e9
    let cpu = (ProcStats.cpuSeconds(pid) - cpu0) / elapsed * 100
    _ = waitFor(seconds: 2) { rig.b.queue.sync { paths.allSatisfy { $0.received + $0.lost >= perPath } } }
    let figures = rig.b.queue.sync { paths.map { Percentiles($0.latencies) } }
    let names = ["relay (RTP-MIDI)", "jambridge OSC /1/faderN f", "jambridge OSC /note iii"]
    emit("== osc-latency: 127.0.0.1, one message per datagram, \(rate)/s per path for \(seconds) s after \(warmup) per path")
    emit("   not counted; paths interleaved: A -> bare UDP relay -> B (RTP-MIDI note-on), OSC fader (mapped entry,")
    emit("   CC 21-28) -> jambridge -> B, OSC /note (MIDI-over-OSC family) -> jambridge -> B")
    emit(Percentiles.header)
    for (name, figure) in zip(names, figures) { emit(figure.row(name)) }
    for (name, c) in zip(names, paths) {
        rig.b.queue.sync {
            emit("\(name): sent \(perPath), received \(c.received), missing \(c.missing(sent: perPath)), out of order \(c.backwards)")
        }
    }
    if sender.failures > 0 { emit("OSC send failures: \(sender.failures)") }
    emit("jambridge CPU during the measured part: \(f(cpu, 0, decimals: 1)) %")
    for (name, c) in zip(names, paths) {
        let episodes = rig.b.queue.sync { stallEpisodes(c.slowMessages, since: start) }
        if !episodes.isEmpty { emit("\(name) stalls (messages > 5 ms): \(episodes)") }
    }
    emit("RESULT osc-latency relay_p50=\(figures[0].p50) relay_p99=\(figures[0].p99) fader_p50=\(figures[1].p50) fader_p99=\(figures[1].p99) fader_p999=\(figures[1].p999) note_p50=\(figures[2].p50) note_p99=\(figures[2].p99) note_p999=\(figures[2].p999) cpu=\(cpu)")
}

/// `osc-throughput`: OSC_THROUGHPUT_RATE `/1/faderN f` datagrams a second in batches of OSC_BATCH, each a value
/// its fader did not have before; counts the CCs peer B gets, and jambridge's CPU and RSS as it goes.
func runOSCThroughput(_ o: Options) throws {
    let seconds = setting("OSC_THROUGHPUT_SECONDS", 10), rate = Int(setting("OSC_THROUGHPUT_RATE", 20_000))
    let batch = Int(setting("OSC_BATCH", 20))
    let batches = Int(seconds * Double(rate)) / batch
    let total = batches * batch
    let rig = try OSCRig(o, withRelay: false)
    defer { for line in rig.finish() { emit(line) } }
    let sender = try OSCSender(to: rig.oscPort)
    let collector = Collector(count: total, skip: 0, modulus: OSCCode.faderModulus)
    rig.b.queue.sync {
        rig.b.onMessage = { message, _, time in
            if let code = OSCCode.faderCode(message) { collector.receive(code: code, at: time) }
        }
    }
    var faders = OSCCode.faderDatagrams()
    let pid = rig.daemon.pid
    let interval = 1e9 * Double(batch) / Double(rate)
    let perSecond = max(1, Int(1e9 / interval))
    let rssStart = ProcStats.status(pid, "VmRSS"), anonStart = ProcStats.status(pid, "RssAnon")
    var rssBySecond: [Int] = []
    let start = nowNanoseconds() + 10_000_000
    sleepUntil(start)
    let (cpu0, self0) = (ProcStats.cpuSeconds(pid), ProcStats.cpuSeconds(getpid()))
    var cpuBySecond: [Double] = []
    var lastCPU = cpu0
    var late = 0
    for k in 0..<batches {
        let slot = start + UInt64(Double(k) * interval)
        if nowNanoseconds() > slot + 1_000_000 { late += 1 }
        sleepUntil(slot)
        let t = nowNanoseconds()
        collector.sendTimes.set(k * batch..<(k + 1) * batch, t)
        for j in 0..<batch {
            let fader = OSCCode.fader(k * batch + j, into: &faders)
            sender.send(faders[fader])
        }
        if (k + 1) % perSecond == 0 {
            rssBySecond.append(ProcStats.status(pid, "VmRSS"))
            let c = ProcStats.cpuSeconds(pid)
            cpuBySecond.append((c - lastCPU) * 100)
            lastCPU = c
        }
    }
    let end = nowNanoseconds()
    let elapsed = Double(end - start) / 1e9
    let cpu = (ProcStats.cpuSeconds(pid) - cpu0) / elapsed * 100
    let selfCPU = (ProcStats.cpuSeconds(getpid()) - self0) / elapsed * 100
    _ = waitFor(seconds: 3) { rig.b.queue.sync { collector.received + collector.lost >= total } }
    let drained = Double(nowNanoseconds() - end) / 1e9
    let rssEnd = ProcStats.status(pid, "VmRSS"), anonEnd = ProcStats.status(pid, "RssAnon"), hwm = ProcStats.status(pid, "VmHWM")
    let (received, missing, backwards, latency) = rig.b.queue.sync {
        (collector.received, collector.missing(sent: total), collector.backwards, Percentiles(collector.latencies))
    }
    let counters = rig.b.counters
    let gapsB = counters.sequenceGaps, packetsB = counters.packetsReceived
    let anomalies = rig.b.queue.sync { collector.anomalies }
    emit("== osc-throughput: OSC /1/faderN f (mapped to CC 21-28) -> jambridge -> B, one message per datagram,")
    emit("   \(batch) datagrams per batch, target \(rate) messages/s for \(seconds) s")
    emit("sent \(total) messages over \(f(elapsed, 0, decimals: 2)) s (\(Int(Double(total) / elapsed)) messages/s achieved, \(late) batches started >1 ms late, \(sender.failures) send failures)")
    emit("received \(received) CCs in \(packetsB) RTP packets, missing \(missing), out of order/duplicate \(backwards), B's RTP sequence gaps from jambridge \(gapsB)")
    emit("B's session: \(counters.messagesReceived) messages, \(counters.repairs) journal repairs (\(counters.repairMessages) messages), \(counters.latePackets) late packets, \(counters.malformed) malformed")
    for anomaly in anomalies { emit("  sequence: \(anomaly)") }
    emit("jambridge CPU: \(f(cpu, 0, decimals: 1)) % of one core (per second: \(cpuBySecond.map { f($0, 0, decimals: 0) }.joined(separator: " "))); benchmark process \(f(selfCPU, 0, decimals: 1)) %")
    emit("jambridge VmRSS: \(rssStart) kB at the start, \(rssEnd) kB at the end (VmHWM \(hwm) kB; RssAnon \(anonStart) -> \(anonEnd) kB)")
    emit("VmRSS kB each second: \(rssBySecond.map(String.init).joined(separator: " "))")
    emit("batch send -> receive µs: p50 \(f(latency.p50, 0)) p90 \(f(latency.p90, 0)) p99 \(f(latency.p99, 0)) p99.9 \(f(latency.p999, 0)) max \(f(latency.max, 0)); drained \(f(drained * 1000, 0, decimals: 0)) ms after the last send")
    emit("RESULT osc-throughput sent=\(total) received=\(received) missing=\(missing) cpu=\(cpu) rss_start_kb=\(rssStart) rss_end_kb=\(rssEnd) hwm_kb=\(hwm)")
}
