import Dispatch
import RTPMIDI
import Transport

/// A UDP relay between a jambridge that invites it (on `front`) and another jambridge (at
/// `target`), standing in for a bad network: each RTP-MIDI data packet on the way in is
/// passed, dropped or delayed as `fate` decides. Session packets (IN/OK/BY/CK/RS) and
/// everything on the way back pass untouched.
final class LossyRelay: @unchecked Sendable { // state is touched only on `queue`
    enum Fate { case pass, drop, delay(nanoseconds: UInt64) }

    let front: UDPPortPair
    private let back: UDPPortPair
    private let target: NetworkAddress
    private let queue = DispatchQueue(label: "lossy-relay")
    private let fate: () -> Fate
    private var senders: [SessionPort: NetworkAddress] = [:]
    private var counts = (passed: 0, dropped: 0)

    /// A relay on 127.0.0.1 to the session whose control port is `targetPort`.
    init(targetPort: UInt16, fate: @escaping () -> Fate) throws {
        front = try UDPPortPair(address: NetworkAddress(ipv4: 127, 0, 0, 1, port: 0), port: 0)
        back = try UDPPortPair(address: NetworkAddress(ipv4: 127, 0, 0, 1, port: 0), port: 0)
        target = NetworkAddress(ipv4: 127, 0, 0, 1, port: targetPort)
        self.fate = fate
    }

    /// RTP data packets passed on and dropped so far.
    var dataPackets: (passed: Int, dropped: Int) { queue.sync { counts } }

    func start() {
        front.start(queue: queue) { [self] bytes, port, from in
            senders[port] = from
            let to = port == .control ? target : target.with(port: target.port + 1)
            guard port == .data, bytes.first == 0x80 else { // not RTP: a session packet
                back.send(bytes, from: port, to: to)
                return
            }
            switch fate() {
            case .pass:
                counts.passed += 1
                back.send(bytes, from: port, to: to)
            case .drop:
                counts.dropped += 1
            case .delay(let nanoseconds):
                counts.passed += 1
                let copy = Array(bytes)
                queue.asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) { [back] in
                    _ = copy.withUnsafeBytes { back.send($0, from: port, to: to) }
                }
            }
        }
        back.start(queue: queue) { [self] bytes, port, _ in
            guard let sender = senders[port] else { return }
            front.send(bytes, from: port, to: sender)
        }
    }

    func stop() {
        queue.sync {
            front.close()
            back.close()
        }
    }
}
