#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MIDI
import RTPMIDI

struct Options {
    var jambridge = ""
    var basePort: UInt16 = 0
    /// Latency: seconds of sending, messages per second per path.
    var latencySeconds = 20.0
    var latencyRate = 1000
    /// Throughput: seconds, messages per second, messages per RTP packet from peer A.
    var throughputSeconds = 10.0
    var throughputRate = 100_000
    var batch = 100
    /// Idle: peers and seconds.
    var peers = 16
    var idleSeconds = 30.0
    /// The floor in the latency run: "poll" (bare relay thread in this process), "process" (the
    /// same relay in a process of its own, as jambridge is), or a diagnostic relay on
    /// jambridge's I/O path (see DispatchRelay): "dispatch", "dispatch-async", "dispatch-timer",
    /// "dispatch-async-timer".
    var relay = "poll"
}

/// Either relay, as the latency run uses it.
protocol Relay: AnyObject { func start(); func stop() }
extension UDPRelay: Relay {}
extension DispatchRelay: Relay {}

/// What arrives on one path at peer B: loss, order and latency by sequence code (on B's queue).
final class Collector: @unchecked Sendable {
    let sendTimes: Timestamps
    let count: Int
    let modulus: Int
    private(set) var expected = 0
    private(set) var received = 0
    private(set) var lost = 0
    private(set) var backwards = 0
    private(set) var latencies: [UInt64] = []
    /// (send instant, latency) of every message slower than `slow`.
    private(set) var slowMessages: [(sent: UInt64, latency: UInt64)] = []
    var slow: UInt64 = 5_000_000
    /// The first few gaps and backward steps: where the sequence expected `expected` and got `code`.
    private(set) var anomalies: [String] = []
    private(set) var arrivals = 0
    private let skip: Int

    init(count: Int, skip: Int, modulus: Int = SequenceCode.modulus) {
        sendTimes = Timestamps(count: count)
        latencies.reserveCapacity(count)
        self.count = count
        self.skip = skip
        self.modulus = modulus
    }

    func receive(_ message: MIDIMessage, at time: MonotonicInstant) {
        guard let sequence = SequenceCode.sequence(message) else { return }
        receive(code: sequence, at: time)
    }

    func receive(code: Int, at time: MonotonicInstant) {
        let m = modulus
        arrivals += 1
        let delta = (code - expected % m + m) % m
        if delta != 0, anomalies.count < 6 {
            anomalies.append("arrival \(arrivals): expected #\(expected) (code \(expected % m)), got code \(code) (\(delta < m / 2 ? "+\(delta)" : "-\(m - delta)"))")
        }
        guard delta < m / 2 else { backwards += 1; return } // duplicate or reordered
        lost += delta
        let index = expected + delta
        expected = index + 1
        received += 1
        if index >= skip, index < count {
            let sent = sendTimes.get(index)
            if sent > 0, time.nanoseconds >= sent {
                latencies.append(time.nanoseconds - sent)
                if time.nanoseconds - sent > slow { slowMessages.append((sent, time.nanoseconds - sent)) }
            }
        }
    }

    func missing(sent: Int) -> Int { lost + sent - expected }
}

/// Peers A and B connected to a running jambridge (A's messages routed to B) and, for the
/// latency run, to each other through the bare relay.
final class Rig {
    let daemon: Daemon
    let a: BenchPeer
    let b: BenchPeer
    let relay: Relay?

    init(_ o: Options, withRelay: Bool) throws {
        let p = o.basePort
        daemon = try Daemon(binary: o.jambridge, port: p,
                            endpoints: "  a: { peer: PeerA }\n  b: { peer: PeerB }",
                            routes: "  - { from: a, to: b }")
        usleep(300_000)
        guard daemon.isRunning else { throw BenchError("jambridge exited at start:\n\(daemon.log)") }
        a = try BenchPeer(name: "PeerA", port: p + 2)
        b = try BenchPeer(name: "PeerB", port: p + 4)
        switch (withRelay, o.relay) {
        case (false, _): relay = nil
        case (true, "poll"): relay = try UDPRelay(frontPort: p + 6, backPort: p + 8, targetControlPort: p + 4)
        case (true, "process"): relay = ProcessRelay(frontPort: p + 6, backPort: p + 8, targetControlPort: p + 4)
        case (true, let kind): relay = try DispatchRelay(frontPort: p + 6, backPort: p + 8, targetControlPort: p + 4,
                                                         extraHop: kind.hasPrefix("dispatch-async"),
                                                         rescheduleTimer: kind.hasSuffix("-timer"))
        }
        relay?.start()
        a.start()
        b.start()
        a.invite(port: p, label: "jambridge")
        b.invite(port: p, label: "jambridge")
        if withRelay { a.invite(port: p + 6, label: "relay") }
        let (a, b) = (self.a, self.b)
        let joined = waitFor(seconds: 10) {
            a.joinedNames.isSuperset(of: withRelay ? ["Bridge", "PeerB"] : ["Bridge"])
                && b.joinedNames.isSuperset(of: withRelay ? ["Bridge", "PeerA"] : ["Bridge"])
        }
        guard joined else {
            throw BenchError("peers did not connect: A has \(a.joinedNames), B has \(b.joinedNames)\n\(daemon.log)")
        }
        usleep(500_000)
    }

