import MIDI
import Synchronization

/// The mixer as a live audio stream plays it: hits are handed in from one thread (the engine's) with the monotonic
/// time they are due, and an audio thread renders each buffer given the instant its first frame will be heard.
/// Each hit lands on the frame that instant implies (never rounded to a buffer); a hit that comes after its frame
/// was rendered starts at once and is counted late. The lock is held only to take the hits handed in since the
/// last buffer, so the audio thread never waits for the engine's work.
public final class DrumStream: Sendable {
    private let incoming = Mutex<[DrumHit]>([])
    /// The mixer and the stream's frame count: the audio thread's alone.
    private let state: Mutex<(mixer: DrumMixer, frame: Int64)>

    public init(kit: Kit) {
        state = Mutex((DrumMixer(kit: kit), 0))
        incoming.withLock { $0.reserveCapacity(256) }
    }

    /// Hands in `hit` (any thread).
    public func schedule(_ hit: DrumHit) {
        incoming.withLock { $0.append(hit) }
    }

    /// Forgets the hits not yet started (the song stopped or jumped); what sounds rings out.
    public func cancel() {
        incoming.withLock { $0.removeAll(keepingCapacity: true) }
        state.withLock { $0.mixer.cancelPending() }
    }

    /// What the mixer counted.
    public var counters: DrumMixer.Counters { state.withLock { $0.mixer.counters } }

    /// Renders the next `buffer.count / 2` interleaved stereo frames, whose first is heard at `firstFrame`.
    public func render(into buffer: UnsafeMutableBufferPointer<Float>, firstFrame: MonotonicInstant) {
        var hits: [DrumHit] = []
        incoming.withLock { swap(&hits, &$0) }
        state.withLock { state in
            let start = state.frame
            for hit in hits {
                let offset = Double(Int64(bitPattern: hit.time.nanoseconds &- firstFrame.nanoseconds)) * Double(Kit.sampleRate) / 1e9
                state.mixer.add(hit.voice, velocity: hit.velocity, at: start + Int64(offset.rounded()))
            }
            state.mixer.render(into: buffer, startingAt: start)
            state.frame = start + Int64(buffer.count / 2)
        }
        hits.removeAll(keepingCapacity: true)
        incoming.withLock { if $0.isEmpty { swap(&hits, &$0) } }
    }
}
