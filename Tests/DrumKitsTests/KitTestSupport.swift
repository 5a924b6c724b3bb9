import Foundation
import Testing

// Helpers the kit test suites share: fixtures made and audio read back by sox, a tool nobody here wrote.

/// Where Debian's hydrogen-drumkits puts its 14 kits.
let debianKits = "/usr/share/hydrogen/data/drumkits"

/// A fresh directory for one test's files.
func temporaryDirectory() throws -> String {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("jambridge-kits-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory.path
}

/// Runs `executable` with `arguments`; its standard output, or an error with its status and standard error.
@discardableResult
func run(_ executable: String, _ arguments: [String]) throws -> Data {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [executable] + arguments
    let output = Pipe(), errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    let messages = errors.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw ToolFailure(text: "\(executable) \(arguments.joined(separator: " ")): exit \(process.terminationStatus): "
                          + String(decoding: messages, as: UTF8.self))
    }
    return data
}

struct ToolFailure: Error, CustomStringConvertible {
    var text: String
    var description: String { text }
}

/// Makes `path` with sox: `seconds` of a sine at `frequency` Hz and `amplitude`, at `rate`, in `channels` channels
/// (a second channel at half the amplitude, so left and right differ), in the format its extension says.
func makeTone(_ path: String, seconds: Double = 0.1, frequency: Int = 440, amplitude: Double = 0.5, rate: Int = 48_000,
              channels: Int = 1) throws {
    var arguments = ["-n", "-r", "\(rate)", "-c", "\(channels)", "-b", "16", path, "synth", "\(seconds)", "sine", "\(frequency)"]
    if channels == 2 { arguments += ["remix", "1", "1v0.5"] }
    arguments += ["vol", "\(amplitude)"]
    try run("sox", arguments)
}

/// The channels of the sound file at `path` as sox decodes them (32-bit float).
func soxChannels(_ path: String) throws -> [[Float]] {
    let info = String(decoding: try run("soxi", ["-c", path]), as: UTF8.self)
    let count = Int(info.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 1
    let data = try run("sox", [path, "-t", "f32", "-e", "floating-point", "-"])
    let samples = data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    return (0..<count).map { channel in stride(from: channel, to: samples.count, by: count).map { samples[$0] } }
}

/// True if `a` and `b` have one length and differ nowhere by more than `tolerance`.
func nearlyEqual(_ a: [Float], _ b: [Float], tolerance: Float = 1e-6) -> Bool {
    a.count == b.count && zip(a, b).allSatisfy { abs($0 - $1) <= tolerance }
}

/// Writes `text` to `name` in `directory` and returns its path.
@discardableResult
func write(_ text: String, to name: String, in directory: String) throws -> String {
    let path = directory + "/" + name
    try text.write(toFile: path, atomically: true, encoding: .utf8)
    return path
}
