import Dispatch
import Logging
import MIDI
import Synchronization
import Transport

/// A Standard MIDI File played in time as a source (`file:`), optionally looped: a backing track.
///
/// Events are submitted at their deadlines (song start + offset, and + k * duration when
/// looping, so loops never drift). At a loop wrap and at the end, whatever the song still holds
/// is released, so a song cut short never leaves a note hanging.
public final class MIDIFilePlayer: SourceEndpoint, @unchecked Sendable {
    /// The endpoint's name in the route file.
    public let name: String
    private let song: TimedSong
    private let loop: Bool
    private let logger: Logger
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let stopping = Mutex(false)
    /// True while the song's thread runs.
    private var playing = false

    /// A player of `song`; loops if `loop`.
    public init(name: String, song: TimedSong, loop: Bool, logger: Logger) {
        self.name = name
        self.song = song
        self.loop = loop
        self.logger = logger
    }

    public func start(id: EndpointID, sink: EventSink) {
        switch startThread({ [self] in play(id: id, sink: sink) }) {
        case .success:
            playing = true
            logger.info("playing \(name): \(song.entries.count) events, \(Double(song.duration) / 1e9) s\(loop ? ", looped" : "")")
        case .failure(let error):
            logger.error("cannot play \(name): \(error)")
        }
    }

    public func stop() {
        guard playing else { return }
        stopping.withLock { $0 = true }
        wake.signal()
        finished.wait()
        playing = false
    }

    private var isStopping: Bool { stopping.withLock { $0 } }

    /// Sleeps until `deadline`; false if asked to stop meanwhile.
    private func sleep(until deadline: MonotonicInstant) -> Bool {
        while !isStopping {
            let now = MonotonicClock.now()
            if now >= deadline { return true }
            _ = wake.wait(timeout: .now() + .nanoseconds(Int(min(deadline.nanoseconds - now.nanoseconds, 1_000_000_000))))
        }
        return false
    }

    private func play(id: EndpointID, sink: EventSink) {
        defer { finished.signal() }
        var start = MonotonicClock.now()
        repeat {
            for entry in song.entries {
                let due = start.advanced(byNanoseconds: entry.offset)
                guard sleep(until: due) else {
                    sink.releaseHeld(by: id)
                    return
                }
                sink.submit(MIDIEvent(entry.message, from: id, at: due))
            }
            let end = start.advanced(byNanoseconds: song.duration)
            guard sleep(until: end) else { break }
            sink.releaseHeld(by: id)
            start = end
            if loop { logger.debug("\(name): looping") }
        } while loop && song.duration > 0
        sink.releaseHeld(by: id)
        if !isStopping { logger.info("\(name): song ended") }
    }
}
