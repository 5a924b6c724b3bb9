import Foundation
import JamBridge

/// What `jambridge status --json` prints of the daemon `pid` (or of the one at `control`), decoded; nil if it fails.
func daemonStatus(_ pid: Int32? = nil, control: String? = nil) throws -> DaemonStatus? {
    let target = control.map { ["--control", $0] } ?? ["--pid", "\(pid!)"]
    let result = try jambridge(["status", "--json"] + target, killingAfter: 30)
    guard result.status == 0 else { return nil }
    return try? JSONDecoder().decode(DaemonStatus.self, from: Data(result.out.utf8))
}
