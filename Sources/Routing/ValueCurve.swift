#if canImport(Glibc)
import Glibc
#endif
import MIDI

/// A mapping of 7-bit values: an input range onto an output range (inverted when low > high),
/// shaped by an exponent; precomputed into a 128-entry table for the hot path.
public struct ValueCurve: Hashable, Sendable {
    /// Inputs are clamped into this range before mapping.
    public let input: ClosedRange<Int>
    /// The output for the lowest input.
    public let outputLow: Int
    /// The output for the highest input.
    public let outputHigh: Int
    /// 1 is linear, above 1 starts soft, below 1 starts fast.
    public let exponent: Double

    /// A curve from `input` onto `output.low...output.high` shaped by `exponent`.
    public init(input: ClosedRange<Int> = 0...127, output: (low: Int, high: Int) = (0, 127), exponent: Double = 1) {
        self.input = input
        self.outputLow = output.low
        self.outputHigh = output.high
        self.exponent = exponent
        self.factor = nil
    }

    /// Velocity-style scaling: every value multiplied by `factor`, rounded and clamped.
    public static func scale(_ factor: Double) -> ValueCurve {
        ValueCurve(factor: factor)
    }

    private let factor: Double?

    private init(factor: Double) {
        self.input = 0...127
        self.outputLow = 0
        self.outputHigh = 127
        self.exponent = 1
        self.factor = factor
    }

    /// The output for input `value`, clamped to 0...127. Non-finite parameters give 0, never a trap.
    public func map(_ value: Int) -> Int {
        let raw: Double
        if let factor {
            raw = Double(value) * factor
        } else {
            let span = input.upperBound - input.lowerBound
            let clamped = Swift.min(Swift.max(value, input.lowerBound), input.upperBound)
            let position = span == 0 ? 1 : Double(clamped - input.lowerBound) / Double(span)
            let shaped = exponent > 0 && exponent.isFinite ? Glibc.pow(position, exponent) : position
            raw = Double(outputLow) + shaped * Double(outputHigh - outputLow)
        }
        guard raw.isFinite else { return 0 }
        return Int(Swift.min(Swift.max(raw.rounded(), 0), 127))
    }

    /// The 128 outputs, indexed by input value.
    public func table() -> [UInt7] {
        (0...127).map { UInt7(clamping: map($0)) }
    }
}
