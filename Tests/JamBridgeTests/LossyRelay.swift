import Dispatch
import RTPMIDI
import Transport

/// A UDP relay between a jambridge that invites it (on `front`) and another jambridge (at
/// `target`), standing in for a bad network: each RTP-MIDI data packet on the way in is
/// passed, dropped or delayed as `fate` decides, and on the way back as `fateBack` does (by
/// default it passes). Session packets (IN/OK/BY/CK/RS) pass untouched, unless `sessionPackets` (a far network:
/// clock sync takes as long as the data).
final class LossyRelay: @unchecked Sendable { // state is touched only on `queue`
    enum Fate { case pass, drop, delay(nanoseconds: UInt64) }

    let front: UDPPortPair
    private let back: UDPPortPair
    private let target: NetworkAddress
    private let queue = DispatchQueue(label: "lossy-relay")
    private let fate: () -> Fate
    private let fateBack: () -> Fate
    private let sessionPackets: Bool
    private var senders: [SessionPort: NetworkAddress] = [:]
    private var counts = (passed: 0, dropped: 0)

    /// A relay on 127.0.0.1 to the session whose control port is `targetPort`.
    init(targetPort: UInt16, fate: @escaping () -> Fate, fateBack: @escaping () -> Fate = { .pass }, sessionPackets: Bool = false) throws {
        self.sessionPackets = sessionPackets
        front = try UDPPortPair(address: NetworkAddress(ipv4: 127, 0, 0, 1, port: 0), port: 0)
        back = try UDPPortPair(address: NetworkAddress(ipv4: 127, 0, 0, 1, port: 0), port: 0)
        target = NetworkAddress(ipv4: 127, 0, 0, 1, port: targetPort)
        self.fate = fate
        self.fateBack = fateBack
    }

    /// RTP data packets passed on and dropped so far.
    var dataPackets: (passed: Int, dropped: Int) { queue.sync { counts } }

    func start() {
        front.start(queue: queue) { [self] bytes, port, from in
            senders[port] = from
            let to = port == .control ? target : target.with(port: target.port + 1)
            pass(bytes, from: port, to: to, through: back, as: fate)
        }
        back.start(queue: queue) { [self] bytes, port, _ in
            guard let sender = senders[port] else { return }
            pass(bytes, from: port, to: sender, through: front, as: fateBack)
        }
    }

    /// Sends `bytes` on through `ports` as `fate` decides, if it is an RTP data packet; else at once.
    private func pass(_ bytes: UnsafeRawBufferPointer, from port: SessionPort, to address: NetworkAddress,
                      through ports: UDPPortPair, as fate: () -> Fate) {
        guard sessionPackets || (port == .data && bytes.first == 0x80) else { // not RTP: a session packet
            ports.send(bytes, from: port, to: address)
            return
        }
        switch fate() {
        case .pass:
            counts.passed += 1
            ports.send(bytes, from: port, to: address)
        case .drop:
            counts.dropped += 1
        case .delay(let nanoseconds):
            counts.passed += 1
            let copy = Array(bytes)
            queue.asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) {
                _ = copy.withUnsafeBytes { ports.send($0, from: port, to: address) }
            }
        }
    }

    func stop() {
        queue.sync {
            front.close()
            back.close()
        }
    }
}
