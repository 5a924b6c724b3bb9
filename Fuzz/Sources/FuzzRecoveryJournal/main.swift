// Random bytes never crash the recovery journal codec or the session's loss repair, and what
// repair plays is sound. Part (a) for every input, then (b) if byte 0's top bit is clear (as
// in a journal whose header S bit is 0), (c) if it is set:
//
// (a) The input as one journal. If `RecoveryJournal(parsing:)` accepts it: `parsing` gives the
//     same value, `length(of:)` the bytes `parsing` consumed (at most the input); the value's
//     encoding is `encodedLength` bytes, no longer than what was consumed, decodes (using all
//     of it, and not without its last byte) to an equal value, and re-encoding that gives the
//     same bytes. If it is refused, `parsing` and `length(of:)` refuse it with the same error.
//
// (b) Two RTPMIDISessions on an in-memory network: "fuzz peer" (A, the sender) invites
//     "jambridge" (B, under test). A plays a fixed warm-up (program, controllers, sustain,
//     held notes on channels 0, 1 and 9, pitch bend, transport) that B receives whole. Then
//     B gets, from A's data SSRC and port, (1) a packet whose sequence number skips one, J=1
//     (no commands or one note-off) and the input as its journal; (2) A's next real packet
//     after one of A's packets is lost, its journal cut after a prefix and followed by the
//     input; (3) another, its journal XORed with the input; then A says BY.
//
// (c) The input as a script for the same setup: byte 0 holds flags (bit 7 set; bit 0: B plays A by
//     timestamp, bit 1: A uses running status, bit 2: A's datagrams are at most 80 bytes so
//     journals overflow or travel alone, bit 3: B closes instead of A saying BY, bit 4: B's
//     RS reaches A, so A's journal checkpoint moves), then records [op][len][bytes]: op bits
//     0-1 = 0 A sends the `len` bytes parsed as MIDI (A's RTP packets are held back), 1 A's
//     held-back packets are delivered or lost by the bits of `len` (no bytes follow; bit 2 of
//     op: delivered last first, so late packets arrive), 2 a packet skipping (op >> 2 & 7)
//     sequence numbers with the `len` bytes as its journal, 3 the last held-back packet with
//     its journal cut after (op >> 2 & 7) * 4 bytes (or XORed with the bytes if that is 7)
//     and the `len` bytes appended, the others lost; op bits 5-7 = time step (0 to 1.1 s),
//     both sessions ticked after each record.
//
// Invariants (the session's internals are not looked at):
// - each RTP datagram B gets moves exactly one of its counters packetsReceived, malformed,
//   latePackets, unknownSender, outOfWindow by one: late/duplicate (by the sequence numbers B
//   accepted) exactly when latePackets, more than 3000 ahead exactly when outOfWindow, unless it
//   is the 8th behind (3rd ahead) in a row each following on, which B takes as a lost run;
//   sequenceGaps grows by the skipped numbers; `repairs` grows by one exactly when the packet is
//   accepted, has J=1, and a gap (or such a run) was seen since the last repair; repairMessages
//   only then, and by at most the messages the packet passed on;
//   without playout, `received` is called once per messagesReceived; a refused packet passes
//   nothing on; in (b)(1) the packet is accepted exactly when the input decodes as a journal;
// - everything B passes on is valid MIDI: its MIDI 1.0 bytes parse back to the same message
//   (and a SysEx is within B's limit); it comes from a joined peer;
// - when A leaves (BY, or B closes), every note B passed on as on has been turned off, and
//   every sustain/sostenuto/hold pedal lifted, before peerLeft (notes as the session tracks
//   them: a note-on of velocity 0 is a note-off, CC 120 and 123-127 and System Reset end a
//   channel's notes, CC 121 lifts its pedals);
// - handshakes complete; A and B end with no peers.
// FUZZ_TRACE=1 prints what happens, to read a reproducer.
#if canImport(Glibc)
import Glibc
#endif
import FuzzSupport
import MIDI
import RTPMIDI
import Transport

