import Jam
import MIDI
import Synchronization

/// The jam's song as the parts that play along it read it (the drums), from any thread, the drums' real-time one
/// included: the jam publishes it on the engine's queue at each change, and a reader never waits for the jam. A
/// seqlock: the writer makes the version odd, writes, makes it even; a reader that saw the version move reads again,
/// and after `readAttempts` keeps what it read last (the writer, preempted mid-write by the reader on its CPU, could
/// otherwise keep a real-time reader spinning).
final class PublishedSong: @unchecked Sendable { // atomics; `startedOrStopped`: set and called on the engine's queue
    /// What is published: the song's timeline while one runs, the session's total activity, the tempo in force.
    struct State: Equatable, Sendable {
        var line: SongLine?
        var total: UInt7
        var tempo: Double?

        static let silent = State(line: nil, total: UInt7(masking: 0), tempo: nil)
    }

    static let readAttempts = 4

    private let version = Atomic<UInt64>(0)
    private let playing = Atomic<Bool>(false)
    private let tick = Atomic<UInt64>(0), time = Atomic<UInt64>(0), period = Atomic<UInt64>(0)
    private let changes = Atomic<Bool>(false)
    private let changeTick = Atomic<UInt64>(0), changePeriod = Atomic<UInt64>(0)
    private let total = Atomic<UInt8>(0)
    private let tempo = Atomic<UInt64>(Double.nan.bitPattern)

    /// Called as a song starts or stops being published (a reader that sleeps while none runs wakes).
    var startedOrStopped: () -> Void = {}

    /// Publishes `state` (one writer: the engine's queue).
    func publish(_ state: State) {
        let start = version.load(ordering: .relaxed)
        let wasPlaying = playing.load(ordering: .relaxed)
        version.store(start &+ 1, ordering: .sequentiallyConsistent)
        playing.store(state.line != nil, ordering: .sequentiallyConsistent)
        if let line = state.line {
            tick.store(line.tick.bitPattern, ordering: .sequentiallyConsistent)
            time.store(line.time.nanoseconds, ordering: .sequentiallyConsistent)
            period.store(line.period.bitPattern, ordering: .sequentiallyConsistent)
            changes.store(line.change != nil, ordering: .sequentiallyConsistent)
            changeTick.store((line.change?.tick ?? 0).bitPattern, ordering: .sequentiallyConsistent)
            changePeriod.store((line.change?.period ?? 0).bitPattern, ordering: .sequentiallyConsistent)
        }
        total.store(state.total.value, ordering: .sequentiallyConsistent)
        tempo.store((state.tempo ?? .nan).bitPattern, ordering: .sequentiallyConsistent)
        version.store(start &+ 2, ordering: .sequentiallyConsistent)
        if wasPlaying != (state.line != nil) { startedOrStopped() }
    }

    /// What is published now; `last`, what this reader read before, if the writer kept writing meanwhile.
    func read(else last: State) -> State {
        for _ in 0..<Self.readAttempts {
            let before = version.load(ordering: .sequentiallyConsistent)
            guard before & 1 == 0 else { continue }
            var line: SongLine?
            if playing.load(ordering: .sequentiallyConsistent) {
                line = SongLine(tick: Double(bitPattern: tick.load(ordering: .sequentiallyConsistent)),
                                time: MonotonicInstant(nanoseconds: time.load(ordering: .sequentiallyConsistent)),
                                period: Double(bitPattern: period.load(ordering: .sequentiallyConsistent)))
                if changes.load(ordering: .sequentiallyConsistent) {
                    line!.change = (Double(bitPattern: changeTick.load(ordering: .sequentiallyConsistent)),
                                    Double(bitPattern: changePeriod.load(ordering: .sequentiallyConsistent)))
                }
            }
            let tempo = Double(bitPattern: tempo.load(ordering: .sequentiallyConsistent))
            let state = State(line: line, total: UInt7(masking: total.load(ordering: .sequentiallyConsistent)),
                              tempo: tempo.isNaN ? nil : tempo)
            if version.load(ordering: .sequentiallyConsistent) == before { return state }
        }
        return last
    }
}