    func finish() {
        a.close()
        b.close()
        relay?.stop()
        let status = daemon.stop()
        if status != 0 { log("jambridge exit status \(status)") }
        daemon.removeFiles()
    }
}

func runLatency(_ o: Options) throws {
    let rig = try Rig(o, withRelay: true)
    defer { rig.finish() }
    let perPath = Int(o.latencySeconds * Double(o.latencyRate))
    let warmup = min(500, perPath / 10)
    // Path 0: A -> relay -> B. Path 1: A -> jambridge -> B.
    let paths = [Collector(count: perPath, skip: warmup), Collector(count: perPath, skip: warmup)]
    let targets = ["PeerB", "Bridge"]
    rig.b.queue.sync {
        rig.b.onMessage = { message, peer, time in
            if peer.name == "Bridge" { paths[1].receive(message, at: time) }
            else if peer.name == "PeerA" { paths[0].receive(message, at: time) }
        }
    }
    let a = rig.a
    let interval = 1e9 / Double(o.latencyRate * 2) // the two paths alternate, half an interval apart
    let start = nowNanoseconds() + 10_000_000
    let cpu0 = ProcStats.cpuSeconds(rig.daemon.pid)
    for i in 0..<(perPath * 2) {
        sleepUntil(start + UInt64(Double(i) * interval))
        let path = i % 2, index = i / 2
        let target = targets[path]
        a.queue.sync {
            let t = MonotonicClock.now()
            paths[path].sendTimes.set(index, t.nanoseconds)
            a.session.send(SequenceCode.message(index), at: t) { $0.name == target }
            a.session.flush()
        }
    }
    let elapsed = Double(nowNanoseconds() - start) / 1e9
    let cpu = (ProcStats.cpuSeconds(rig.daemon.pid) - cpu0) / elapsed * 100
    _ = waitFor(seconds: 2) { rig.b.queue.sync { paths[0].received + paths[0].lost >= perPath && paths[1].received + paths[1].lost >= perPath } }
    let (relay, bridge) = rig.b.queue.sync { (Percentiles(paths[0].latencies), Percentiles(paths[1].latencies)) }
    let relayName = o.relay == "poll" ? "relay" : "relay-" + o.relay
    emit("== latency: A -> (\(relayName) | jambridge) -> B on 127.0.0.1, one note-on per RTP packet,")
    emit("   \(o.latencyRate)/s per path for \(o.latencySeconds) s, paths interleaved; first \(warmup) per path not counted")
    emit(Percentiles.header)
    emit(relay.row(relayName))
    emit(bridge.row("jambridge"))
    emit("ratio                        \(String(repeating: " ", count: 8)) \(f(bridge.p50 / relay.p50, decimals: 2)) \(f(bridge.p90 / relay.p90, decimals: 2)) \(f(bridge.p99 / relay.p99, decimals: 2)) \(f(bridge.p999 / relay.p999, decimals: 2)) \(f(bridge.max / relay.max, decimals: 2))")
    for (name, c) in zip([relayName, "jambridge"], paths) {
        rig.b.queue.sync {
            emit("\(name): sent \(perPath), received \(c.received), lost \(c.lost + perPath - c.expected), out of order \(c.backwards)")
        }
    }
    emit("jambridge CPU during the run: \(f(cpu, 0, decimals: 1)) %")
    // Stalls: runs of messages slower than 5 ms, with when they were sent (s after the start).
    for (name, c) in zip([relayName, "jambridge"], paths) {
        let episodes = rig.b.queue.sync { stallEpisodes(c.slowMessages, since: start) }
        if !episodes.isEmpty { emit("\(name) stalls (messages > 5 ms): \(episodes)") }
    }
    emit("RESULT latency relay=\(o.relay) relay_p50=\(relay.p50) relay_p99=\(relay.p99) jb_p50=\(bridge.p50) jb_p99=\(bridge.p99) ratio_p50=\(bridge.p50 / relay.p50) ratio_p99=\(bridge.p99 / relay.p99)")
}

