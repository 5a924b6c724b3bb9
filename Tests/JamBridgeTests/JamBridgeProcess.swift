import Foundation

/// The built `jambridge` executable: `JAMBRIDGE_EXECUTABLE` if set (scripts/alsa-tests.sh gives the VM suites the
/// release build), else the one beside the test bundle.
let executable = ProcessInfo.processInfo.environment["JAMBRIDGE_EXECUTABLE"].map { URL(fileURLWithPath: $0) }
    ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("jambridge")

/// The repository's top directory.
let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// The Python with PyPI pymidi, python-osc and mido that scripts/install-deps.sh sets up.
let peersPython = repositoryRoot.appendingPathComponent(".build-peers/venv/bin/python")

/// A jambridge process running in the background; `finish` waits for it and collects its output.
final class JamBridgeProcess: @unchecked Sendable { // the output buffers are written under `lock`, and by the readers only
    private let process = Process()
    private let out = Pipe(), err = Pipe()
    private var outData = Data(), errData = Data()
    private let lock = NSLock()
    private let readers = DispatchGroup()

    /// Starts jambridge (or `launcher`, e.g. a shell running jambridge somewhere else) with
    /// `arguments` in the repository's top directory; with `journal`, its standard error is what systemd's
    /// journal stream would be (`JOURNAL_STREAM` names that pipe); with `terminal`, its standard output is a
    /// pseudo-terminal, as in a shell's window (output taken as written: no carriage return added before a newline).
    init(_ arguments: [String], launcher: String? = nil, environment: [String: String] = [:], journal: Bool = false,
         terminal: Bool = false) throws {
        process.executableURL = launcher.map { URL(fileURLWithPath: $0) } ?? executable
        process.arguments = arguments
        process.currentDirectoryURL = repositoryRoot
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        if journal {
            var status = stat()
            fstat(err.fileHandleForWriting.fileDescriptor, &status)
            process.environment!["JOURNAL_STREAM"] = "\(status.st_dev):\(status.st_ino)"
        }
        var terminalEnds: (controller: Int32, device: Int32) = (-1, -1)
        if terminal {
            // posix_openpt, unlockpt and ptsname as Linux does them (Glibc's module leaves those out): TIOCSPTLCK and
            // TIOCGPTN, whose macros Swift cannot import.
            terminalEnds.controller = open("/dev/ptmx", O_RDWR | O_NOCTTY)
            var unlocked: Int32 = 0, number: UInt32 = 0
            guard terminalEnds.controller >= 0, ioctl(terminalEnds.controller, 0x4004_5431, &unlocked) == 0,
                  ioctl(terminalEnds.controller, 0x8004_5430, &number) == 0 else { throw POSIXError(.ENOTTY) }
            terminalEnds.device = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY)
            guard terminalEnds.device >= 0 else { throw POSIXError(.ENOTTY) }
            var settings = termios()
            tcgetattr(terminalEnds.device, &settings)
            settings.c_oflag &= ~tcflag_t(OPOST)
            tcsetattr(terminalEnds.device, TCSANOW, &settings)
            process.standardOutput = FileHandle(fileDescriptor: terminalEnds.device, closeOnDealloc: false)
        } else {
            process.standardOutput = out
        }
        process.standardError = err
        try process.run()
        if terminal {
            // The terminal's other end reads until the process (the last holder of the device) is gone: EIO.
            close(terminalEnds.device)
            let controller = terminalEnds.controller
            readers.enter()
            DispatchQueue.global().async { [self] in
                var buffer = [UInt8](repeating: 0, count: 65536)
                while true {
                    let count = read(controller, &buffer, buffer.count)
                    guard count > 0 else { break }
                    lock.withLock { outData.append(contentsOf: buffer[..<count]) }
                }
                close(controller)
                readers.leave()
            }
        }
        // Drain both pipes while it runs, so a chatty process never blocks on a full pipe.
        for (pipe, keyPath) in terminal ? [(err, \JamBridgeProcess.errData)] : [(out, \JamBridgeProcess.outData), (err, \JamBridgeProcess.errData)] {
            readers.enter()
            DispatchQueue.global().async { [self] in
                while true {
                    let data = pipe.fileHandleForReading.availableData
                    if data.isEmpty { break }
                    lock.withLock { self[keyPath: keyPath].append(data) }
                }
                readers.leave()
            }
        }
    }

    /// Its process ID.
    var pid: Int32 { process.processIdentifier }

    /// Asks it to stop, as Ctrl-C does.
    func interrupt() { process.interrupt() }

    /// What it has written to standard error so far.
    var errorSoFar: String { lock.withLock { String(decoding: errData, as: UTF8.self) } }

    /// Waits (at most `seconds`) until standard error contains `text`; false if it did not.
    func waitForError(containing text: String, seconds: Double = 60) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !errorSoFar.contains(text) {
            guard Date() < deadline, process.isRunning else { return errorSoFar.contains(text) }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return true
    }

    /// Waits (at most `seconds`) until standard output contains `text` `count` times; false if it did not.
    func waitForOutput(containing text: String, count: Int = 1, seconds: Double = 60) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        let found = { self.lock.withLock { String(decoding: self.outData, as: UTF8.self) }.components(separatedBy: text).count - 1 >= count }
        while !found() {
            guard Date() < deadline, process.isRunning else { return found() }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return true
    }

    /// Waits for it to exit; returns its status, standard output and standard error. If it is still running
    /// after `seconds` (if given), it is killed (SIGKILL): a hang shows as status 9, not as a test that never ends.
    func finish(killingAfter seconds: Double? = nil) -> (status: Int32, out: String, err: String) {
        if let seconds {
            let deadline = Date().addingTimeInterval(seconds)
            while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
            if process.isRunning { kill(pid, SIGKILL) }
        }
        process.waitUntilExit()
        readers.wait()
        return lock.withLock {
            (process.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
        }
    }
}

