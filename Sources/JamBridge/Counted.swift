/// True if the `count`th failure of a kind is logged: the first 20 and every 1000th, so a flood of bad
/// input is counted in full but cannot flood the log.
func isLogged(_ count: Int) -> Bool {
    count <= 20 || count % 1000 == 0
}

/// "1 route", "2 routes": a count with its noun, for log and status lines.
public func counted(_ count: Int, _ noun: String) -> String {
    "\(count) \(noun)\(count == 1 ? "" : "s")"
}