/// FUZZ_PARTS=ac (say) runs only those parts; all by default.
let parts = getenv("FUZZ_PARTS").map { String(cString: $0) } ?? "abc"

// MARK: (a) the codec

func checkCodec(_ bytes: UnsafeRawBufferPointer) {
    let journal: RecoveryJournal
    do {
        journal = try RecoveryJournal(parsing: bytes)
    } catch {
        do {
            _ = try RecoveryJournal.parsing(bytes)
            preconditionFailure("init(parsing:) refused \(Array(bytes)) (\(error)) but parsing accepted it")
        } catch let again { precondition(again == error, "parsing refused with \(again), init(parsing:) with \(error)") }
        do {
            let length = try RecoveryJournal.length(of: bytes)
            preconditionFailure("init(parsing:) refused \(Array(bytes)) (\(error)) but length(of:) says \(length)")
        } catch let again { precondition(again == error, "length(of:) refused with \(again), init(parsing:) with \(error)") }
        return
    }
    guard let (same, used) = try? RecoveryJournal.parsing(bytes) else { preconditionFailure("parsing refused what init accepted") }
    precondition(same == journal, "parsing and init(parsing:) disagree")
    guard let length = try? RecoveryJournal.length(of: bytes) else { preconditionFailure("length(of:) refused \(Array(bytes))") }
    precondition(length == used && used >= 3 && used <= bytes.count, "length(of:) \(length), parsing consumed \(used) of \(bytes.count)")

    var encoded: [UInt8] = []
    journal.encode(into: &encoded)
    precondition(encoded.count == journal.encodedLength, "encodedLength \(journal.encodedLength), encode wrote \(encoded.count)")
    precondition(encoded.count <= used, "\(journal) encoded in \(encoded.count) bytes, more than the \(used) it came from")
    encoded.withUnsafeBytes { encodedBytes in
        guard let (decoded, decodedUsed) = try? RecoveryJournal.parsing(encodedBytes) else {
            preconditionFailure("the encoding \(encoded) of \(journal) (from \(Array(bytes))) does not decode")
        }
        precondition(decodedUsed == encoded.count, "the encoding's decoder used \(decodedUsed) of \(encoded.count) bytes")
        precondition(decoded == journal, "\(journal) came back as \(decoded) (from \(Array(bytes)))")
        var again: [UInt8] = []
        decoded.encode(into: &again)
        precondition(again == encoded, "re-encoding is not stable: \(encoded) -> \(again)")
        precondition((try? RecoveryJournal.length(of: UnsafeRawBufferPointer(rebasing: encodedBytes.dropLast()))) == nil,
                     "the encoding \(encoded) without its last byte still decodes")
    }
}

// MARK: the network

let addressA = NetworkAddress(ipv4: 10, 0, 0, 1, port: 5004)
let addressB = NetworkAddress(ipv4: 10, 0, 0, 2, port: 5004)
let sysExLimitB = 64
let pedals: Set<UInt8> = [64, 66, 69]

/// One session and what its delegate heard.
final class Host: RTPMIDISessionDelegate {
    let address: NetworkAddress
    var session: RTPMIDISession!
    var now: MonotonicInstant
    /// Session packets waiting for the network; RTP packets held back for the script.
    var outbox: [(bytes: [UInt8], port: SessionPort, to: NetworkAddress)] = []
    var rtp: [[UInt8]] = []
    var joined: Set<UInt32> = []
    var leftCount = 0
    /// Notes (channel << 7 | note) and pedals (1 << 11 | channel << 7 | controller) on, as passed on.
    var held: Set<Int> = []
    var receivedCount = 0
    var playsByTimestamp = false

    init(_ address: NetworkAddress, configuration: SessionConfiguration, seed: UInt64, now: MonotonicInstant) {
        self.address = address
        self.now = now
        let random = Random(seed)
        session = RTPMIDISession(configuration: configuration, delegate: self, random: random.next)
    }

