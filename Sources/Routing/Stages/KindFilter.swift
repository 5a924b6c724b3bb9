import MIDI

/// Passes only messages whose kind is in a set (`only:`, and `except:` as the complement).
public struct KindFilter: RouteStage {
    /// The kinds that pass.
    public let passing: MIDIMessageKinds

    /// A filter passing the kinds in `passing`.
    public init(passing: MIDIMessageKinds) { self.passing = passing }

    public func apply(_ message: inout MIDIMessage) -> Bool {
        passing.contains(message.kind)
    }
}
