#if canImport(Glibc)
import Glibc
#endif
import MIDI

/// Prints every delivered event, aseqdump-style (`--monitor`):
/// `   1.250000  song -> tape    Note on                 1, note 60 (C4), velocity 100`.
public final class EventMonitor: @unchecked Sendable {
    private let start: MonotonicInstant
    private let write: (String) -> Void

    /// A monitor timing lines from `start` and printing them with `write` (stdout by default).
    public init(start: MonotonicInstant, write: @escaping (String) -> Void = EventMonitor.printLine) {
        self.start = start
        self.write = write
    }

    /// Writes one line to standard output and flushes it, so a pipe sees it at once.
    public static func printLine(_ line: String) {
        print(line)
        fflush(nil)
    }

    /// Shows `message` going from `source` to `sink` at `time`.
    /// Shows `message` going from `source` to `sink`; to the one player `only`, if given (a release only it needs).
    public func show(_ message: MIDIMessage, from source: String, to sink: String, only: EventOrigin? = nil,
                     at time: MonotonicInstant) {
        show(only.map { "\(message) (only to \($0))" } ?? "\(message)", from: source, to: sink, at: time)
    }

    /// Shows an OSC message (`oscdump`-style text) arriving from a controller or leaving for one: the MIDI it
    /// became, or came from, is shown on the lines around it.
    public func show(osc message: String, from source: String, to sink: String, at time: MonotonicInstant) {
        show("OSC " + message, from: source, to: sink, at: time)
    }

    /// Shows what the jam did (a change of clock master, the tempo) as a line of its own.
    public func note(_ text: String, at time: MonotonicInstant) {
        show(text, from: "jam", to: "all", at: time)
    }

    private func show(_ text: String, from source: String, to sink: String, at time: MonotonicInstant) {
        let elapsed = time.nanoseconds >= start.nanoseconds ? time.nanoseconds - start.nanoseconds : 0
        let seconds = String(elapsed / 1_000_000_000)
        let micros = String(elapsed % 1_000_000_000 / 1000)
        let stamp = String(repeating: " ", count: max(0, 4 - seconds.count)) + seconds + "."
            + String(repeating: "0", count: 6 - micros.count) + micros
        let path = "\(source) -> \(sink)"
        write("\(stamp)  \(path)\(String(repeating: " ", count: max(1, 18 - path.count)))\(text)")
    }
}