    func session(send datagram: UnsafeRawBufferPointer, from port: SessionPort, to address: NetworkAddress) {
        if SessionPacket.isSessionPacket(datagram) {
            outbox.append((Array(datagram), port, address))
        } else {
            precondition(port == .data, "RTP sent from the control port")
            rtp.append(Array(datagram))
        }
    }

    func session(received message: MIDIMessage, from peer: PeerInfo, at time: MonotonicInstant, sent: SenderTime?) {
        trace("    \(address.host) received \(message)")
        receivedCount += 1
        precondition(joined.contains(peer.ssrc), "MIDI from \(peer.ssrc), which has not joined")
        if !playsByTimestamp { precondition(time == now, "MIDI passed on for \(time), not now (\(now))") }
        checkValid(message)
        if let count = sent?.songTick { precondition(message == .timingClock && (0..<0x80000).contains(count), "song tick \(count)") }
        switch message {
        case .noteOn(let c, let n, let v):
            if v.value > 0 { held.insert(Int(c.value) << 7 | Int(n.value)) } else { held.remove(Int(c.value) << 7 | Int(n.value)) }
        case .noteOff(let c, let n, _):
            held.remove(Int(c.value) << 7 | Int(n.value))
        case .controlChange(let c, let n, let v) where pedals.contains(n.value):
            let key = 1 << 11 | Int(c.value) << 7 | Int(n.value)
            if v.value >= 64 { held.insert(key) } else { held.remove(key) }
        case .controlChange(let c, let n, _) where n.value == 120 || n.value >= 123:
            held = held.filter { $0 >> 7 != Int(c.value) }
        case .controlChange(let c, let n, _) where n.value == 121:
            held = held.filter { $0 >> 7 != 1 << 4 | Int(c.value) }
        case .systemReset:
            held = held.filter { $0 >> 11 != 0 }
        default:
            break
        }
    }

    func session(peerJoined peer: PeerInfo) {
        trace("    \(address.host) joined \(peer.ssrc) '\(peer.name)'")
        precondition(joined.insert(peer.ssrc).inserted, "peer \(peer.ssrc) joined twice")
        precondition(held.isEmpty, "a peer joined with notes still held")
    }

    func session(peerLeft peer: PeerInfo, reason: PeerLeaveReason) {
        trace("    \(address.host) left \(peer.ssrc): \(reason)")
        precondition(joined.remove(peer.ssrc) != nil, "peer \(peer.ssrc) left without joining")
        precondition(held.isEmpty, "peer \(peer.ssrc) left (\(reason)) with \(held.sorted()) still on")
        leftCount += 1
    }

    func session(peerReturned peer: PeerInfo) {
        trace("    \(address.host) back \(peer.ssrc) '\(peer.name)'")
        precondition(joined.insert(peer.ssrc).inserted, "peer \(peer.ssrc) came back while joined")
    }

    func session(dropped reason: String, from address: NetworkAddress) { trace("    \(self.address.host) dropped: \(reason)") }
    func session(invitationFailed target: String, at address: NetworkAddress, reason: String) {}
}

/// `message` is MIDI that can be sent: its bytes parse back to it.
func checkValid(_ message: MIDIMessage) {
    var bytes: [UInt8] = []
    var encoder = MIDIEncoder()
    encoder.encode(message, into: &bytes)
    if case .sysEx(let data) = message {
        precondition(data.count <= sysExLimitB && data.allSatisfy { $0 < 0x80 }, "passed on a SysEx of \(data)")
    }
    var parser = MIDIParser(maxSysExLength: sysExLimitB)
    var outputs: [MIDIParserOutput] = []
    parser.parse(bytes) { outputs.append($0) }
    precondition(outputs == [.message(message)], "\(message) is not valid MIDI: \(bytes) parses as \(outputs)")
}

