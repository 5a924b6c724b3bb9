#if canImport(Glibc)
import Glibc
#endif
import Jam
import JSON
import RouteFile


/// Where control sockets are: `run --control PATH` puts a daemon's where it says; otherwise it is
/// `control-PID.sock` in `directory`.
public enum ControlPath {
    /// The directory of daemons' sockets: `$RUNTIME_DIRECTORY` (systemd's `RuntimeDirectory=`; the first, if it
    /// names several), else `/run/jambridge` for root, else `$XDG_RUNTIME_DIR/jambridge`, else `/tmp/jambridge-UID`.
    public static var directory: String {
        func environment(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
        if let runtime = environment("RUNTIME_DIRECTORY")?.split(separator: ":").first { return String(runtime) }
        if getuid() == 0 { return systemDirectory }
        if let runtime = environment("XDG_RUNTIME_DIR"), !runtime.isEmpty { return runtime + "/jambridge" }
        return "/tmp/jambridge-\(getuid())"
    }

    /// Where a daemon run by root (or by systemd) puts its socket.
    static let systemDirectory = "/run/jambridge"

    /// Makes `directory` if it is not there: mode 0700, or 0755 for `systemDirectory` (whose sockets the members of
    /// their group may reach). Throws if it is not this user's alone (`distrust(of:)`).
    static func prepare(_ directory: String) throws(ControlDirectoryError) {
        if mkdir(directory, directory == systemDirectory ? 0o755 : 0o700) != 0, errno != EEXIST {
            throw ControlDirectoryError(directory: directory, problem: "cannot be made: \(String(cString: strerror(errno)))")
        }
        if let problem = distrust(of: directory) { throw ControlDirectoryError(directory: directory, problem: problem) }
    }

    /// Why sockets in `directory` cannot be trusted, or nil if they can (or it is not there): it must be a directory
    /// (not a link to one) owned by this user and writable by nobody else, or another user could put a socket of
    /// their own there and answer in a daemon's place (as tmux and ssh-agent check theirs).
    static func distrust(of directory: String) -> String? {
        var info = stat()
        guard lstat(directory, &info) == 0 else { return errno == ENOENT ? nil : "cannot be read: \(String(cString: strerror(errno)))" }
        guard info.st_mode & S_IFMT == S_IFDIR else { return "is not a directory (a link or a file is in its place); remove it" }
        guard info.st_uid == geteuid() else {
            return "belongs to \(user(info.st_uid)), not to you (\(user(geteuid()))): another user could answer in jambridge's place. "
                + "Remove it (sudo rm -r \(directory)), or set XDG_RUNTIME_DIR to a directory of your own"
        }
        let writable = info.st_mode & 0o022
        guard writable == 0 else {
            return "can be written by \(writable == 0o020 ? "its group" : "others") (mode \(String(info.st_mode & 0o7777, radix: 8))): "
                + "another user could put a socket of their own in it and answer in jambridge's place. "
                + "Make it yours alone (chmod 700 \(directory)), or remove it"
        }
        return nil
    }

    /// `user 'nobody' (65534)`, or `user 65534` if it has no name.
    private static func user(_ uid: uid_t) -> String {
        guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else { return "user \(uid)" }
        return "user '\(String(cString: name))' (\(uid))"
    }

    /// The socket of the daemon `pid`, in `directory`.
    public static func socket(pid: Int32) -> String { "\(directory)/control-\(pid).sock" }

    /// Where clients look for running daemons: `directory`, and `systemDirectory` too (a system daemon's socket,
    /// which members of its group may use).
    static var searched: [String] { directory == systemDirectory ? [directory] : [directory, systemDirectory] }
}

/// What the drum sequencer is told while it plays: a style (built-in or a style file's path) from the next bar
/// line, a level to keep (nil: follow the activity), voices muted or not.
public enum DrumsCommand: Equatable, Sendable {
    case style(String)
    case level(Int?)
    case mute([String], Bool)
}

/// A command to the running jam (`start`, `stop`, `tempo`) or its drums.
public enum ControlCommand: Equatable, Sendable {
    case jam(JamCommand)
    case drums(DrumsCommand)
}

/// A request to the control socket, as a line of JSON: `{"command": "status"}`, `{"command": "reload"}`,
/// `{"command": "start"}`, `{"command": "stop"}`, `{"command": "tempo", "bpm": 128}`,
/// `{"command": "drums-style", "style": "funk"}`, `{"command": "drums-level", "level": 2}` (0: follow the activity),
/// `{"command": "drums-mute", "voices": ["clap"], "on": true}`.
public enum ControlRequest: Equatable, Sendable {
    case status
    case reload
    case command(ControlCommand)

