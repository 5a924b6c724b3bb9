// Random datagrams never crash or hang the RTP-MIDI payload decoder, and what it delivers is
// exact. The input is decoded twice by fresh receivers: once as one RTP packet, and once split
// into up to three packets before each later "80 61" (V=2, PT=97: how every RTP-MIDI packet
// starts), so SysEx segment state is carried across packets. Invariants:
// - a payload that throws delivers nothing and leaves the receiver's counters unchanged;
// - a delivered SysEx is at most `sysExLimit` bytes, all below 0x80;
// - `validated` is called exactly once for a payload that decodes (never for one that throws),
//   before any message is delivered; the journal range it is given lies inside the payload,
//   after the command section header, and decodes as one journal using exactly those bytes;
// - the parsed RTP header re-encodes to 12 bytes that parse back to the same header;
// - the messages each packet delivers, re-sent through an RTPMIDISender (running status and
//   a small datagram size chosen by the sequence number's low bits, so SysEx gets split into
//   segments) and decoded by a fresh receiver, come back as the same messages at the same
//   times (RTP timestamp + delta), and every journal in its packets decodes and re-encodes
//   to the same bytes, except where the sender documents otherwise: a SysEx more
//   than 2^28-1 ticks after the previous command may play with it (delta 0).
import FuzzSupport
import MIDI
import RTPMIDI

let sysExLimit = 256
/// The largest delta time a sender writes (4 bytes of 7 bits).
let maxDelta: UInt32 = (1 << 28) - 1

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    var whole = RTPMIDIReceiver(sysExLimit: sysExLimit)
    decode(input, with: &whole)

    // The same bytes as up to three consecutive packets, split before each later 80 61.
    var starts = [0]
    var index = 1
    while starts.count < 3, index + 1 < size {
        if input[index] == 0x80, input[index + 1] == 0x61 { starts.append(index) }
        index += 1
    }
    guard starts.count > 1 else { return 0 }
    var split = RTPMIDIReceiver(sysExLimit: sysExLimit)
    for (n, start) in starts.enumerated() {
        let end = n + 1 < starts.count ? starts[n + 1] : size
        decode(UnsafeRawBufferPointer(rebasing: input[start..<end]), with: &split)
    }
    return 0
}

func decode(_ datagram: UnsafeRawBufferPointer, with receiver: inout RTPMIDIReceiver) {
    let header: RTPHeader, range: Range<Int>
    do {
        (header, range) = try RTPHeader.parse(datagram)
    } catch {
        return
    }
    precondition(range.lowerBound >= RTPHeader.size && range.lowerBound <= range.upperBound && range.upperBound <= datagram.count)
    var encodedHeader: [UInt8] = []
    header.encode(into: &encodedHeader)
    precondition(encodedHeader.count == RTPHeader.size)
    encodedHeader.withUnsafeBytes { bytes in
        guard let (again, payload) = try? RTPHeader.parse(bytes) else { preconditionFailure("re-encoded RTP header does not parse") }
        precondition(again == header && payload == RTPHeader.size..<RTPHeader.size, "RTP header did not survive a re-encode")
    }

    let payload = UnsafeRawBufferPointer(rebasing: datagram[range])
    var delivered: [(MIDIMessage, UInt32)] = []
    let (tooLong, incomplete) = (receiver.sysExTooLong, receiver.sysExIncomplete)
    var validations = 0
    do {
        try receiver.receive(payload, validated: { journal in
            precondition(delivered.isEmpty, "validated called after \(delivered.count) messages were delivered")
            validations += 1
            guard let journal else { return }
            precondition(journal.lowerBound >= 1 && journal.lowerBound <= journal.upperBound && journal.upperBound <= payload.count,
                         "journal range \(journal) outside a \(payload.count)-byte payload")
            // The range holds exactly one well-formed journal: the decoder takes all of it.
            let journalBytes = UnsafeRawBufferPointer(rebasing: payload[journal])
            guard let (_, used) = try? RecoveryJournal.parsing(journalBytes) else {
                preconditionFailure("the journal in \(journal) of \(Array(payload)) does not decode")
            }
            precondition(used == journal.count, "journal range \(journal) but the decoder used \(used) bytes")
        }) { message, ticks in delivered.append((message, ticks)) }
        precondition(validations == 1, "validated called \(validations) times for a well-formed payload")
    } catch {
        precondition(validations == 0, "a payload that threw (\(error)) was reported validated")
        precondition(delivered.isEmpty, "a payload that threw (\(error)) delivered \(delivered.count) messages")
        precondition(receiver.sysExTooLong == tooLong && receiver.sysExIncomplete == incomplete,
                     "a payload that threw (\(error)) changed the receiver's SysEx state")
        return
    }
    for (message, _) in delivered {
        if case .sysEx(let data) = message {
            precondition(data.count <= sysExLimit && data.allSatisfy { $0 < 0x80 }, "SysEx of \(data.count) bytes delivered")
        }
    }
    roundTrip(delivered, runningStatus: header.sequence & 1 != 0, maxDatagram: header.sequence & 2 != 0 ? 40 : 1400)
}

