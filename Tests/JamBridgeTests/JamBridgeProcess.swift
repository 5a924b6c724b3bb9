import Foundation

/// The built `jambridge` executable, beside the test bundle.
let executable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    .appendingPathComponent("jambridge")

/// The repository's top directory.
let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// A jambridge process running in the background; `finish` waits for it and collects its output.
final class JamBridgeProcess: @unchecked Sendable { // the output buffers are written by the readers before `readers` is left
    private let process = Process()
    private let out = Pipe(), err = Pipe()
    private var outData = Data(), errData = Data()
    private let readers = DispatchGroup()

    /// Starts jambridge with `arguments` in the repository's top directory.
    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = repositoryRoot
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Drain both pipes while it runs, so a chatty process never blocks on a full pipe.
        for (pipe, keyPath) in [(out, \JamBridgeProcess.outData), (err, \JamBridgeProcess.errData)] {
            readers.enter()
            DispatchQueue.global().async { [self] in
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                self[keyPath: keyPath] = data
                readers.leave()
            }
        }
    }

    /// Its process ID.
    var pid: Int32 { process.processIdentifier }

    /// Asks it to stop, as Ctrl-C does.
    func interrupt() { process.interrupt() }

    /// Waits for it to exit; returns its status, standard output and standard error.
    func finish() -> (status: Int32, out: String, err: String) {
        process.waitUntilExit()
        readers.wait()
        return (process.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
    }
}

/// Runs jambridge with `arguments`; returns its exit status, standard output and standard error.
func jambridge(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
    try JamBridgeProcess(arguments).finish()
}
