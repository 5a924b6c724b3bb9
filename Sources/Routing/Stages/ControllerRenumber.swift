import MIDI

/// Changes controller numbers (`cc: { 1: 74 }`); controllers it does not name pass unchanged.
public struct ControllerRenumber: RouteStage {
    private let table: [UInt7]

    /// A renumbering by `mapping`.
    public init(mapping: [UInt7: UInt7]) {
        table = (0...127).map { number in mapping[UInt7(masking: UInt8(number))] ?? UInt7(masking: UInt8(number)) }
    }

    public func apply(_ message: inout MIDIMessage) -> Bool {
        if case .controlChange(let c, let n, let v) = message {
            message = .controlChange(channel: c, controller: table[Int(n.value)], value: v)
        }
        return true
    }
}
