import Foundation
import MIDI
import RouteFile

// Helpers the route-file test suites share.

/// The configuration `yaml` holds when parsed as `r.yaml`.
func parse(_ yaml: String) throws -> RouteConfiguration {
    try RouteConfiguration.parse(yaml: yaml, file: "r.yaml")
}

/// The mistakes `yaml` holds, as `file:line:column: message`, when parsed as `r.yaml`.
func locatedMistakes(_ yaml: String) -> [String] {
    do {
        _ = try RouteConfiguration.parse(yaml: yaml, file: "r.yaml")
        return []
    } catch {
        return error.errors.map(\.description)
    }
}

/// A location in `r.yaml`.
func at(_ line: Int, _ column: Int) -> RouteFile.SourceLocation {
    RouteFile.SourceLocation(file: "r.yaml", line: line, column: column)
}

/// A fresh directory for one test's route files.
func temporaryDirectory() throws -> URL {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("jambridge-routefile-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory
}

/// Writes `yaml` to `name` in `directory` and returns its path.
func write(_ yaml: String, to name: String, in directory: URL) throws -> String {
    let url = directory.appendingPathComponent(name)
    try yaml.write(to: url, atomically: true, encoding: .utf8)
    return url.path
}

/// Writes a short Standard MIDI File (one note) to `name` in `directory` and returns its path.
@discardableResult
func writeSong(_ name: String, in directory: URL) throws -> String {
    let url = directory.appendingPathComponent(name)
    try Data(StandardMIDIFile.recording([
        .init(offset: 0, message: .noteOn(channel: UInt4(masking: 0), note: UInt7(masking: 60), velocity: UInt7(masking: 100))),
        .init(offset: 100_000_000, message: .noteOff(channel: UInt4(masking: 0), note: UInt7(masking: 60), velocity: UInt7(masking: 0))),
    ]).encoded()).write(to: url)
    return url.path
}
