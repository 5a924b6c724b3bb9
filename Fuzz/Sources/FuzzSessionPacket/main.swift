// Random datagrams never crash or hang the AppleMIDI session layer. Two parts per input:
//
// (a) The input as one session packet. If it parses: its encoding parses back to an equal
//     packet, and encoding that gives the same bytes again (the encoding is canonical). The
//     encoding equals the input bytes only for canonical inputs, since parsing is lossy by
//     design: an empty name (a NUL right after the SSRC) and an absent one are both nil, the
//     name ends at its first NUL (bytes after it are dropped), a missing final NUL is added,
//     CK padding and RS's trailing two bytes are not kept, nor bytes after a CK/RS/unknown
//     command. So that byte check is restricted to inputs without any of these.
//
// (b) The input as a script for one RTPMIDISession (deterministic `random`, fake clock):
//     byte 0 holds flags (bit 0 clear: first feed a well-formed IN on the control and data
//     ports from host A, so connected states are reached; bit 1: accept only "fuzz*"/"Mac*";
//     bit 2: running status; bit 3: invite host B first), then records of [op][len][bytes]:
//     op bit 0 = port, bits 1-2 = sender host (A-C, and A from ports 6004 and 6005; else port 5004 control, 5005 data),
//     bits 3-5 = time step (0 to 61 s), bits 6-7 = what to do: 0/1 feed `len` bytes as a
//     datagram, 2 parse `len` bytes as MIDI and `send` each message to the peers then
//     `flush`, 3 `invite` the host (or `close` if len >= 0x80). `tick(now)` follows each.
//     Invariants, checked by the recording delegate and after each step:
//     - every datagram sent is a session packet that parses, carries our SSRC, and uses the
//       right port (CK on data; RS and BY on control), or (data port only, only from
//       send/flush, or from tick or invite a journal-only guard packet) an RTP packet with our
//       SSRC, at most maxDatagram bytes, whose payload a receiver per destination decodes without
//       throwing, and whose journal (if J=1) decodes and re-encodes to the same bytes;
//     - a datagram is answered by at most one session packet; an IN by exactly one OK or NO to its
//       sender on the same port with its token; NO, BY, RS, RTP, CK 2, malformed and ignored
//       datagrams by none (a CK 2 is never answered); CK 0 only by CK 1, CK 1 only by CK 2; RTP
//       goes out from a datagram or a tick only to a peer that came back then (the releases
//       routed while it was away);
//     - peerJoined names a peer not already joined, peerLeft one that is, after all its
//       notes and pedals were released through `received` (notes as the session tracks them:
//       CC 120 and 123-127 end a channel's notes, CC 121 lifts its pedals); MIDI arrives only
//       from joined peers, at the current time; MIDI passed on, and a peer brought back, while a
//       datagram is read are a peer's at the datagram's host (a peer is where it joined from);
//     - connectedPeers matches the joined set, and never exceeds the number of distinct
//       SSRCs seen in IN and OK packets; counters never decrease;
//     - after tick(now) nothing is due at or before now (nextDeadline > now).
//     FUZZ_TRACE=1 prints what the delegate hears, to read a reproducer.
#if canImport(Glibc)
import Glibc
#endif
import FuzzSupport
import MIDI
import RTPMIDI
import Transport


// MARK: (a) one packet

func checkPacket(_ bytes: UnsafeRawBufferPointer) {
    let packet: SessionPacket
    do {
        packet = try SessionPacket(parsing: bytes)
    } catch {
        precondition(SessionPacket.isSessionPacket(bytes) || error == .badSignature)
        return
    }
    precondition(SessionPacket.isSessionPacket(bytes), "a packet without 0xFFFF parsed")
    var encoded: [UInt8] = []
    packet.encode(into: &encoded)
    let again = encoded.withUnsafeBytes { try? SessionPacket(parsing: $0) }
    precondition(again == packet, "\(packet) did not survive a re-encode: \(String(describing: again))")
    var twice: [UInt8] = []
    again!.encode(into: &twice)
    precondition(twice == encoded, "the encoding of \(packet) is not canonical")
    if isCanonical(packet, bytes.count, bytes) {
        precondition(encoded.elementsEqual(bytes), "\(packet) re-encoded to other bytes: \(Array(bytes)) -> \(encoded)")
    }
}