/// Groups slow messages into episodes (gaps of more than 50 ms start a new one):
/// "at 3.21 s: 97 messages, worst 101.1 ms".
func stallEpisodes(_ slow: [(sent: UInt64, latency: UInt64)], since start: UInt64) -> String {
    var episodes: [(start: UInt64, count: Int, worst: UInt64)] = []
    var last: UInt64 = 0
    for (sent, latency) in slow {
        if let e = episodes.last, sent - last < 50_000_000 {
            episodes[episodes.count - 1] = (e.start, e.count + 1, max(e.worst, latency))
        } else {
            episodes.append((sent, 1, latency))
        }
        last = sent
    }
    return episodes.map {
        "at \(f(Double($0.start - start) / 1e9, 0, decimals: 2)) s: \($0.count) messages, worst \(f(Double($0.worst) / 1e6, 0, decimals: 1)) ms"
    }.joined(separator: "; ")
}

func runThroughput(_ o: Options) throws {
    let rig = try Rig(o, withRelay: false)
    defer { rig.finish() }
    let batches = Int(o.throughputSeconds * Double(o.throughputRate)) / o.batch
    let total = batches * o.batch
    let collector = Collector(count: total, skip: 0)
    rig.b.queue.sync { rig.b.onMessage = { message, _, time in collector.receive(message, at: time) } }
    let a = rig.a
    let interval = 1e9 * Double(o.batch) / Double(o.throughputRate)
    let pid = rig.daemon.pid
    let start = nowNanoseconds() + 10_000_000
    sleepUntil(start)
    let (cpu0, self0) = (ProcStats.cpuSeconds(pid), ProcStats.cpuSeconds(getpid()))
    var late = 0
    for k in 0..<batches {
        let slot = start + UInt64(Double(k) * interval)
        if nowNanoseconds() > slot + 1_000_000 { late += 1 }
        sleepUntil(slot)
        a.queue.sync {
            let t = MonotonicClock.now()
            collector.sendTimes.set(k * o.batch..<(k + 1) * o.batch, t.nanoseconds)
            for j in 0..<o.batch { a.session.send(SequenceCode.message(k * o.batch + j), at: t) }
            a.session.flush()
        }
    }
    let end = nowNanoseconds()
    let elapsed = Double(end - start) / 1e9
    let cpu = (ProcStats.cpuSeconds(pid) - cpu0) / elapsed * 100
    let selfCPU = (ProcStats.cpuSeconds(getpid()) - self0) / elapsed * 100
    _ = waitFor(seconds: 3) { rig.b.queue.sync { collector.received + collector.lost >= total } }
    let drained = Double(nowNanoseconds() - end) / 1e9
    let (received, lost, backwards, expected, latency) = rig.b.queue.sync {
        (collector.received, collector.lost, collector.backwards, collector.expected, Percentiles(collector.latencies))
    }
    let packetsA = a.counters.packetsSent
    let gapsB = rig.b.counters.sequenceGaps
    emit("== throughput: A -> jambridge -> B, \(o.batch) note-ons per RTP packet, target \(o.throughputRate) messages/s for \(o.throughputSeconds) s")
    emit("sent \(total) messages in \(packetsA) packets over \(f(elapsed, 0, decimals: 2)) s (\(Int(Double(total) / elapsed)) messages/s achieved, \(late) batches started >1 ms late)")
    emit("received \(received), missing \(lost + total - expected), out of order/duplicate \(backwards), B's RTP sequence gaps from jambridge \(gapsB)")
    emit("jambridge CPU: \(f(cpu, 0, decimals: 1)) % of one core (/proc/PID/stat utime+stime); benchmark process \(f(selfCPU, 0, decimals: 1)) %")
    emit("end-to-end latency per message (batch send -> receive) µs: p50 \(f(latency.p50, 0)) p90 \(f(latency.p90, 0)) p99 \(f(latency.p99, 0)) p99.9 \(f(latency.p999, 0)) max \(f(latency.max, 0)); drained \(f(drained * 1000, 0, decimals: 0)) ms after the last send")
    emit("RESULT throughput sent=\(total) received=\(received) missing=\(lost + total - expected) cpu=\(cpu)")
    let drops = rig.daemon.log.split(separator: "\n").filter { $0.contains("dropped") }
    if !drops.isEmpty { emit("jambridge log: \(drops.count) 'dropped' lines, first: \(drops[0])") }
}

