#if canImport(Glibc)
import Glibc
#endif
import RouteFile

/// An `OSCControlMapping`'s value curve both ways: input range -> position 0...1 -> exponent -> output range,
/// and back for feedback. Every parameter is sanitized once, so no input can produce NaN.
struct OSCControlCurve: Sendable {
    let input: ClosedRange<Double>
    let low: Double
    let high: Double
    /// The exponent; 1 where the mapping's is not a finite positive number.
    let exponent: Double

    init(_ mapping: OSCControlMapping) {
        input = mapping.input
        low = Double(mapping.output.low)
        high = Double(mapping.output.high)
        exponent = mapping.exponent.isFinite && mapping.exponent > 0 ? mapping.exponent : 1
    }

    /// Where a finite `value` lies in the input range, 0...1, after clamping. A range of zero or non-finite width
    /// has two positions: 1 above its low end, 0 at or below it.
    func position(of value: Double) -> Double {
        let span = input.upperBound - input.lowerBound
        guard span.isFinite, span > 0 else { return value > input.lowerBound ? 1 : 0 }
        return (min(max(value, input.lowerBound), input.upperBound) - input.lowerBound) / span
    }

    /// The unrounded output for a finite input `value`.
    func output(for value: Double) -> Double {
        let position = position(of: value)
        let shaped = exponent == 1 ? position : pow(position, exponent)
        return low + shaped * (high - low)
    }

    /// The input value at `position` (0...1) of the input range.
    func input(atPosition position: Double) -> Double {
        let span = input.upperBound - input.lowerBound
        guard span.isFinite, span > 0 else { return position > 0.5 ? input.upperBound : input.lowerBound }
        return input.lowerBound + position * span
    }

    /// The input value that maps to `output` (the inverse of `output(for:)`); an output beyond the range's
    /// ends gives the nearer end of the input range.
    func input(for output: Double) -> Double {
        let shaped = high == low ? 1 : clampedUnit((output - low) / (high - low))
        return input(atPosition: exponent == 1 ? shaped : pow(shaped, 1 / exponent))
    }
}

/// `value` clamped into 0...1; NaN gives 0.
func clampedUnit(_ value: Double) -> Double {
    value > 0 ? min(value, 1) : 0
}

/// The fraction of the way a one-pole filter with time constant `seconds` moves toward its target in `elapsed`
/// seconds (`elapsed` > 0), 0...1. A time constant that is zero, negative or NaN moves all the way at once.
func smoothingStep(elapsed: Double, timeConstant seconds: Double) -> Double {
    guard seconds > 0 else { return 1 }
    let step = -expm1(-elapsed / seconds)
    return step >= 0 ? step : 1 // NaN (infinite over infinite) moves all the way
}
