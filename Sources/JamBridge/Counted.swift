/// "1 route", "2 routes": a count with its noun, for log and status lines.
public func counted(_ count: Int, _ noun: String) -> String {
    "\(count) \(noun)\(count == 1 ? "" : "s")"
}
