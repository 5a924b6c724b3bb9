import Foundation
import RTPMIDI

/// What a running session publishes about itself for `jambridge peers`: one small text file
/// per session in the status directory, rewritten when peers come, go or sync their clocks,
/// removed on stop.
public enum SessionStatus {
    /// Under systemd the unit's runtime directory (`$RUNTIME_DIRECTORY`), else `/run/jambridge` for root, else
    /// `$XDG_RUNTIME_DIR/jambridge`, else `/tmp/jambridge-UID` (`JAMBRIDGE_STATUS_DIR` overrides).
    public static var directory: String {
        let environment = ProcessInfo.processInfo.environment
        if let chosen = environment["JAMBRIDGE_STATUS_DIR"], !chosen.isEmpty { return chosen }
        if let service = systemdRuntimeDirectory() { return service }
        if getuid() == 0 { return "/run/jambridge" }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty { return runtime + "/jambridge" }
        return "/tmp/jambridge-\(getuid())"
    }

    /// The file of the session on `port` of this process.
    static func path(port: UInt16) -> String { "\(directory)/session-\(getpid())-\(port).status" }

    /// Writes the status of session `name` on `port` with `peers`: to a temporary file renamed
    /// over the old one, so a reader never sees half of it (no fsync: it is rewritten often and
    /// worthless after a crash).
    static func write(name: String, port: UInt16, peers: [PeerInfo]) {
        var text = "session\t\(getpid())\t\(port)\t\(name)\n"
        for peer in peers {
            let roundTrip = peer.clock.map { String(format: "%.1f", $0.roundTripMilliseconds) } ?? "-"
            text += "peer\t\(peer.address)\t\(roundTrip)\t\(peer.weInvited ? "invited" : "joined")\t\(peer.name)\n"
        }
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let final = path(port: port), temporary = final + ".new"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        close(fd)
        if written == bytes.count { rename(temporary, final) } else { unlink(temporary) }
    }

    /// Removes the status of the session on `port`.
    static func remove(port: UInt16) {
        try? FileManager.default.removeItem(atPath: path(port: port))
    }

    /// One running session as its status file describes it.
    public struct Entry: Equatable, Sendable {
        /// The process running it.
        public var pid: Int32
        /// Its control port.
        public var port: UInt16
        /// Its name.
        public var name: String
        /// Its connected peers: address, round trip in ms ("-" before the first sync), who invited, name.
        public var peers: [(address: String, roundTrip: String, how: String, name: String)]

        public static func == (a: Self, b: Self) -> Bool {
            a.pid == b.pid && a.port == b.port && a.name == b.name
                && a.peers.map { [$0.address, $0.roundTrip, $0.how, $0.name] } == b.peers.map { [$0.address, $0.roundTrip, $0.how, $0.name] }
        }
    }

    /// The sessions of running jambridge processes (files left by processes that are gone,
    /// killed before they could remove them, are removed).
    public static func running() -> [Entry] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var entries: [Entry] = []
        for file in files.sorted() where file.hasSuffix(".status") {
            guard let text = try? String(contentsOfFile: "\(directory)/\(file)", encoding: .utf8) else { continue }
            var entry: Entry?
            for line in text.split(separator: "\n") {
                let fields = line.split(separator: "\t", maxSplits: 4, omittingEmptySubsequences: false).map(String.init)
                if fields.count == 4, fields[0] == "session", let pid = Int32(fields[1]), let port = UInt16(fields[2]) {
                    entry = Entry(pid: pid, port: port, name: fields[3], peers: [])
                } else if fields.count == 5, fields[0] == "peer" {
                    entry?.peers.append((fields[1], fields[2], fields[3], fields[4]))
                }
            }
            guard let entry else { continue }
            if kill(entry.pid, 0) == 0 || errno == EPERM {
                entries.append(entry)
            } else {
                unlink("\(directory)/\(file)")
            }
        }
        return entries
    }
}