struct Options {
    var playout = false, runningStatus = false, smallDatagrams = false, bClosesFirst = false, confirm = true
}

/// A (sender) connected to B (under test), with B's view of the RTP stream modelled.
final class Harness {
    let a: Host, b: Host
    var now = MonotonicInstant(nanoseconds: 1_000_000_000_000)
    let options: Options
    /// The sequence numbers B sees are A's plus `offset` (packets we make up take numbers too).
    var offset: UInt16 = 0
    /// The last sequence number given out on B's side (delivered or lost), once A sent one.
    var lastNumber: UInt16?
    /// The model of B: the last sequence number it accepted, and a loss not yet repaired.
    var accepted: UInt16?
    /// The session's rule for packets behind the last accepted or more than 3000 ahead: dropped unless the 8th (behind)
    /// or 3rd (ahead) in a row, each following on from the one before; the next such number and the run so far.
    var probation: (next: UInt16, streak: Int)?
    var lossPending = false
    var ssrcA: UInt32 { a.session.ssrc }

    init(_ options: Options) {
        self.options = options
        var configurationA = SessionConfiguration(name: "fuzz peer")
        configurationA.runningStatus = options.runningStatus
        configurationA.maxDatagram = options.smallDatagrams ? 80 : 1400
        var configurationB = SessionConfiguration(name: "jambridge")
        configurationB.sysExLimit = sysExLimitB
        if options.playout { configurationB.playout = [(NameGlob("fuzz*"), true)] }
        a = Host(addressA, configuration: configurationA, seed: 0x6A61_6D62, now: now)
        b = Host(addressB, configuration: configurationB, seed: 0x6272_6964, now: now)
        b.playsByTimestamp = options.playout
        a.session.invite(addressB, label: "B", now: now)
        deliver()
        precondition(a.joined.count == 1 && b.joined.count == 1, "the handshake did not complete")
    }

    /// Delivers session packets until none are in flight (RS from B only if `confirm`).
    func deliver() {
        for _ in 0..<50 {
            var moved = false
            for (from, to) in [(a, b), (b, a)] where !from.outbox.isEmpty {
                let datagrams = from.outbox
                from.outbox.removeAll()
                for datagram in datagrams {
                    moved = true
                    precondition(datagram.to.isSameHost(as: to.address), "sent to an unknown host")
                    var bytes = datagram.bytes
                    if from === b, case .receiverFeedback(let ssrc, let sequence)? = bytes.withUnsafeBytes({ try? SessionPacket(parsing: $0) }) {
                        guard options.confirm else { continue }
                        bytes.removeAll() // B's numbers back into A's
                        SessionPacket.receiverFeedback(ssrc: ssrc, sequence: sequence &- offset).encode(into: &bytes)
                    }
                    let fromPort = datagram.port == .control ? from.address : from.address.with(port: from.address.port + 1)
                    let port: SessionPort = datagram.to.port == to.address.port ? .control : .data
                    bytes.withUnsafeBytes { to.session.receive($0, on: port, from: fromPort, now: now) }
                }
            }
            if !moved { return }
        }
        preconditionFailure("session packets kept flowing")
    }

    func advance(_ nanoseconds: UInt64) {
        now = now.advanced(byNanoseconds: nanoseconds)
        a.now = now
        b.now = now
        a.session.tick(now: now)
        b.session.tick(now: now)
        deliver()
    }

    /// A sends `messages` (its packets are held back in `a.rtp`).
    func send(_ messages: [MIDIMessage]) {
        for message in messages { a.session.send(message, at: now) }
        a.session.flush()
        deliver()
    }

    /// Renumbers A's packet for B's side, taking the next number.
    func renumber(_ packet: inout [UInt8]) {
        let sequence = (UInt16(packet[2]) << 8 | UInt16(packet[3])) &+ offset
        packet[2] = UInt8(truncatingIfNeeded: sequence >> 8)
        packet[3] = UInt8(truncatingIfNeeded: sequence)
        if let lastNumber, Int16(bitPattern: sequence &- lastNumber) <= 0 { return }
        lastNumber = sequence
    }

