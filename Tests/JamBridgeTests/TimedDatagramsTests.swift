#if canImport(Glibc)
import Glibc
#endif
import Logging
import MIDI
import RTPMIDI
import Testing
import Transport
@testable import JamBridge

/// The session's lane on real sockets: its real-time thread sends each datagram at its time, never one taken back.
@Suite struct TimedDatagramsTests {
    /// Reads what reaches `socket` until `deadline`, with when each came.
    private func receive(on socket: UDPSocket, until deadline: MonotonicInstant) -> [(byte: UInt8, at: MonotonicInstant)] {
        var got: [(UInt8, MonotonicInstant)] = []
        var buffer = [UInt8](repeating: 0, count: 64)
        while MonotonicClock.now() < deadline {
            var descriptor = pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 5) > 0 else { continue }
            let datagram = buffer.withUnsafeMutableBytes { socket.receive(into: $0) }
            if let datagram, datagram.count > 0 { got.append((buffer[0], MonotonicClock.now())) }
        }
        return got
    }

    @Test func eachDatagramLeavesAtItsTimeAndOneTakenBackNever() throws {
        let ports = try UDPPortPair(address: NetworkAddress(ipv4: 127, 0, 0, 1, port: 0), port: 0)
        let listener = try UDPSocket(address: NetworkAddress(ipv4: 127, 0, 0, 1, port: 0), port: 0)
        let lane = TimedDatagrams(ports: ports, logger: Logger(label: "test"))
        defer { lane.stop() }
        let to = NetworkAddress(ipv4: 127, 0, 0, 1, port: listener.port)
        let now = MonotonicClock.now()
        let dues = (1...3).map { now.advanced(byNanoseconds: UInt64($0) * 40_000_000) }
        let tickets = dues.enumerated().map { index, due in
            [UInt8(index + 1)].withUnsafeBytes { lane.post($0, to: to, at: due) }
        }
        #expect(lane.takeBack(tickets[1]))
        #expect(lane.isDone(tickets[1]))
        let got = receive(on: listener, until: now.advanced(byNanoseconds: 300_000_000))
        #expect(got.map(\.byte) == [1, 3])
        for (datagram, due) in zip(got, [dues[0], dues[2]]) {
            #expect(datagram.at.nanoseconds + 50_000 >= due.nanoseconds, "not before its time")
        }
        #expect(!lane.takeBack(tickets[2]), "sent: too late to take back")
        #expect(tickets.allSatisfy(lane.isDone))
    }

    /// A full lane says so (the session then sends at once), and has room again once the thread sent what waited.
    @Test func aFullLaneSaysSoUntilItsDatagramsLeft() throws {
        let ports = try UDPPortPair(address: NetworkAddress(ipv4: 127, 0, 0, 1, port: 0), port: 0)
        let listener = try UDPSocket(address: NetworkAddress(ipv4: 127, 0, 0, 1, port: 0), port: 0)
        let lane = TimedDatagrams(ports: ports, logger: Logger(label: "test"))
        defer { lane.stop() }
        let to = NetworkAddress(ipv4: 127, 0, 0, 1, port: listener.port)
        let due = MonotonicClock.now().advanced(byNanoseconds: 50_000_000)
        var posted = 0
        while lane.hasRoom {
            _ = [0x42].withUnsafeBytes { lane.post($0, to: to, at: due) }
            posted += 1
        }
        #expect(posted == TimedDatagrams.capacity - 1, "room is two free slots")
        #expect(receive(on: listener, until: due.advanced(byNanoseconds: 200_000_000)).count == posted)
        #expect(lane.hasRoom)
    }
}
