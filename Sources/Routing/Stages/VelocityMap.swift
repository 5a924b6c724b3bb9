import MIDI

/// Maps note-on velocities through a curve or to a fixed value (`velocity:`); never yields 0,
/// so a played note always sounds and can be released.
public struct VelocityMap: RouteStage {
    private let table: [UInt7]

    /// Velocities mapped by `curve` (0 results become 1).
    public init(curve: ValueCurve) {
        table = curve.table().map { $0.value == 0 ? UInt7(masking: 1) : $0 }
    }

    /// Every velocity set to `fixed` (0 becomes 1).
    public init(fixed: UInt7) {
        table = Array(repeating: fixed.value == 0 ? UInt7(masking: 1) : fixed, count: 128)
    }

    public func apply(_ message: inout MIDIMessage) -> Bool {
        if case .noteOn(let c, let n, let v) = message, v.value != 0 {
            message = .noteOn(channel: c, note: n, velocity: table[Int(v.value)])
        }
        return true
    }
}
