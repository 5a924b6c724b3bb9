// Random datagrams never crash, hang or leak in the OSC packet decoder, and what it decodes
// survives liblo's encoder:
//   - a packet that throws delivered nothing (a packet is checked whole first);
//   - a packet that decodes delivers at most OSCPacket.maxElements messages;
//   - every decoded message encodes (its address starts with '/', its strings hold no NUL,
//     its MIDI arguments are 4 bytes), the encoding decodes to exactly that message (NaN
//     compared as NaN), and encoding that again gives the same bytes (the encoding is canonical).
// FUZZ_TRACE=1 prints each decoded message or the error, to read a reproducer.
import FuzzSupport
import OSC

/// Equal, with any NaN equal to any NaN of the same type (OSCArgument's == follows IEEE: NaN != NaN).
func same(_ a: OSCMessage, _ b: OSCMessage) -> Bool {
    a.address == b.address && a.arguments.count == b.arguments.count && zip(a.arguments, b.arguments).allSatisfy { pair in
        switch pair {
        case (.float(let x), .float(let y)): x.isNaN ? y.isNaN : x == y
        case (.double(let x), .double(let y)): x.isNaN ? y.isNaN : x == y
        default: pair.0 == pair.1
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    var messages: [OSCMessage] = []
    do {
        try OSCPacket.decode(input) { message, _ in messages.append(message) }
    } catch {
        trace("error: \(error)")
        precondition(messages.isEmpty, "a packet that failed (\(error)) delivered \(messages)")
        return 0
    }
    precondition(messages.count <= OSCPacket.maxElements, "\(messages.count) messages from one packet")
    var encoded: [UInt8] = []
    var again: [UInt8] = []
    for message in messages {
        trace("message: \(message)")
        do {
            try OSCPacket.encode(message, into: &encoded)
        } catch {
            preconditionFailure("decoded \(message) does not encode: \(error)")
        }
        var decoded: [OSCMessage] = []
        do {
            try OSCPacket.decode(encoded) { message, timeTag in
                precondition(timeTag == OSCPacket.immediately, "a bare message decoded with time tag \(timeTag)")
                decoded.append(message)
            }
        } catch {
            preconditionFailure("the encoding of \(message) does not decode: \(error) \(encoded)")
        }
        precondition(decoded.count == 1 && same(decoded[0], message), "\(message) re-encoded decodes as \(decoded)")
        do {
            try OSCPacket.encode(decoded[0], into: &again)
        } catch {
            preconditionFailure("\(decoded[0]) does not encode: \(error)")
        }
        precondition(again == encoded, "the encoding of \(message) is not canonical: \(encoded) then \(again)")
    }
    return 0
}

runFuzzer { fuzzOne($0, $1) }
