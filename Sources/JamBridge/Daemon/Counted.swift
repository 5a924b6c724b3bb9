import MIDI

/// True if the `count`th failure of a kind is logged: the first 20 and every 1000th, so a flood of bad
/// input is counted in full but cannot flood the log.
func isLogged(_ count: Int) -> Bool {
    count <= 20 || count % 1000 == 0
}

/// "1 route", "2 routes": a count with its noun, for log and status lines.
public func counted(_ count: Int, _ noun: String) -> String {
    "\(count) \(noun)\(count == 1 ? "" : "s")"
}

/// Lines of one kind that a flood could repeat, logged one by one at most `limit` times in each `window`: those beyond
/// are counted and summed up in one line once the window is over.
struct LogWindow {
    static let limit = 10
    /// Nanoseconds.
    static let window: UInt64 = 10_000_000_000
    private var since = MonotonicInstant(nanoseconds: 0)
    private var shown = 0, left = 0

    /// True if a line of the kind may be logged at `now`; false, counted, if the window has had its `limit`. A window
    /// over by `now` is closed first (`close`).
    mutating func admits(at now: MonotonicInstant, summarize: (Int) -> Void) -> Bool {
        close(at: now, summarize: summarize)
        guard shown < Self.limit else {
            left += 1
            return false
        }
        shown += 1
        return true
    }

    /// Ends the window if it is over at `now` (nil: at once, as the part stops), handing `summarize` how many lines it
    /// left out, if any.
    mutating func close(at now: MonotonicInstant?, summarize: (Int) -> Void) {
        guard now.map({ $0.nanoseconds >= since.nanoseconds + Self.window }) ?? true else { return }
        if left > 0 { summarize(left) }
        left = 0
        if let now { (since, shown) = (now, 0) }
    }
}