/// True if `bytes` hold nothing the parser drops (see the file comment).
func isCanonical(_ packet: SessionPacket, _ count: Int, _ bytes: UnsafeRawBufferPointer) -> Bool {
    switch packet {
    case .invitation(let h), .accepted(let h), .rejected(let h), .bye(let h):
        if let name = h.name { return count == 16 + name.utf8.count + 1 } // the name, one NUL, nothing after
        return count == 16
    case .clockSync: return count == 36 && bytes[9] == 0 && bytes[10] == 0 && bytes[11] == 0
    case .receiverFeedback: return count == 12 && bytes[10] == 0 && bytes[11] == 0
    case .ignored: return count == 4
    }
}

// MARK: (b) a session driven by the input

/// Host A, host B, host C, and host A from another pair of ports (a forger on A's host).
let hosts = [NetworkAddress(ipv4: 10, 0, 0, 1, port: 5004), NetworkAddress(ipv4: 10, 0, 0, 2, port: 5004),
             NetworkAddress(ipv4: 192, 168, 1, 7, port: 5004), NetworkAddress(ipv4: 10, 0, 0, 1, port: 6004)]
let steps: [UInt64] = [0, 1_000_000, 100_000_000, 1_000_000_000, 1_500_000_000, 10_000_000_000, 30_000_000_000, 61_000_000_000]
let peerSSRC: UInt32 = 0x1122_3344, peerToken: UInt32 = 0x5566_7788

/// What the session is handling when it calls the delegate.
enum Activity { case datagram(SessionPacket?), sending, ticking, other }

final class Checker: RTPMIDISessionDelegate {
    unowned(unsafe) var session: RTPMIDISession! = nil
    var maxDatagram = 0
    var now = MonotonicInstant(nanoseconds: 0)
    var activity = Activity.other
    /// Datagrams sent during the current step.
    var replies: [(packet: SessionPacket?, port: SessionPort, to: NetworkAddress)] = []
    var joined: Set<UInt32> = []
    /// Notes (channel << 7 | note) and pedals (channel << 7 | controller) held per peer.
    var held: [UInt32: Set<Int>] = [:]
    var decoders: [NetworkAddress: RTPMIDIReceiver] = [:]
    /// A peer came back during the current step (it may be sent releases then).
    var returnedNow = false
    /// Where the datagram being read came from.
    var feedingFrom: NetworkAddress?

