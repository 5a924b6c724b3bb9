#if canImport(Glibc)
import Glibc
#endif
import Logging

/// Tells systemd how the daemon is doing (a `Type=notify` unit), by sd_notify's protocol without libsystemd: each
/// notice is one datagram of `KEY=VALUE` lines sent to the AF_UNIX socket named by `$NOTIFY_SOCKET` (a path, or an
/// abstract name written with a leading `@`). Without `$NOTIFY_SOCKET` (not started by systemd) it sends nothing.
struct ServiceNotifier {
    /// The socket's address as sockaddr_un's path bytes (a leading NUL for an abstract name), or nil.
    private let address: [UInt8]?
    private let logger: Logger

    /// A notifier for the socket in `$NOTIFY_SOCKET`, logging to `logger` a notice it cannot send.
    init(logger: Logger) {
        self.logger = logger
        guard let variable = getenv("NOTIFY_SOCKET") else {
            address = nil
            return
        }
        var bytes = Array(String(cString: variable).utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
        address = bytes.isEmpty ? nil : bytes
    }

    /// Sends `lines` in one notice: `READY=1`, `STATUS=...` and the like.
    func notify(_ lines: String...) {
        guard let address else { return }
        let state = lines[0]
        var socketAddress = sockaddr_un()
        socketAddress.sun_family = sa_family_t(AF_UNIX)
        guard address.count < MemoryLayout.size(ofValue: socketAddress.sun_path) else {
            logger.warning("cannot tell systemd '\(state)': NOTIFY_SOCKET is too long")
            return
        }
        withUnsafeMutableBytes(of: &socketAddress.sun_path) { $0.copyBytes(from: address) }
        // An abstract name is exactly its bytes; a path is followed by its NUL.
        let length = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + address.count + (address[0] == 0 ? 0 : 1)
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else {
            logger.warning("cannot tell systemd '\(state)': \(String(cString: strerror(errno)))")
            return
        }
        defer { close(descriptor) }
        let message = Array(lines.joined(separator: "\n").utf8)
        let sent = withUnsafePointer(to: &socketAddress) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(descriptor, message, message.count, Int32(MSG_NOSIGNAL), $0, socklen_t(length))
            }
        }
        if sent < 0 { logger.warning("cannot tell systemd '\(state)': \(String(cString: strerror(errno)))") }
    }

    /// `MONOTONIC_USEC=` now: what systemd wants with `RELOADING=1`, to tell this reload from an earlier one.
    static func monotonicMicroseconds() -> String {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return "MONOTONIC_USEC=\(Int(now.tv_sec) * 1_000_000 + Int(now.tv_nsec) / 1000)"
    }
}
