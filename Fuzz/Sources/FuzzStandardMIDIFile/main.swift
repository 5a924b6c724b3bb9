// Random bytes never crash or hang the Standard MIDI File reader; a file it accepts can be
// timed and written back to bytes that read as the same file.
import FuzzSupport
import MIDI

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let file = try? StandardMIDIFile(bytes: bytes) else { return 0 }
    _ = TimedSong(file)
    let reread = try? StandardMIDIFile(bytes: file.encoded())
    precondition(reread == file, "a file read from bytes did not survive encoded()")
    return 0
}

runFuzzer { fuzzOne($0, $1) }
