import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import JamBridge
import RouteFile

/// Which running daemon a control command goes to: `--control`'s socket, the daemon `--pid` names, the one `--daemon`
/// names (by process ID, a route file it runs or its session's name), or the only one running. A daemon still starting
/// (a `jambridge run` whose control socket is not there yet) is waited for, up to `startingWait`.
struct DaemonOptions: ParsableArguments {
    @Option(name: .customLong("pid"), help: "The process ID of the jambridge to talk to (when several run).")
    var pid: Int32?

    @Option(name: .customLong("daemon"), help: ArgumentHelp(
        "The jambridge to talk to (when several run): a route file it runs (as given to 'run', its file name, or any path to it), its session's name, or its process ID.",
        valueName: "which"))
    var which: String?

    @Option(name: .customLong("control"), help: ArgumentHelp("The control socket of the jambridge to talk to (as given to its 'run --control').", valueName: "path"))
    var control: String?

    /// How long the commands wait for a daemon that is starting, in seconds (jambridge(1) says so).
    static let startingWait = 30.0

    func validate() throws {
        if [pid != nil, which != nil, control != nil].filter({ $0 }).count > 1 {
            throw ValidationError("say which jambridge with one of --pid, --daemon and --control")
        }
    }

    /// How long the commands look for a `jambridge run` when none is starting: one started with `&` just before
    /// (`jambridge run x.yaml & jambridge start`) may not be a jambridge process yet.
    static let forkedWait = 0.5

    /// The socket of the daemon to talk to; waits up to `startingWait` for one that is starting.
    func socket() throws(DaemonChoiceError) -> String {
        let start = ContinuousClock.now
        let deadline = start + .seconds(Self.startingWait)
        while true {
            let error: DaemonChoiceError
            do {
                return try choose()
            } catch let notThere where notThere.notRunning {
                error = notThere
            }
            let starting = StartingDaemon.all(for: self)
            // None starting for `forkedWait`: none was, or the one starting opened its socket since `choose` looked; a
            // second look tells.
            if starting.isEmpty, ContinuousClock.now >= start + .seconds(Self.forkedWait) { return try choose() }
            guard ContinuousClock.now < deadline else {
                let pids = starting.map { String($0) }.joined(separator: ", ")
                throw DaemonChoiceError("\(error.message); jambridge run (process \(pids)) has not opened its control socket within "
                                        + "\(Int(Self.startingWait)) s", notRunning: true)
            }
            usleep(100_000)
        }
    }

    /// The socket of the daemon these options name, or why there is none or no single one.
    private func choose() throws(DaemonChoiceError) -> String {
        if let control {
            guard access(control, F_OK) == 0 else {
                throw DaemonChoiceError("no jambridge listens at \(control)", notRunning: true)
            }
            return control
        }
        let running: [ControlClient.Daemon]
        do { running = try ControlClient.daemons() } catch { throw DaemonChoiceError(error.message) }
        let wanted = pid ?? which.flatMap { Int32($0) }
        if let wanted {
            do { return try ControlClient.socket(pid: wanted) } catch { throw DaemonChoiceError(error.message + Self.listing(running), notRunning: true) }
        }
        if let which {
            let described = running.map(Described.init)
            let matching = described.filter { $0.isNamed(which) }
            guard matching.count == 1 else {
                throw DaemonChoiceError(matching.isEmpty
                    ? "no running jambridge runs a route file or a session named '\(which)'" + Self.listing(running, described)
                    : "\(matching.count) jambridge daemons answer to '\(which)'; say which with --pid" + Self.listing(matching.map(\.daemon), matching),
                    notRunning: matching.isEmpty)
            }
            return matching[0].daemon.path
        }
        guard running.count == 1 else {
            if running.isEmpty {
                // Listed again: one that opened its socket since (`jambridge run x.yaml & jambridge start`) is the one.
                do { return try ControlClient.socket(pid: nil) } catch { throw DaemonChoiceError(error.message, notRunning: true) }
            }
            throw DaemonChoiceError("\(running.count) jambridge daemons run; say which with --daemon (a route file, a session name or a process ID)"
                                    + Self.listing(running))
        }
        return running[0].path
    }

    /// `:` and a line per daemon (`  1234: routes/jam.yaml, keys.yaml; session 'Rack'`), or nothing if none runs.
    private static func listing(_ running: [ControlClient.Daemon], _ described: [Described]? = nil) -> String {
        guard !running.isEmpty else { return "" }
        return ":" + (described ?? running.map(Described.init)).map { "\n  \($0.line)" }.joined()
    }

