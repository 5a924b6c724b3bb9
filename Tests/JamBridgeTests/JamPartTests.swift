import Foundation
@testable import JamBridge
import Jam
import MIDI
import RouteFile
import Testing

/// The jam as a part (`JamPart`) in an assembly, with a tape that keeps what it hears in order.
@Suite(.serialized) struct JamPartTests {
    /// A stop that comes while ticks for an output that takes them when due (a recorder) are overdue, because the
    /// engine's queue was held past their time: they go out before the Stop, never after it (a Clock after a Stop
    /// is a tick of a song that ended, to a device that stopped).
    @Test func ticksOverdueWhenTheQueueWasHeldGoOutBeforeTheStop() throws {
        let bench = Bench()
        let assembly = Assembly(context: bench.context, kinds: [[TimedTape.self], [JamPart.self]])
        let routes = try RouteConfiguration.parse(yaml: """
            clock: { tempo: 120, to: [tape] }
            endpoints:
              tape: { record: take.mid }

            """, file: "jam.yaml")
        #expect(assembly.apply(routes, starting: true).failures.isEmpty)
        defer { _ = assembly.stop() }
        #expect(assembly.perform(.jam(.start), from: .controlSocket) == .success("started at 120 BPM"))
        Thread.sleep(forTimeInterval: 0.5)
        // The queue held for five ticks' time; the stop waits behind it, and the jam's timer after the stop.
        assembly.engine.queue.async { Thread.sleep(forTimeInterval: 0.1) }
        #expect(assembly.perform(.jam(.stop), from: .controlSocket) == .success("stopped"))
        Thread.sleep(forTimeInterval: 0.1)
        let heard = bench.heard(by: "tape").map(\.message)
        let ticks = heard.filter { $0 == .timingClock }.count
        #expect(heard.first == .start && heard.last == .stop && heard.filter { $0 != .timingClock } == [.start, .stop],
                "of \(heard.count): \(heard.enumerated().filter { $0.element != .timingClock }.map { "\($0.element) at \($0.offset)" })")
        // 0.6 s at 120 BPM (48 ticks a second), from the Start's own tick.
        #expect((27...31).contains(ticks), "\(ticks) ticks")
    }
}
