import Bonjour
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// What `jambridge peers` prints: RTP-MIDI sessions announced on the network (Bonjour) and
/// the sessions of jambridge processes on this machine with their connected peers (asked through their control
/// sockets).
public enum PeerListing {
    /// Browses Bonjour for `seconds`, then describes what was found and what runs here.
    /// Problems (no avahi daemon) come back as warnings; the rest is still listed.
    public static func report(browseSeconds seconds: Double) -> (text: String, warnings: [String]) {
        var warnings: [String] = []
        var text = "# sessions announced on the network (Bonjour, \(seconds.secondsText) s)\n"
        switch browse(seconds: seconds) {
        case .success(let services) where services.isEmpty:
            text += "# none\n"
        case .success(let services):
            for service in services {
                let addresses = service.addresses.map { $0.contains(":") ? "[\($0)]:\(service.port)" : "\($0):\(service.port)" }
                text += "\(quoted(service.name))\t\(service.host)\t\(addresses.joined(separator: " "))\n"
            }
        case .failure(let error):
            warnings.append("\(error)")
            text += "# not available\n"
        }
        text += "# sessions of jambridge on this machine\n"
        var sessions: [(pid: Int32, session: DaemonStatus.Session)] = []
        do {
            for daemon in try ControlClient.daemons() {
                do {
                    if let session = try ControlClient.send(.status, to: daemon.path).status?.session { sessions.append((daemon.pid, session)) }
                } catch {
                    warnings.append("\(error)")
                }
            }
        } catch {
            warnings.append("\(error)")
        }
        if sessions.isEmpty { text += "# none\n" }
        for (pid, session) in sessions {
            text += "\(quoted(session.name))\tport \(session.port)\tpid \(pid)\t\(session.peers.count) connected\n"
            for peer in session.peers {
                let roundTrip = peer.roundTripMs.map { "round trip \($0.decimal(1)) ms" } ?? "not synced yet"
                text += "  peer \(quoted(peer.name))\t\(peer.address)\t\(roundTrip)\t\(peer.weInvited ? "we invited it" : "it invited us")\n"
            }
        }
        return (text, warnings)
    }

    /// The services announced within `seconds`, by name.
    private static func browse(seconds: Double) -> Result<[DiscoveredService], BonjourError> {
        let queue = DispatchQueue(label: "jambridge.peers")
        let found = FoundServices()
        let browser: BonjourBrowser
        do {
            browser = try BonjourBrowser(queue: queue) { event in found.apply(event) }
        } catch {
            return .failure(error)
        }
        usleep(UInt32(seconds * 1_000_000))  // --browse is 0 to 60 s
        queue.sync { browser.cancel() }
        return .success(queue.sync { found.services.values.sorted { $0.name < $1.name } })
    }

    /// A name in double quotes, as a route file's `invite:` or `peer:` takes it.
    private static func quoted(_ name: String) -> String {
        "\"" + name.flatMap { $0 == "\\" || $0 == "\"" ? ["\\", $0] : [$0] } + "\""
    }
}

/// Services seen so far; touched only on the browser's queue.
private final class FoundServices: @unchecked Sendable {
    var services: [String: DiscoveredService] = [:]

    func apply(_ event: BrowseEvent) {
        switch event {
        case .found(let service): services[service.name] = service
        case .lost(let name): services[name] = nil
        }
    }
}