/// Runs jambridge with `arguments` (killed if it runs for more than `killingAfter` seconds, if given); returns
/// its exit status, standard output and standard error.
func jambridge(_ arguments: [String], killingAfter seconds: Double? = nil) throws -> (status: Int32, out: String, err: String) {
    try JamBridgeProcess(arguments).finish(killingAfter: seconds)
}

/// Runs `executable` with `arguments` to completion, its environment this process's with `environment` laid over
/// it; returns its status and standard output (with its standard error after `mergingErrors`, which is otherwise
/// discarded). posix_spawn and waitpid rather than Foundation's Process, which was seen to miss the exit of a script
/// that starts daemons (scripts/avahi-lab.sh up).
@discardableResult
func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
         mergingErrors: Bool = false) throws -> (status: Int32, out: String) {
    var pipeEnds: [Int32] = [0, 0]
    guard pipe(&pipeEnds) == 0 else { throw POSIXError(.EMFILE) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
    if mergingErrors {
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 2)
    } else {
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    }
    posix_spawn_file_actions_addclose(&actions, pipeEnds[0])
    posix_spawn_file_actions_addclose(&actions, pipeEnds[1])
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    let variables = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { for pointer in envp { free(pointer) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
    close(pipeEnds[1])
    guard spawned == 0 else {
        close(pipeEnds[0])
        throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .ENOENT)
    }
    let output = FileHandle(fileDescriptor: pipeEnds[0], closeOnDealloc: true).readDataToEndOfFile()
    return (waitForExit(pid), String(decoding: output, as: UTF8.self))
}

/// Waits for the child `pid` to end; its exit status, or 128 + the signal that ended it (as a shell says).
func waitForExit(_ pid: pid_t) -> Int32 {
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    return (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
}

/// True if a UDP socket is bound to `port` on any address, by /proc/net/udp{,6} (probing by binding the port
/// could take it from jambridge at the moment it binds).
func isBound(_ port: UInt16) -> Bool {
    let hex = ":" + String(format: "%04X", port)
    return ["/proc/net/udp", "/proc/net/udp6"].contains { table in
        let lines = (try? String(contentsOfFile: table, encoding: .utf8))?.split(separator: "\n").dropFirst() ?? []
        // Columns: sl local_address rem_address st ...; the local address ends with :PORT in hex.
        return lines.contains { $0.split(separator: " ").dropFirst().first?.hasSuffix(hex) ?? false }
    }
}

/// Waits (20 s at most) until `ports` are bound; the sockets queue datagrams from then on.
func waitUntilBound(_ ports: [UInt16]) -> Bool {
    let deadline = Date().addingTimeInterval(20)
    while !ports.allSatisfy(isBound) {
        guard Date() < deadline else { return false }
        Thread.sleep(forTimeInterval: 0.02)
    }
    return true
}

/// A peer script driven a command a line (Tests/Peers/applemidi_starter.py, browser.py), each answered by a line.
final class ScriptProcess {
    private let process = Process()
    private let input = Pipe(), output = Pipe()
    private var pending = Data()

    /// Starts `script` (in Tests/Peers) with `arguments`, by `python`.
    init(_ script: String, _ arguments: [String], python: URL = peersPython) throws {
        process.executableURL = python
        process.arguments = [repositoryRoot.appendingPathComponent("Tests/Peers/\(script)").path] + arguments
        process.standardInput = input
        process.standardOutput = output
        try process.run()
    }

    /// The next line it prints (without the newline), or what is left when it ends.
    func line() -> String {
        while !pending.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            pending += chunk
        }
        let end = pending.firstIndex(of: UInt8(ascii: "\n")) ?? pending.endIndex
        defer { pending = Data(pending[min(end + 1, pending.endIndex)...]) }
        return String(decoding: pending[..<end], as: UTF8.self)
    }

    /// Sends `command` and returns the line that answers it.
    func tell(_ command: String) -> String {
        input.fileHandleForWriting.write(Data((command + "\n").utf8))
        return line()
    }

    func waitUntilExit() { process.waitUntilExit() }
}
