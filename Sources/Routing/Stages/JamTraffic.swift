import MIDI

/// The stage of the route into the jam: clock, transport and the activity controllers `first` and `second`
/// (each on its channel) pass; nothing else does. The controllers are those `ControllerDrop` keeps off other routes.
public struct JamInputFilter: RouteStage {
    private let controllers: ControllerDrop

    /// A stage passing clock, transport and controller `first` and controller `second`, each on its channel.
    public init(_ first: (channel: UInt4, controller: UInt7), _ second: (channel: UInt4, controller: UInt7)) {
        controllers = ControllerDrop(first, second)
    }

    public func apply(_ message: inout MIDIMessage) -> Bool {
        guard case .controlChange = message else { return message.isClockOrTransport }
        return !controllers.apply(&message)
    }
}

/// The stage of the jam's route to the drums: they follow the song by reading it, and hear only the transport that
/// starts, moves and ends it (so that they begin a song at its downbeat, not when they next look).
public struct TransportFilter: RouteStage {
    public init() {}

    public func apply(_ message: inout MIDIMessage) -> Bool {
        switch message {
        case .start, .stop, .continue, .songPosition: true
        default: false
        }
    }
}