func runIdle(_ o: Options) throws {
    let p = o.basePort
    let daemon = try Daemon(binary: o.jambridge, port: p,
                            endpoints: "  a: { peer: Peer01 }\n  b: { peer: Peer02 }",
                            routes: "  - { from: a, to: b }")
    defer { daemon.stop(); daemon.removeFiles() }
    usleep(1_000_000)
    guard daemon.isRunning else { throw BenchError("jambridge exited at start:\n\(daemon.log)") }
    let pid = daemon.pid
    let rss0 = ProcStats.status(pid, "VmRSS")
    let peers = try (1...o.peers).map { try BenchPeer(name: String(format: "Peer%02d", $0), port: p + 2 * UInt16($0)) }
    for peer in peers { peer.start() }
    for peer in peers { peer.invite(port: p, label: "jambridge") }
    guard waitFor(seconds: 15, { peers.allSatisfy { $0.joinedNames.contains("Bridge") } }) else {
        throw BenchError("not every peer connected\n\(daemon.log)")
    }
    let rssJoined = ProcStats.status(pid, "VmRSS")
    let (cpu0, t0) = (ProcStats.cpuSeconds(pid), nowNanoseconds())
    usleep(UInt32(o.idleSeconds * 1e6))
    let elapsed = Double(nowNanoseconds() - t0) / 1e9
    let cpu = (ProcStats.cpuSeconds(pid) - cpu0) / elapsed * 100
    let rss = ProcStats.status(pid, "VmRSS"), hwm = ProcStats.status(pid, "VmHWM")
    let anon = ProcStats.status(pid, "RssAnon"), file = ProcStats.status(pid, "RssFile"), threads = ProcStats.status(pid, "Threads")
    let connected = peers.filter { $0.joinedNames.contains("Bridge") }.count
    let joinedLines = daemon.log.split(separator: "\n").filter { $0.contains("joined") }.count
    let leftLines = daemon.log.split(separator: "\n").filter { $0.contains("left") }.count
    for peer in peers { peer.close() }
    let size = (try? FileManager.default.attributesOfItem(atPath: o.jambridge)[.size] as? Int) ?? -1
    emit("== idle: \(o.peers) peers connected to jambridge (they invited it; CK only, no MIDI), \(f(elapsed, 0, decimals: 1)) s")
    emit("binary \(o.jambridge): \(size / 1024) KiB")
    emit("VmRSS: \(rss0) kB before any peer, \(rssJoined) kB when all joined, \(rss) kB after \(Int(o.idleSeconds)) s (VmHWM \(hwm) kB; RssAnon \(anon) kB, RssFile \(file) kB; \(threads) threads)")
    emit("idle CPU: \(f(cpu, 0, decimals: 2)) % of one core (/proc/PID/stat utime+stime, 10 ms ticks)")
    emit("peers still connected at the end: \(connected)/\(o.peers); jambridge logged \(joinedLines) joins, \(leftLines) departures")
    emit("RESULT idle rss_kb=\(rss) cpu_pct=\(cpu)")
}

/// Diagnostic: what one `NameGlob.matches` costs. jambridge calls it per message for every
/// `peer:` endpoint (NetworkSession.session(received:)) and, per message, for every connected
/// peer (the filter NetworkSession.send hands to RTPMIDISession.send).
func runGlob() {
    let glob = NameGlob("PeerB"), names = ["PeerA", "PeerB"]
    var hits = 0
    for _ in 0..<10_000 { if glob.matches(names[hits & 1]) { hits += 1 } }
    var best = Double.infinity
    for _ in 0..<5 {
        let start = nowNanoseconds()
        for i in 0..<1_000_000 { if glob.matches(names[i & 1]) { hits += 1 } }
        best = min(best, Double(nowNanoseconds() - start) / 1e6)
    }
    emit("== NameGlob(\"PeerB\").matches on 5-character names: \(f(best, 0)) ns per call (best of 5 x 1M; \(hits) hits)")
}
