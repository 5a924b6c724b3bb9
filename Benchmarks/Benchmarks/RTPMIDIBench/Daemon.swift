#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A `jambridge run ROUTEFILE` child process, and what /proc says about it.
final class Daemon {
    let process = Process()
    let directory: URL
    let logURL: URL

    /// Starts `binary run` on a route file with a session called Bridge on 127.0.0.1:`port`
    /// (no Bonjour) and the routes `routes` (YAML lines under `routes:`).
    init(binary: String, port: UInt16, endpoints: String, routes: String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("rtpmidi-bench-\(getpid())-\(port)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let routeFile = directory.appendingPathComponent("routes.yaml")
        try """
            session:
              name: Bridge
              port: \(port)
              bind: 127.0.0.1
              advertise: false
            endpoints:
            \(endpoints)
            routes:
            \(routes)
            """.write(to: routeFile, atomically: true, encoding: .utf8)
        logURL = directory.appendingPathComponent("jambridge.log")
        _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["run", routeFile.path]
        process.standardError = try FileHandle(forWritingTo: logURL)
        process.standardOutput = FileHandle.nullDevice
        var environment = ProcessInfo.processInfo.environment
        environment["AVAHI_COMPAT_NOWARN"] = "1"
        process.environment = environment
        try process.run()
    }

    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }
    var log: String { (try? String(contentsOf: logURL, encoding: .utf8)) ?? "" }

    /// SIGINT, then waits; returns the exit status (or -1 if it had to be killed).
    @discardableResult
    func stop() -> Int32 {
        guard process.isRunning else { return process.terminationStatus }
        process.interrupt()
        if !waitFor(seconds: 5, { !process.isRunning }) {
            kill(pid, SIGKILL)
            process.waitUntilExit()
            return -1
        }
        return process.terminationStatus
    }

    func removeFiles() { try? FileManager.default.removeItem(at: directory) }
}

/// CPU time and memory of a process, from /proc.
enum ProcStats {
    /// utime + stime of every thread, living or exited, in seconds (clock-tick resolution).
    static func cpuSeconds(_ pid: Int32) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return .nan }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // fields[0] is field 3 (state): utime is field 14, stime field 15.
        let ticks = (Double(fields[11]) ?? .nan) + (Double(fields[12]) ?? .nan)
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// A field of /proc/PID/status in kB (VmRSS, VmHWM, RssAnon, RssFile...), or Threads as a count.
    static func status(_ pid: Int32, _ key: String) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return -1 }
        for line in text.split(separator: "\n") where line.hasPrefix(key + ":") {
            return Int(line.dropFirst(key.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "") ?? -1
        }
        return -1
    }
}

/// Nearest-rank percentiles of latencies in nanoseconds, shown in microseconds.
struct Percentiles {
    let count: Int
    let p50, p90, p99, p999, max: Double

    init(_ samples: [UInt64]) {
        let sorted = samples.sorted()
        count = sorted.count
        func at(_ q: Double) -> Double {
            guard !sorted.isEmpty else { return .nan }
            let rank = Int((q * Double(sorted.count)).rounded(.up)) - 1
            return Double(sorted[Swift.max(0, Swift.min(sorted.count - 1, rank))]) / 1000
        }
        p50 = at(0.50); p90 = at(0.90); p99 = at(0.99); p999 = at(0.999); max = at(1)
    }

    func row(_ label: String) -> String {
        "\(label.padding(toLength: 28, withPad: " ", startingAt: 0)) \(pad(count, 8)) \(f(p50)) \(f(p90)) \(f(p99)) \(f(p999)) \(f(max))"
    }

    static let header = "path                              n      p50      p90      p99    p99.9      max   (µs)"
}

func f(_ value: Double, _ width: Int = 8, decimals: Int = 1) -> String {
    let text = String(format: "%.\(decimals)f", value)
    return String(repeating: " ", count: max(0, width - text.count)) + text
}

func pad(_ value: Int, _ width: Int) -> String {
    let text = String(value)
    return String(repeating: " ", count: max(0, width - text.count)) + text
}