    /// A's held-back packets: delivered where `mask`'s bit (index % 8) is set, lost elsewhere.
    func forward(mask: UInt8, lastFirst: Bool) {
        var packets = a.rtp
        a.rtp.removeAll()
        for index in packets.indices { renumber(&packets[index]) }
        let chosen = packets.indices.filter { mask & (1 << UInt8($0 % 8)) != 0 }
        for index in lastFirst ? chosen.reversed() : chosen { feed(packets[index]) }
    }

    /// A made-up packet from A skipping `skip` numbers: J=1, `commands` (at most 15 bytes), `journal`.
    @discardableResult
    func madeUp(skip: Int, commands: [UInt8], journal: UnsafeRawBufferPointer) -> Bool {
        let sequence = (lastNumber ?? 0x4000) &+ 1 &+ UInt16(skip)
        offset &+= 1 &+ UInt16(skip) // A's next packet comes after it
        lastNumber = sequence
        var packet: [UInt8] = []
        RTPHeader(sequence: sequence, timestamp: UInt32(truncatingIfNeeded: SessionClock.ticks(now)), ssrc: ssrcA).encode(into: &packet)
        packet.append(0x40 | UInt8(commands.count))
        packet.append(contentsOf: commands)
        packet.append(contentsOf: journal)
        return feed(packet)
    }

    /// A's last held-back packet (the others lost), its journal cut after `keep` bytes (or XORed
    /// with `fuzz` if `xor`) and `fuzz` appended; nothing if A has sent nothing.
    func mutated(keep: Int, xor: Bool, fuzz: UnsafeRawBufferPointer) {
        guard var packet = a.rtp.last else { return }
        for var lost in a.rtp.dropLast() { renumber(&lost) }
        a.rtp.removeAll()
        renumber(&packet)
        let first = packet[RTPHeader.size]
        let headerLength = first & 0x80 != 0 ? 2 : 1
        let length = first & 0x80 != 0 ? Int(first & 0x0F) << 8 | Int(packet[RTPHeader.size + 1]) : Int(first & 0x0F)
        let journalStart = RTPHeader.size + headerLength + length
        packet[RTPHeader.size] |= 0x40
        if xor {
            for (index, byte) in fuzz.enumerated() where journalStart + index < packet.count { packet[journalStart + index] ^= byte }
        } else {
            packet.removeSubrange(min(journalStart + keep, packet.count)...)
            packet.append(contentsOf: fuzz)
        }
        feed(packet)
    }

