import MIDI

/// One step of a route: transforms a message in place or drops it.
///
/// A stage has one job (a filter, a remap, a curve). Stages never see note-offs or sustain
/// releases: the `Router` sends those along the path their note-on (or press) took, so no
/// stage can leave a note hanging. Stages run on the hot path: `apply` must not allocate.
public protocol RouteStage: Sendable {
    /// Transforms `message` in place; returns false to drop it.
    func apply(_ message: inout MIDIMessage) -> Bool
    /// True if what it drops is counted as filtered (`RouterCounters.droppedByStages`): false for a stage the route
    /// files do not write (the jam's controllers kept off a route).
    var countsDrops: Bool { get }
}

extension RouteStage {
    public var countsDrops: Bool { true }
}
