import MIDI

/// Drops two controllers, each on one channel: the jam's activity level and total, which are session control,
/// not music, and reach a route's sinks only when the route says `control: true`.
public struct ControllerDrop: RouteStage {
    private let first: (channel: UInt4, controller: UInt7)
    private let second: (channel: UInt4, controller: UInt7)

    /// A stage dropping controller `first` and controller `second`, each on its channel.
    public init(_ first: (channel: UInt4, controller: UInt7), _ second: (channel: UInt4, controller: UInt7)) {
        self.first = first
        self.second = second
    }

    /// The jam's controllers are the jam's, not something a route filtered out.
    public var countsDrops: Bool { false }

    public func apply(_ message: inout MIDIMessage) -> Bool {
        guard case .controlChange(let channel, let controller, _) = message else { return true }
        return !(channel == first.channel && controller == first.controller)
            && !(channel == second.channel && controller == second.controller)
    }
}
