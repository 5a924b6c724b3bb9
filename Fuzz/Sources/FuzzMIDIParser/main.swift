// Random bytes never crash or hang the MIDI parser, and what it emits is exact:
// every message re-encodes to bytes that parse back to the same message.
import FuzzSupport
import MIDI

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    var parser = MIDIParser(maxSysExLength: 512)
    parser.parse(bytes) { output in
        guard case .message(let message) = output else { return }
        if case .sysEx(let payload) = message { precondition(payload.count <= 512 && payload.allSatisfy { $0 < 0x80 }) }
        var encoder = MIDIEncoder()
        var encoded: [UInt8] = []
        encoder.encode(message, into: &encoded)
        var check = MIDIParser(maxSysExLength: 512)
        var again: [MIDIParserOutput] = []
        check.parse(encoded) { again.append($0) }
        precondition(again == [.message(message)], "\(message) did not survive a re-encode")
    }
    return 0
}

runFuzzer { fuzzOne($0, $1) }