    func session(send datagram: UnsafeRawBufferPointer, from port: SessionPort, to address: NetworkAddress) {
        trace("  send \(port) -> \(address): \(SessionPacket.isSessionPacket(datagram) ? String(describing: try? SessionPacket(parsing: datagram)) : "RTP \(datagram.count) bytes")")
        if SessionPacket.isSessionPacket(datagram) {
            guard let packet = try? SessionPacket(parsing: datagram) else { preconditionFailure("sent a malformed session packet \(Array(datagram))") }
            switch packet {
            case .invitation(let h), .accepted(let h), .rejected(let h), .bye(let h):
                precondition(h.ssrc == session.ssrc && h.version == 2, "sent \(packet) with SSRC \(session.ssrc)")
                if case .bye = packet { precondition(port == .control, "BY sent from the data port") }
            case .clockSync(let ck):
                precondition(ck.ssrc == session.ssrc && port == .data, "sent \(packet) from \(port)")
            case .receiverFeedback(let ssrc, _):
                precondition(ssrc == session.ssrc && port == .control, "sent \(packet) from \(port)")
            case .ignored:
                preconditionFailure("sent an unknown session command")
            }
            replies.append((packet, port, address))
            return
        }
        precondition(port == .data && datagram.count <= maxDatagram, "sent a \(datagram.count)-byte RTP datagram from \(port)")
        guard let (header, range) = try? RTPHeader.parse(datagram) else { preconditionFailure("sent a malformed RTP header \(Array(datagram))") }
        switch activity {
        case .sending: break
        case _ where returnedNow: break
        case .ticking: // only a guard packet: no commands, a journal (B=1 header, length 0, J=1)
            precondition(range.count >= 2 && datagram[range.lowerBound] & 0xCF == 0xC0 && datagram[range.lowerBound + 1] == 0,
                         "sent RTP other than a guard packet from tick: \(Array(datagram))")
        default: preconditionFailure("sent RTP while not sending MIDI or ticking (\(activity))")
        }
        precondition(header.ssrc == session.ssrc && header.payloadType == RTPHeader.midiPayloadType)
        var decoder = decoders[address] ?? RTPMIDIReceiver(sysExLimit: 1 << 20)
        do {
            let payload = UnsafeRawBufferPointer(rebasing: datagram[range])
            var validations = 0
            try decoder.receive(payload, validated: { journal in
                validations += 1
                guard let journal else { return }
                precondition(journal.lowerBound >= 1 && journal.upperBound <= payload.count, "journal range \(journal) outside the payload")
                let bytes = UnsafeRawBufferPointer(rebasing: payload[journal])
                guard let decoded = try? RecoveryJournal(parsing: bytes) else { preconditionFailure("sent journal \(Array(bytes)) does not decode") }
                var again: [UInt8] = []
                decoded.encode(into: &again)
                precondition(again.elementsEqual(bytes), "sent journal \(Array(bytes)) is not canonical: re-encodes as \(again)")
            }) { _, _ in }
            precondition(validations == 1, "validated called \(validations) times for a sent packet")
        } catch {
            preconditionFailure("sent an RTP payload that does not decode (\(error)): \(Array(datagram))")
        }
        decoders[address] = decoder
        replies.append((nil, port, address))
    }

    func session(received message: MIDIMessage, from peer: PeerInfo, at time: MonotonicInstant, sent: SenderTime?) {
        trace("  received \(message) from \(peer.ssrc)")
        precondition(joined.contains(peer.ssrc), "MIDI from \(peer.ssrc), which has not joined")
        precondition(time == now, "MIDI delivered for \(time), not now (\(now))")
        if case .datagram = activity, let from = feedingFrom {
            precondition(peer.address.isSameHost(as: from), "a datagram from \(from) passed on MIDI as \(peer.address)'s")
        }
        var notes = held[peer.ssrc, default: []]
        switch message {
        case .noteOn(let c, let n, let v): if v.value > 0 { notes.insert(Int(c.value) << 7 | Int(n.value)) } else { notes.remove(Int(c.value) << 7 | Int(n.value)) }
        case .noteOff(let c, let n, _): notes.remove(Int(c.value) << 7 | Int(n.value))
        case .controlChange(let c, let n, let v) where [64, 66, 69].contains(n.value):
            let key = 1 << 11 | Int(c.value) << 7 | Int(n.value)
            if v.value >= 64 { notes.insert(key) } else { notes.remove(key) }
        case .controlChange(let c, let n, _) where n.value == 120 || n.value >= 123: // all notes off, mode changes
            notes = notes.filter { $0 >> 7 != Int(c.value) }
        case .controlChange(let c, let n, _) where n.value == 121: // reset all controllers: pedals up
            notes = notes.filter { $0 >> 7 != 1 << 4 | Int(c.value) }
        case .systemReset: notes = []
        default: break
        }
        held[peer.ssrc] = notes
    }

    func session(peerJoined peer: PeerInfo) {
        trace("  joined \(peer.ssrc) '\(peer.name)'")
        precondition(joined.insert(peer.ssrc).inserted, "peer \(peer.ssrc) joined twice")
        precondition(held[peer.ssrc, default: []].isEmpty)
    }