    /// Sends `request` to the daemon and returns its reply; says why on standard error and exits 1 if it cannot be
    /// sent or is refused (with the route files' mistakes, for a reload).
    func send(_ request: ControlRequest, command: String) throws -> ControlReply {
        var standardError = StandardError()
        let reply: ControlReply
        do {
            reply = try ControlClient.send(request, to: try socket())
        } catch {
            print("jambridge \(command): \(error)", to: &standardError)
            throw ExitCode(1)
        }
        guard reply.ok else {
            print("jambridge \(command): \(reply.message)", to: &standardError)
            for error in reply.errors ?? [] { print(error, to: &standardError) }
            throw ExitCode(1)
        }
        return reply
    }

    /// Sends a command and prints the reply's message.
    func perform(_ request: ControlRequest, command: String) throws {
        print(try send(request, command: command).message)
    }
}

/// Why no single daemon could be chosen; `notRunning` if the one asked for (or any) is not there, which is worth
/// waiting for while one is starting.
struct DaemonChoiceError: Error, CustomStringConvertible {
    var message: String
    var notRunning = false
    init(_ message: String, notRunning: Bool = false) {
        self.message = message
        self.notRunning = notRunning
    }
    var description: String { message }
}

/// A running daemon with what its status says about it: its route files and its session.
private struct Described {
    var daemon: ControlClient.Daemon
    var status: DaemonStatus?

    init(_ daemon: ControlClient.Daemon) {
        self.daemon = daemon
        status = try? ControlClient.send(.status, to: daemon.path).status
    }

    /// `1234: routes/jam.yaml, keys.yaml; session 'Rack'`.
    var line: String {
        guard let status else { return "\(daemon.pid): (no answer)" }
        return "\(daemon.pid): \(status.routeFiles.joined(separator: ", "))"
            + (status.session.map { "; session '\($0.name)'" } ?? "; no session")
    }

    /// True if `name` is its session's name or one of its route files: as given to `run`, by its file name alone, or
    /// by another path to the same file (relative paths taken from the daemon's working directory where it is readable).
    func isNamed(_ name: String) -> Bool {
        guard let status else { return false }
        if status.session?.name == name { return true }
        let mine = canonical(name, from: FilePaths.currentDirectory())
        let directory = Self.link("/proc/\(daemon.pid)/cwd")
        return status.routeFiles.contains { file in
            file == name || (!name.contains("/") && FilePaths.name(of: file) == name)
                || (mine != nil && directory.flatMap { canonical(file, from: $0) } == mine)
        }
    }

    /// Where the symbolic link at `path` points, or nil if it cannot be read.
    private static func link(_ path: String) -> String? {
        var target = [UInt8](repeating: 0, count: Int(PATH_MAX))
        let count = target.withUnsafeMutableBytes { readlink(path, $0.baseAddress!.assumingMemoryBound(to: CChar.self), $0.count) }
        return count > 0 ? String(decoding: target[..<count], as: UTF8.self) : nil
    }

    /// `path` (from `directory` if relative) with its links resolved, or nil if there is no such file.
    private func canonical(_ path: String, from directory: String) -> String? {
        let absolute = path.hasPrefix("/") ? path : directory + "/" + path
        guard let resolved = realpath(absolute, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}

/// `jambridge run` processes that have no control socket yet: started, still loading their route files.
private enum StartingDaemon {
    /// The process IDs of those `options` could be waiting for: any, or the one `--pid` (`--daemon`) names; with
    /// `--control`, those started with it.
    static func all(for options: DaemonOptions) -> [Int32] {
        let running = Set(((try? ControlClient.daemons()) ?? []).map(\.pid))
        let wanted = options.pid ?? options.which.flatMap { Int32($0) }
        let processes = FilePaths.entries(ofFolder: "/proc")
        return processes.compactMap { Int32($0) }.filter { pid in
            guard pid != getpid(), !running.contains(pid), wanted == nil || wanted == pid,
                  let data = try? RegularFile.contents(atPath: "/proc/\(pid)/cmdline", limit: 1 << 16) else { return false }
            let arguments = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            guard arguments.count >= 2, FilePaths.name(of: arguments[0]) == "jambridge", arguments[1] == "run" else { return false }
            return arguments.contains("--control") == (options.control != nil)
        }.sorted()
    }
}
