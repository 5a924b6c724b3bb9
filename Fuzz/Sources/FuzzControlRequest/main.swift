// Random lines sent to the control socket never crash the daemon's reading of them: a line that is a request
// (`{"command": "tempo", "bpm": 128}` and the rest, see ControlRequest) is carried out by a jam (a JamConductor, the
// pure core the socket's start, stop and tempo drive) whose deadlines then run, and a request with finite numbers
// written back as JSON reads as the same request. Any JSON value read is written back as text that reads as the same.
// FUZZ_TRACE=1 prints each request, to read a reproducer.
import FuzzSupport
import Jam
import JamBridge
import JSON
import MIDI

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let line = Array(UnsafeRawBufferPointer(start: data, count: size))
    if let value = try? JSONValue(parsing: line) {
        let text = value.text()
        precondition((try? JSONValue(parsing: Array(text.utf8)))?.text() == text, "\(value) wrote \(text), which reads otherwise")
    }
    guard let request = ControlRequest(json: line) else { return 0 }
    trace("\(request)")
    if case .command(.jam(let command)) = request {
        var jam = JamConductor(JamConductor.Configuration(election: ElectionConfiguration(ssrc: 1, name: "fuzz")))
        let now = MonotonicInstant(nanoseconds: 1_000_000_000_000)
        _ = jam.perform(command, from: .controlSocket, now: now) { _ in }
        precondition(jam.generator.tempo.isFinite && ClockGenerator.tempoRange.contains(jam.generator.tempo),
                     "tempo \(jam.generator.tempo) after \(request)")
        var fired = 0
        // As the daemon fires it: ticks handed out 100 ms ahead (JamPart.lead).
        while let deadline = jam.nextDeadline(ahead: 100_000_000), deadline <= now.advanced(byNanoseconds: 1_000_000_000),
              fired < 1000 {
            jam.fire(now: deadline, ahead: 100_000_000) { _ in }
            fired += 1
        }
    }
    if case .command(.jam(.tempo(let bpm))) = request, !bpm.isFinite { return 0 } // JSON has no NaN or infinity
    precondition(ControlRequest(json: request.json) == request, "\(request) wrote \(request.json), which reads otherwise")
    return 0
}

runFuzzer { fuzzOne($0, $1) }
