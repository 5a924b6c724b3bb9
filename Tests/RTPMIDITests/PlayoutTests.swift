import MIDI
import MIDITestSupport
import Testing
@testable import RTPMIDI

/// Timestamp playout on a virtual network whose packets take 0-10 ms, on a virtual clock.
@Suite struct PlayoutTests {
    /// A sends `count` note-ons 10 ms apart to B; each packet reaches B after a random 0-10 ms.
    /// Returns B's host after every event has been played.
    func jitteredStream(count: Int, bPlaysByTimestamp: Bool) -> (RecordingHost, [MonotonicInstant]) {
        let net = VirtualNetwork()
        let a = net.add(1, name: "Phone A", ssrc: 100)
        let b = net.add(2, name: "B", ssrc: 200) { configuration in
            configuration.playout = [(NameGlob("Phone *"), bPlaysByTimestamp)]
        }
        a.session.invite(b.address, label: "b", now: net.now)
        net.deliver()
        var random = SeededGenerator(seed: 42)
        var inFlight: [(arrival: MonotonicInstant, bytes: [UInt8])] = []
        var sentAt: [MonotonicInstant] = []
        let start = net.now
        for i in 0..<count {
            let time = start.advanced(byNanoseconds: UInt64(i) * 10_000_000)
            sentAt.append(time)
            a.session.send(noteOn(0, UInt8(i % 128)), at: time)
            a.session.flush()
            for datagram in a.outbox where datagram.port == .data {
                inFlight.append((time.advanced(byNanoseconds: UInt64.random(in: 0...10_000_000, using: &random)), datagram.bytes))
            }
            a.outbox.removeAll()
        }
        inFlight.sort { $0.arrival < $1.arrival } // a later packet may overtake an earlier one
        var now = start
        let end = start.advanced(byNanoseconds: UInt64(count) * 10_000_000 + 200_000_000)
        while now < end {
            now = now.advanced(byNanoseconds: 100_000) // 0.1 ms steps
            while let first = inFlight.first, first.arrival <= now {
                inFlight.removeFirst()
                first.bytes.withUnsafeBytes { b.session.receive($0, on: .data, from: a.address.with(port: 5005), now: first.arrival) }
            }
            if let deadline = b.session.nextDeadline, deadline <= now { b.session.tick(now: now) }
        }
        return (b, sentAt)
    }

    /// The time from each instant to the next, in nanoseconds.
    func spacings(_ times: [MonotonicInstant]) -> [Int64] {
        zip(times.dropFirst(), times).map { later, earlier in Int64(later.nanoseconds) - Int64(earlier.nanoseconds) }
    }

    @Test func timestampPlayoutKeepsTheSendersSpacingThroughJitter() {
        let (b, sentAt) = jitteredStream(count: 600, bPlaysByTimestamp: true)
        #expect(b.received.map(\.0) == (0..<600).map { noteOn(0, UInt8($0 % 128)) })
        // Once the delay has seen about the network's worst case (the first 50 packets), every
        // event keeps its spacing from the one before to within a few 0.1 ms clock ticks.
        let played = spacings(b.receivedTimes), sent = spacings(sentAt)
        let errors = (50..<599).map { abs(played[$0] - sent[$0]) }
        #expect(errors.max() ?? .max <= 200_000)
        #expect(b.session.counters.lateEvents <= 50)
    }

    @Test func immediatePlayoutPassesEventsOnAsTheyArrive() {
        let (b, sentAt) = jitteredStream(count: 100, bPlaysByTimestamp: false)
        #expect(b.received.count == 100)
        // Arrival order: packets that overtook others come first, with their jitter.
        #expect(spacings(b.receivedTimes).contains { abs($0 - 10_000_000) > 1_000_000 })
        #expect(sentAt.count == 100)
    }
}
