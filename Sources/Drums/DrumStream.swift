import MIDI
import Synchronization

/// The mixer as a live audio stream plays it: hits are handed in from one thread (the drums') with the monotonic
/// time they are due, and an audio thread renders each buffer given the instant its first frame will be heard.
/// Each hit lands on the frame that instant implies (never rounded to a buffer); a hit that comes after its frame
/// was rendered starts at once and is counted late.
///
/// The audio thread never waits: it takes what was handed in only if no one is handing in at that instant (else at
/// the next buffer), and a cancel is handed in like a hit, in order. The mixer is the audio thread's alone; what it
/// counted is published in atomics.
public final class DrumStream: Sendable {
    /// What is handed in: a hit, or "forget what has not started".
    private enum Entry {
        case hit(DrumHit)
        case cancel
    }

    private let incoming = Mutex<[Entry]>([])
    /// The mixer and the stream's frame count: the audio thread's alone (its lock is never contended).
    private let state: Mutex<(mixer: DrumMixer, frame: Int64)>
    private let hits = Atomic<Int>(0), lateHits = Atomic<Int>(0), silentHits = Atomic<Int>(0), stolen = Atomic<Int>(0)

    public init(kit: Kit) {
        state = Mutex((DrumMixer(kit: kit), 0))
        incoming.withLock { $0.reserveCapacity(256) }
    }

    /// Hands in `hit` (the drums' thread).
    public func schedule(_ hit: DrumHit) {
        incoming.withLock { $0.append(.hit(hit)) }
    }

    /// Forgets the hits not yet started (the song stopped or jumped); what sounds rings out.
    public func cancel() {
        incoming.withLock { $0.append(.cancel) }
    }

    /// What the mixer counted, as of the last buffer rendered.
    public var counters: DrumMixer.Counters {
        DrumMixer.Counters(hits: hits.load(ordering: .relaxed), lateHits: lateHits.load(ordering: .relaxed),
                           silentHits: silentHits.load(ordering: .relaxed), stolen: stolen.load(ordering: .relaxed))
    }

    /// Renders the next `buffer.count / 2` interleaved stereo frames, whose first is heard at `firstFrame` (the audio
    /// thread).
    public func render(into buffer: UnsafeMutableBufferPointer<Float>, firstFrame: MonotonicInstant) {
        var entries: [Entry] = []
        _ = incoming.withLockIfAvailable { swap(&entries, &$0) }
        state.withLock { state in
            let start = state.frame
            for entry in entries {
                switch entry {
                case .hit(let hit):
                    let offset = Double(Int64(bitPattern: hit.time.nanoseconds &- firstFrame.nanoseconds)) * Double(Kit.sampleRate) / 1e9
                    state.mixer.add(hit.voice, velocity: hit.velocity, at: start + Int64(offset.rounded()))
                case .cancel:
                    state.mixer.cancelPending()
                }
            }
            state.mixer.render(into: buffer, startingAt: start)
            state.frame = start + Int64(buffer.count / 2)
            let counted = state.mixer.counters
            hits.store(counted.hits, ordering: .relaxed)
            lateHits.store(counted.lateHits, ordering: .relaxed)
            silentHits.store(counted.silentHits, ordering: .relaxed)
            stolen.store(counted.stolen, ordering: .relaxed)
        }
        // The array goes back (emptied, its room kept) if nothing was handed in meanwhile: no allocation per buffer.
        entries.removeAll(keepingCapacity: true)
        _ = incoming.withLockIfAvailable { if $0.isEmpty { swap(&entries, &$0) } }
    }
}