    /// Hands B one RTP datagram from A's data port and checks its counters against the model.
    @discardableResult
    func feed(_ packet: [UInt8]) -> Bool {
        guard let (header, range) = packet.withUnsafeBytes({ try? RTPHeader.parse($0) }) else { preconditionFailure("bad RTP header made") }
        let hasJournal = !range.isEmpty && packet[range.lowerBound] & 0x40 != 0
        let connected = !b.session.connectedPeers.isEmpty
        var late = false, farAhead = false, resynced = false, skipped = 0
        if connected, let accepted {
            let distance = Int(Int16(bitPattern: header.sequence &- accepted))
            if distance <= 0 || distance > 3000 {
                let streak = probation?.next == header.sequence ? probation!.streak + 1 : 1
                if streak >= (distance <= 0 ? 8 : 3) {
                    resynced = true
                } else {
                    probation = (header.sequence &+ 1, streak)
                    if distance <= 0 { late = true } else { farAhead = true }
                }
            } else {
                skipped = distance - 1
            }
        }
        let before = b.session.counters, receivedBefore = b.receivedCount
        trace("  feed #\(header.sequence) (\(packet.count) bytes, J=\(hasJournal), skips \(skipped)\(late ? ", late" : ""))")
        packet.withUnsafeBytes { b.session.receive($0, on: .data, from: addressA.with(port: 5005), now: now) }
        let after = b.session.counters
        let passed = after.messagesReceived - before.messagesReceived
        let repairs = after.repairs - before.repairs, repairMessages = after.repairMessages - before.repairMessages
        let moved = [after.packetsReceived - before.packetsReceived, after.malformed - before.malformed,
                     after.latePackets - before.latePackets, after.unknownSender - before.unknownSender,
                     after.outOfWindow - before.outOfWindow]
        precondition(moved.allSatisfy { $0 == 0 || $0 == 1 } && moved.reduce(0, +) == 1,
                     "one RTP datagram moved received/malformed/late/unknown/out of window by \(moved)")
        precondition(after.sequenceGaps - before.sequenceGaps == (late || !connected ? 0 : skipped),
                     "sequenceGaps grew by \(after.sequenceGaps - before.sequenceGaps), \(skipped) numbers skipped")
        precondition(repairMessages >= 0 && repairMessages <= passed, "\(repairMessages) repair messages of \(passed) passed on")
        if !options.playout {
            precondition(b.receivedCount - receivedBefore == passed, "\(passed) messages counted, \(b.receivedCount - receivedBefore) passed on")
        }
        if !connected {
            precondition(moved[3] == 1, "RTP from a peer that is gone was not counted as unknown")
            return false
        }
        if late || farAhead {
            precondition(moved[late ? 2 : 4] == 1 && passed == 0, "a late or far packet was not held back: \(moved)")
            return false
        }
        precondition(moved[2] == 0 && moved[3] == 0 && moved[4] == 0,
                     "an in-order packet from a connected peer counted as late, unknown or out of window")
        if skipped > 0 || resynced { lossPending = true }
        let isAccepted = moved[0] == 1
        if isAccepted {
            // The first packet's journal is read when its history begins before it (what it overtook is repaired).
            let first = accepted == nil
            accepted = header.sequence
            probation = nil
            let expected = lossPending && hasJournal
            precondition(repairs == (expected ? 1 : 0) || (first && hasJournal && repairs == 1),
                         "repairs grew by \(repairs); loss pending \(lossPending), J=\(hasJournal)")
            if expected { lossPending = false }
        } else {
            precondition(passed == 0 && repairs == 0 && repairMessages == 0, "a refused packet passed on \(passed) messages")
        }
        if repairs == 0 { precondition(repairMessages == 0, "repair messages without a repair") }
        return isAccepted
    }

    /// A leaves (BY) or B closes; every held note must have been released.
    func finish() {
        if options.bClosesFirst {
            b.session.close(now: now)
        } else {
            a.session.close(now: now)
        }
        deliver()
        a.session.close(now: now)
        b.session.close(now: now)
        deliver()
        precondition(b.joined.isEmpty && a.joined.isEmpty && b.session.connectedPeers.isEmpty && a.session.connectedPeers.isEmpty,
                     "peers left after both closed")
        precondition(b.held.isEmpty, "notes \(b.held.sorted()) still on after A left")
    }
}

// MARK: (b) the input as the journal of packets after loss

func ch(_ c: Int) -> UInt4 { UInt4(masking: UInt8(c)) }
func u7(_ v: Int) -> UInt7 { UInt7(masking: UInt8(v)) }
func on(_ c: Int, _ n: Int, _ v: Int) -> MIDIMessage { .noteOn(channel: ch(c), note: u7(n), velocity: u7(v)) }
func off(_ c: Int, _ n: Int) -> MIDIMessage { .noteOff(channel: ch(c), note: u7(n), velocity: u7(0)) }
func cc(_ c: Int, _ n: Int, _ v: Int) -> MIDIMessage { .controlChange(channel: ch(c), controller: u7(n), value: u7(v)) }

