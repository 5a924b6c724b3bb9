#if canImport(Glibc)
import Glibc
#endif
import Logging

/// Log lines for the systemd journal, written to standard error when it is the journal's stream: no timestamp (the
/// journal stamps each line) and no label (the journal names the unit), each line starting with its syslog priority
/// (`<3>` for an error ... `<7>` for debug), which journald takes as the entry's level (`journalctl -p warning`).
/// A message of several lines gives each its priority, so none of them is read as information.
public struct JournalLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?

    public init() {}

    /// True when standard error is the journal's stream: systemd sets `$JOURNAL_STREAM` to its device and inode
    /// (`DEV:INO`). Compared with standard error itself, so a program whose error output was sent elsewhere (a file,
    /// a pipe) keeps its timestamps even when it inherited the variable.
    public static var standardErrorIsJournal: Bool {
        guard let variable = getenv("JOURNAL_STREAM") else { return false }
        var status = stat()
        guard fstat(2, &status) == 0 else { return false }
        return String(cString: variable) == "\(status.st_dev):\(status.st_ino)"
    }

    /// `text` with every line prefixed by `level`'s syslog priority, each ending in a newline.
    public static func lines(_ text: String, level: Logger.Level) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { "<\(level.syslogPriority)>\($0)\n" }.joined()
    }

    public func log(event: LogEvent) {
        var merged = metadata.merging(metadataProvider?.get() ?? [:]) { $1 }.merging(event.metadata ?? [:]) { $1 }
        if let error = event.error { merged["error"] = "\(error)" }
        let suffix = merged.sorted { $0.key < $1.key }.map { " \($0.key)=\($0.value)" }.joined()
        FileHandleOutput.standardError(Self.lines("\(event.message)\(suffix)", level: event.level))
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
}

extension Logger.Level {
    /// The syslog priority journald reads from a line's `<N>` prefix.
    var syslogPriority: Int {
        switch self {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }
}