    func session(peerLeft peer: PeerInfo, reason: PeerLeaveReason) {
        trace("  left \(peer.ssrc): \(reason)")
        precondition(joined.remove(peer.ssrc) != nil, "peer \(peer.ssrc) left without joining")
        precondition(held[peer.ssrc, default: []].isEmpty, "peer \(peer.ssrc) left holding \(held[peer.ssrc]!.sorted())")
        held[peer.ssrc] = nil
    }

    func session(peerReturned peer: PeerInfo) {
        returnedNow = true
        if case .datagram = activity, let from = feedingFrom {
            precondition(peer.address.isSameHost(as: from), "a datagram from \(from) brought back \(peer.address)")
        }
        trace("  back \(peer.ssrc) '\(peer.name)'")
        precondition(joined.insert(peer.ssrc).inserted, "peer \(peer.ssrc) came back while joined")
        precondition(held[peer.ssrc, default: []].isEmpty)
    }

    func session(dropped reason: String, from address: NetworkAddress) { trace("  dropped from \(address): \(reason)") }
    func session(invitationFailed target: String, at address: NetworkAddress, reason: String) { trace("  invitation to \(target) failed: \(reason)") }
}

func driveSession(_ input: UnsafeRawBufferPointer) {
    guard let flags = input.first else { return }
    var configuration = SessionConfiguration(name: "jambridge", accept: flags & 2 != 0 ? .listed(["fuzz*", "Mac*"]) : .anyone)
    configuration.runningStatus = flags & 4 != 0
    configuration.maxDatagram = 200 // small, so sent SysEx is split
    configuration.sysExLimit = 512
    let checker = Checker()
    checker.maxDatagram = configuration.maxDatagram
    let random = Random(0x6A61_6D62)
    let session = RTPMIDISession(configuration: configuration, delegate: checker, random: random.next)
    checker.session = session
    var now = MonotonicInstant(nanoseconds: 1_000_000_000_000)
    checker.now = now
    var ssrcsSeen: Set<UInt32> = []
    var counters = session.counters

    func feed(_ bytes: UnsafeRawBufferPointer, on port: SessionPort, from address: NetworkAddress) {
        let packet = SessionPacket.isSessionPacket(bytes) ? try? SessionPacket(parsing: bytes) : nil
        switch packet {
        case .invitation(let h), .accepted(let h): ssrcsSeen.insert(h.ssrc)
        default: break
        }
        trace("\(now.nanoseconds) feed \(bytes.count) bytes on \(port) from \(address): \(packet.map { "\($0)" } ?? "not a session packet")")
        checker.activity = .datagram(packet)
        checker.replies.removeAll()
        checker.returnedNow = false
        checker.feedingFrom = address
        session.receive(bytes, on: port, from: address, now: now)
        let replies = checker.replies.filter { $0.packet != nil } // RTP only to a peer that came back, checked when sent
        precondition(replies.count <= 1, "one datagram (\(String(describing: packet))) answered by \(replies.count)")
        let reply = replies.first
        switch packet {
        case .invitation(let h):
            guard let reply, reply.port == port, reply.to == address else { preconditionFailure("IN answered by \(String(describing: reply))") }
            switch reply.packet {
            case .accepted(let r), .rejected(let r): precondition(r.token == h.token, "IN answered with another token")
            default: preconditionFailure("IN answered by \(String(describing: reply.packet))")
            }
        case .clockSync(let ck) where ck.count == 0:
            if let reply { guard case .clockSync(let r) = reply.packet, r.count == 1, r.timestamps.0 == ck.timestamps.0 else { preconditionFailure("CK 0 answered by \(String(describing: reply.packet))") } }
        case .clockSync(let ck) where ck.count == 1:
            if let reply { guard case .clockSync(let r) = reply.packet, r.count == 2 else { preconditionFailure("CK 1 answered by \(String(describing: reply.packet))") } }
        case .accepted:
            if let reply {
                switch reply.packet {
                case .invitation: break // our data-port IN after the control OK
                case .clockSync(let r) where r.count == 0 && r.timestamps == (SessionClock.ticks(now), 0, 0): break // first CK
                default: preconditionFailure("OK answered by \(String(describing: reply.packet))")
                }
            }
        default: // NO, BY, RS, CK 2, ignored commands, malformed packets, RTP
            precondition(reply == nil, "\(String(describing: packet)) answered by \(String(describing: reply?.packet))")
        }
    }

    func check() {
        let connected = session.connectedPeers
        precondition(Set(connected.map(\.ssrc)) == checker.joined && connected.count == checker.joined.count,
                     "connected peers \(connected.map(\.ssrc)) vs joined \(checker.joined)")
        precondition(connected.count <= ssrcsSeen.count, "\(connected.count) peers from \(ssrcsSeen.count) SSRCs")
        let c = session.counters
        precondition(c.packetsReceived >= counters.packetsReceived && c.messagesReceived >= counters.messagesReceived
            && c.packetsSent >= counters.packetsSent && c.malformed >= counters.malformed && c.unknownSender >= counters.unknownSender
            && c.sequenceGaps >= counters.sequenceGaps && c.invitationsRejected >= counters.invitationsRejected
            && c.ssrcCollisions >= counters.ssrcCollisions, "a counter went down: \(counters) -> \(c)")
        counters = c
    }

    func tick() {
        checker.returnedNow = false
        checker.activity = .ticking
        session.tick(now: now)
        checker.activity = .other
        if let deadline = session.nextDeadline { precondition(deadline > now, "after tick(\(now)) \(deadline) is still due") }
        check()
    }

    if flags & 8 != 0 {
        checker.activity = .ticking // invite ticks the session
        session.invite(hosts[1], label: "B", now: now)
        check()
    }
    if flags & 1 == 0 { // a well-formed handshake from host A first
        var bytes: [UInt8] = []
        SessionPacket.invitation(.init(token: peerToken, ssrc: peerSSRC, name: "fuzz peer")).encode(into: &bytes)
        bytes.withUnsafeBytes { feed($0, on: .control, from: hosts[0]) }
        bytes.withUnsafeBytes { feed($0, on: .data, from: hosts[0].with(port: 5005)) }
        check()
    }

    var offset = 1
    while offset + 1 < input.count {
        let op = input[offset], length = Int(input[offset + 1])
        offset += 2
        now = now.advanced(byNanoseconds: steps[Int(op >> 3) & 7])
        checker.now = now
        let host = hosts[Int(op >> 1) & 3]
        switch op >> 6 {
        case 0, 1:
            let end = min(offset + length, input.count)
            let port: SessionPort = op & 1 == 0 ? .control : .data
            feed(UnsafeRawBufferPointer(rebasing: input[offset..<end]), on: port, from: port == .control ? host : host.with(port: host.port + 1))
            offset = end
        case 2:
            let end = min(offset + length, input.count)
            var parser = MIDIParser(maxSysExLength: 512)
            checker.activity = .sending
            parser.parse(input[offset..<end]) { output in
                if case .message(let message) = output { session.send(message, at: now) }
            }
            session.flush()
            checker.activity = .other
            offset = end
        default:
            checker.activity = length >= 0x80 ? .other : .ticking // invite ticks the session
            if length >= 0x80 { session.close(now: now) } else { session.invite(host, label: "fuzz", now: now) }
        }
        check()
        tick()
    }
    checker.activity = .other
    session.close(now: now)
    precondition(checker.joined.isEmpty && session.connectedPeers.isEmpty, "peers left after close")
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    checkPacket(input)
    driveSession(input)
    return 0
}

runFuzzer { fuzzOne($0, $1) }