let warmUp: [MIDIMessage] = [
    cc(0, 0, 1), cc(0, 32, 2), .programChange(channel: ch(0), program: u7(5)), cc(0, 7, 100), cc(0, 64, 127),
    on(0, 60, 100), on(0, 64, 90), on(1, 48, 70), .pitchBend(channel: ch(1), value: UInt14(masking: 9000)),
    .channelPressure(channel: ch(1), pressure: u7(30)), .polyPressure(channel: ch(1), note: u7(48), pressure: u7(40)),
    on(9, 36, 127), .songPosition(UInt14(masking: 16)), .start, .timingClock,
]
let later: [MIDIMessage] = [
    off(0, 64), on(0, 67, 80), cc(0, 1, 33), cc(1, 66, 127), .programChange(channel: ch(2), program: u7(9)), on(2, 72, 1), .stop,
]

func journalAfterLoss(_ input: UnsafeRawBufferPointer) {
    trace("(b)")
    let harness = Harness(Options())
    harness.send(warmUp)
    harness.forward(mask: 0xFF, lastFirst: false)
    let commands: [UInt8] = input.count & 1 == 0 ? [] : [0x80, 60, 64]
    let accepted = harness.madeUp(skip: 1, commands: commands, journal: input)
    let decodes = (try? RecoveryJournal.length(of: input)) != nil
    precondition(accepted == decodes, "a packet with the input as its journal was \(accepted ? "accepted" : "refused"), "
                 + "but the input \(decodes ? "decodes" : "does not decode") as a journal")
    let keep = Int(input.first ?? 0) % 24
    harness.advance(1_000_000)
    harness.send(later)
    harness.send([on(3, 50, 60)])
    harness.mutated(keep: keep, xor: false, fuzz: input)
    harness.send([off(0, 60), cc(3, 64, 100)])
    harness.send([on(3, 51, 61)])
    harness.mutated(keep: 0, xor: true, fuzz: input)
    harness.advance(20_000_000)
    harness.finish()
}

// MARK: (c) the input as a script

let steps: [UInt64] = [0, 0, 1_000_000, 5_000_000, 12_000_000, 50_000_000, 300_000_000, 1_100_000_000]

func script(_ input: UnsafeRawBufferPointer) {
    guard let flags = input.first else { return }
    trace("(c)")
    let harness = Harness(Options(playout: flags & 1 != 0, runningStatus: flags & 2 != 0, smallDatagrams: flags & 4 != 0,
                                  bClosesFirst: flags & 8 != 0, confirm: flags & 16 != 0))
    var offset = 1, records = 0
    while offset + 1 < input.count, records < 256 {
        let op = input[offset], length = Int(input[offset + 1])
        offset += 2
        records += 1
        let end = min(offset + length, input.count)
        let bytes = UnsafeRawBufferPointer(rebasing: input[offset..<end])
        switch op & 3 {
        case 0:
            var parser = MIDIParser(maxSysExLength: 128)
            var messages: [MIDIMessage] = []
            parser.parse(bytes) { if case .message(let message) = $0 { messages.append(message) } }
            harness.send(messages)
            offset = end
        case 1:
            harness.forward(mask: UInt8(length), lastFirst: op & 4 != 0)
        case 2:
            harness.madeUp(skip: Int(op >> 2 & 7), commands: [], journal: bytes)
            offset = end
        default:
            let k = Int(op >> 2 & 7)
            harness.mutated(keep: k * 4, xor: k == 7, fuzz: bytes)
            offset = end
        }
        harness.advance(steps[Int(op >> 5)])
    }
    harness.forward(mask: 0xFF, lastFirst: false)
    harness.finish()
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    if parts.contains("a") { checkCodec(input) }
    // A session pair costs milliseconds here (debug build, ASan): one scenario per input.
    if input.first.map({ $0 & 0x80 == 0 }) ?? true {
        if parts.contains("b") { journalAfterLoss(input) }
    } else if parts.contains("c") {
        script(input)
    }
    return 0
}

runFuzzer { fuzzOne($0, $1) }
