import Dispatch
import Logging
import MIDI

/// A Standard MIDI File played in time as a source (`file:`), optionally looped: a backing track.
///
/// Its events are posted to the engine's timed output a `window` ahead, each at song start + offset (and
/// + k * duration when looping, so loops never drift). At a loop wrap and at the end, whatever the song still holds
/// is released, so a song cut short never leaves a note hanging; stopping withdraws what waits.
public final class MIDIFilePlayer: SourceEndpoint, @unchecked Sendable { // after `start`: on the engine's queue
    /// How far ahead the song is posted; it is posted again when half of that is left.
    static let window: UInt64 = 1_000_000_000
    /// The most events and loop ends posted at once (a very short looped song).
    static let postedAtOnce = 4096

    /// The endpoint's name in the route file.
    public let name: String
    private let song: TimedSong
    private let loop: Bool
    private let logger: Logger
    private var sink: EventSink?
    private var id: EndpointID?
    private var ticket: TimedTicket?
    /// When the current pass of the song started, and the next of its entries to post.
    private var passStart = MonotonicInstant(nanoseconds: 0)
    private var next = 0

    /// A player of `song`; loops if `loop`.
    public init(name: String, song: TimedSong, loop: Bool, logger: Logger) {
        self.name = name
        self.song = song
        self.loop = loop
        self.logger = logger
    }

    public func start(id: EndpointID, sink: EventSink) {
        logger.info("playing \(name): \(song.entries.count) events, \(Double(song.duration) / 1e9) s\(loop ? ", looped" : "")")
        sink.queue.async { [self] in
            self.sink = sink
            self.id = id
            ticket = sink.timed.ticket()
            passStart = MonotonicClock.now()
            next = 0
            post()
        }
    }

    /// Withdraws what waits (the notes that sound still end) and releases what the song holds.
    public func stop() {
        guard let sink else { return }
        sink.queue.sync {
            guard let id, let ticket else { return }
            sink.timed.withdraw(ticket)
            sink.releaseHeld(by: id)
            self.sink = nil
        }
    }

    /// Posts the song's events due within `window`, with a release at each pass's end, and asks to be called again
    /// when half the window is left.
    private func post() {
        guard let sink, let id, let ticket else { return }
        let timed = sink.timed
        let horizon = MonotonicClock.now().advanced(byNanoseconds: Self.window)
        var posted = 0
        var last = horizon
        while posted < Self.postedAtOnce {
            if next < song.entries.count {
                let entry = song.entries[next]
                let due = passStart.advanced(byNanoseconds: entry.offset)
                guard due <= horizon else { break }
                timed.post(MIDIEvent(entry.message, from: id, at: due), ticket: ticket)
                last = due
                next += 1
            } else {
                let end = passStart.advanced(byNanoseconds: song.duration)
                guard end <= horizon else { break }
                timed.postRelease(of: id, at: end, ticket: ticket)
                guard loop && song.duration > 0 else {
                    timed.call(at: end, ticket: ticket) { [name, logger] in logger.info("\(name): song ended") }
                    return
                }
                timed.call(at: end, ticket: ticket) { [name, logger] in logger.debug("\(name): looping") }
                passStart = end
                last = end
                next = 0
            }
            posted += 1
        }
        // Half a window on, or at the last posted if it stopped at `postedAtOnce`.
        let again = posted < Self.postedAtOnce ? horizon.receded(byNanoseconds: Self.window / 2) : last
        timed.call(at: again, ticket: ticket) { [weak self] in self?.post() }
    }
}