/// Re-sends `messages` (with their ticks) through a sender and checks a fresh receiver gets them back.
func roundTrip(_ messages: [(MIDIMessage, UInt32)], runningStatus: Bool, maxDatagram: Int) {
    guard !messages.isEmpty else { return }
    var sender = RTPMIDISender(ssrc: 0x1234_5678, sequence: 0xFFFE, maxDatagram: maxDatagram, runningStatus: runningStatus)
    var decoder = RTPMIDIReceiver(sysExLimit: 1 << 20)
    var again: [(MIDIMessage, UInt32)] = []
    var packets = 0
    let limit = sender.maxDatagram
    let send: (UnsafeRawBufferPointer) -> Void = { packet in
        precondition(packet.count <= limit, "sender produced a \(packet.count)-byte datagram")
        guard let (header, range) = try? RTPHeader.parse(packet) else { preconditionFailure("sender's RTP header does not parse") }
        precondition(header.ssrc == 0x1234_5678 && header.sequence == 0xFFFE &+ UInt16(truncatingIfNeeded: packets))
        packets += 1
        do {
            let payload = UnsafeRawBufferPointer(rebasing: packet[range])
            try decoder.receive(payload, validated: { journal in
                if let journal { checkSentJournal(UnsafeRawBufferPointer(rebasing: payload[journal])) }
            }) { message, ticks in
                again.append((message, header.timestamp &+ ticks))
            }
        } catch {
            preconditionFailure("the sender's packet \(Array(packet)) does not decode: \(error)")
        }
    }
    for (message, ticks) in messages { sender.append(message, tick: ticks, send) }
    sender.flush(send)
    precondition(sender.isEmpty)
    precondition(again.map(\.0) == messages.map(\.0), "messages changed in a round trip: \(messages.map(\.0)) -> \(again.map(\.0))")
    var last: UInt32? = nil
    for ((message, ticks), (_, time)) in zip(messages, again) {
        var allowed = time == ticks
        if !allowed, case .sysEx = message, let last, ticks &- last > maxDelta { allowed = time == last }
        precondition(allowed, "\(message) at tick \(ticks) came back at \(time) (previous at \(last.map(String.init) ?? "-"))")
        last = time
    }
}

/// A journal a sender wrote decodes, and re-encodes to the same bytes (senders write the
/// canonical form).
func checkSentJournal(_ bytes: UnsafeRawBufferPointer) {
    guard let journal = try? RecoveryJournal(parsing: bytes) else { preconditionFailure("sent journal \(Array(bytes)) does not decode") }
    var again: [UInt8] = []
    journal.encode(into: &again)
    precondition(again.elementsEqual(bytes), "sent journal \(Array(bytes)) re-encodes as \(again)")
}

runFuzzer { fuzzOne($0, $1) }
