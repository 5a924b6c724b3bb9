import Jam
@testable import JamBridge
import Logging
import MIDI
import RouteFile
import Testing

/// The drums' player on its own (no audio, no thread): how it follows the song's published line.
@Suite struct DrumsPlayerTests {
    let start = MonotonicInstant(nanoseconds: 5_000_000_000_000)
    func at(_ seconds: Double) -> MonotonicInstant { start.advanced(byNanoseconds: UInt64((seconds * 1e9).rounded())) }

    /// Issue 43: the song moves by a sixteenth and a half, within a bar (a Link session's jump, a reposition): the drums take
    /// back what they had handed out ahead and play on from the song's new place (they moved only on a bar's jump).
    @Test func aJumpOfMoreThanASixteenthWithinABarMovesTheDrums() throws {
        let declaration = DrumsDeclaration(style: BuiltinStyles.style("rock")!, location: SourceLocation(file: "jam.yaml", line: 1, column: 1))
        let player = try DrumsPlayer(declaration, logger: Logger(label: "jambridge-drums-player-test"))
        let period = MIDIClock.tickPeriod(bpm: 120)
        let before = SongLine(tick: 0, time: at(0), period: period, change: nil)
        var song = PublishedSong.State(line: before, total: UInt7(masking: 100), tempo: 120)
        for time in stride(from: 0.0, through: 1.0, by: 0.01) { _ = player.fire(song, now: at(time)) }
        _ = player.takeOutbox()
        // A sixteenth and a half on at 1.01 s: tick 48.48 becomes 57.48.
        song.line = SongLine(tick: 9, time: at(0), period: period, change: nil)
        _ = player.fire(song, now: at(1.01))
        let outbox = player.takeOutbox()
        guard case .withdraw(let after)? = outbox.first else {
            Issue.record("no withdraw first: \(outbox.count) outputs")
            return
        }
        #expect(after == at(1.01))
        let notes = outbox.compactMap { if case .note(let message, let time) = $0, !message.isNoteOff { time } else { nil } }
        // The new line's hits: on its sixteenths (tick 9 at 0 s; the style's feel moves them a little), half a
        // sixteenth off the old line's.
        #expect(!notes.isEmpty)
        for time in notes {
            let sixteenths = (9 + Double(time.nanoseconds - start.nanoseconds) / period) / 6
            #expect(abs(sixteenths - sixteenths.rounded()) < 0.1, "a hit at sixteenth \(sixteenths)")
        }
    }
}
