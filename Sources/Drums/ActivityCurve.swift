/// The session's total activity along a render, as `jambridge render --activity` writes it: `N` (0-127 throughout),
/// `A-B` (from A at the start to B at the end, in a straight line), or `BAR:VALUE,BAR:VALUE,...` (straight lines
/// between the points, each bar a position from 0, flat before the first and after the last).
public struct ActivityCurve: Sendable, Equatable {
    /// The points (bar position, value), in order; a ramp's are relative (0 and 1), scaled by `relative`.
    private var points: [(bar: Double, value: Double)]
    private var relative: Bool

    public static func == (a: ActivityCurve, b: ActivityCurve) -> Bool {
        a.relative == b.relative && a.points.map(\.bar) == b.points.map(\.bar) && a.points.map(\.value) == b.points.map(\.value)
    }

    /// The curve `text` writes, or nil.
    public init?(_ text: String) {
        func value(_ text: Substring) -> Double? {
            Int(text).flatMap { (0...127).contains($0) ? Double($0) : nil }
        }
        if let constant = value(Substring(text)) {
            points = [(0, constant)]
            relative = false
        } else if !text.contains(":"), text.split(separator: "-").count == 2 {
            let ends = text.split(separator: "-").compactMap(value)
            guard ends.count == 2 else { return nil }
            points = [(0, ends[0]), (1, ends[1])]
            relative = true
        } else {
            var points: [(bar: Double, value: Double)] = []
            for pair in text.split(separator: ",") {
                let parts = pair.split(separator: ":")
                guard parts.count == 2, let bar = Double(parts[0]), bar >= 0, let level = value(parts[1]),
                      points.last.map({ $0.bar < bar }) ?? true else { return nil }
                points.append((bar, level))
            }
            guard !points.isEmpty else { return nil }
            self.points = points
            relative = false
        }
    }

    /// The activity at bar position `bar` of a render of `bars` bars.
    public func value(atBar bar: Double, of bars: Int) -> UInt8 {
        let position = relative ? bar / Double(max(1, bars)) : bar
        guard let after = points.firstIndex(where: { $0.bar > position }) else { return UInt8(points.last!.value.rounded()) }
        guard after > 0 else { return UInt8(points[0].value.rounded()) }
        let (a, b) = (points[after - 1], points[after])
        return UInt8((a.value + (b.value - a.value) * (position - a.bar) / (b.bar - a.bar)).rounded())
    }
}
