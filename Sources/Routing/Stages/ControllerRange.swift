import MIDI

/// Maps one controller's values through a curve: scaling, inversion, shaping (`cc-range:`).
public struct ControllerRange: RouteStage {
    /// The controller whose values are mapped.
    public let controller: UInt7
    private let table: [UInt7]

    /// Values of `controller` mapped by `curve`.
    public init(controller: UInt7, curve: ValueCurve) {
        self.controller = controller
        table = curve.table()
    }

    public func apply(_ message: inout MIDIMessage) -> Bool {
        if case .controlChange(let c, let n, let v) = message, n == controller {
            message = .controlChange(channel: c, controller: n, value: table[Int(v.value)])
        }
        return true
    }
}