    /// The request in a line of JSON, or nil if it is none.
    public init?(json: [UInt8]) {
        guard let object = try? JSONValue(parsing: json), let command = object["command"]?.string else { return nil }
        switch command {
        case "start": self = .command(.jam(.start))
        case "stop": self = .command(.jam(.stop))
        case "status": self = .status
        case "reload": self = .reload
        case "tempo":
            guard let bpm = object["bpm"]?.double else { return nil }
            self = .command(.jam(.tempo(bpm)))
        case "drums-style":
            guard let style = object["style"]?.string else { return nil }
            self = .command(.drums(.style(style)))
        case "drums-level":
            guard let level = object["level"]?.int else { return nil }
            self = .command(.drums(.level(level == 0 ? nil : level)))
        case "drums-mute":
            guard let items = object["voices"]?.array, case let voices = items.compactMap(\.string), voices.count == items.count,
                  let on = object["on"]?.bool else { return nil }
            self = .command(.drums(.mute(voices, on)))
        default: return nil
        }
    }

    /// The request as a line of JSON (without the newline).
    public var json: [UInt8] {
        func request(_ command: String, _ arguments: (key: String, value: JSONValue)...) -> [UInt8] {
            Array(JSONValue.object([("command", .string(command))] + arguments).text().utf8)
        }
        switch self {
        case .status: return request("status")
        case .reload: return request("reload")
        case .command(.jam(.start)): return request("start")
        case .command(.jam(.stop)): return request("stop")
        case .command(.jam(.tempo(let bpm))): return request("tempo", ("bpm", bpm.isFinite ? .number("\(bpm)") : .null))
        case .command(.drums(.style(let style))): return request("drums-style", ("style", .string(style)))
        case .command(.drums(.level(let level))): return request("drums-level", ("level", .number(String(level ?? 0))))
        case .command(.drums(.mute(let voices, let on))):
            return request("drums-mute", ("voices", .array(voices.map(JSONValue.string))), ("on", .bool(on)))
        }
    }

    /// How long a client waits for the answer: a reload may stop and start parts (a session saying goodbye).
    var answerTimeout: Int { self == .reload ? 60 : 5 }
}

/// The control socket's answer, as a line of JSON: `{"ok": true, "message": "..."}` with `status` for a status
/// request and `reload` for a reload, or `{"ok": false, "message": "why"}` with the route files' mistakes in
/// `errors` when a reload is refused.
public struct ControlReply: Codable, Equatable, Sendable {
    public var ok: Bool
    public var message: String
    /// What the daemon is doing (`status`).
    public var status: DaemonStatus?
    /// What a reload changed.
    public var reload: ReloadOutcome?
    /// Why a reload was refused: every mistake, `file:line:column: message`.
    public var errors: [String]?

    public init(ok: Bool, message: String, status: DaemonStatus? = nil, reload: ReloadOutcome? = nil, errors: [String]? = nil) {
        self.ok = ok
        self.message = message
        self.status = status
        self.reload = reload
        self.errors = errors
    }

    /// The reply in a line of JSON, or nil if it is none.
    public init?(json: [UInt8]) {
        guard let reply = try? JSONReader().value(Self.self, from: json) else { return nil }
        self = reply
    }

    /// The reply as a line of JSON (without the newline).
    var line: [UInt8] {
        (try? JSONWriter.status().bytes(self)) ?? Array(#"{"message":"the reply could not be encoded","ok":false}"#.utf8)
    }
}
