// Random OSC datagrams sent to an endpoint that takes jambridge's commands (`control: true`) never crash: each message
// decoded is read as every `/jambridge/...` command in turn (its arguments kept), and a command that comes of it is
// carried out by a jam (a JamConductor, the pure core `jambridge start|stop|tempo` drive) whose deadlines then run.
//   - a drums level is the argument as a whole number, from an int32, a float or a double of that value (NaN,
//     infinities, fractions and numbers beyond Int give no command);
//   - a tempo outside the generator's range is refused, never held to it (issue 41: 1e308 played at 300);
//   - nothing traps on the way (Int(Double) on NaN, infinity or 1e30 did: issue 29).
// FUZZ_TRACE=1 prints each command, to read a reproducer.
import FuzzSupport
import Jam
import JamBridge
import MIDI
import OSC

let commands = ["start", "stop", "tempo", "drums/style", "drums/level", "drums/mute", "drums/other", ""]

/// The argument as a number, as the command reads it (nil for other types).
func number(_ argument: OSCArgument) -> Double? {
    switch argument {
    case .float(let value): Double(value)
    case .double(let value): value
    case .int32(let value): Double(value)
    default: nil
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    var messages: [OSCMessage] = []
    do {
        try OSCPacket.decode(input) { message, _ in messages.append(message) }
    } catch {
        return 0
    }
    var jam = JamConductor(JamConductor.Configuration(election: ElectionConfiguration(ssrc: 1, name: "fuzz")))
    var now = MonotonicInstant(nanoseconds: 1_000_000_000_000)
    for message in messages {
        for name in commands {
            let sent = OSCMessage("/jambridge/" + name, message.arguments)
            guard let command = ControlCommand(sent) else { continue }
            trace("\(sent) -> \(command)")
            switch command {
            case .drums(.level(let level)):
                let value = number(sent.arguments[0])!
                precondition(level.map { Double($0) == value.rounded() } ?? (value.rounded() == 0), "\(sent) gave level \(String(describing: level))")
            case .jam(let command):
                let result = jam.perform(command, from: .osc("controls"), now: now) { _ in }
                precondition(jam.generator.tempo.isFinite && ClockGenerator.tempoRange.contains(jam.generator.tempo),
                             "tempo \(jam.generator.tempo) after \(sent)")
                if case .tempo(let bpm) = command, !ClockGenerator.tempoRange.contains(bpm), case .success = result {
                    preconditionFailure("\(sent) was carried out: \(result)")
                }
            case .drums:
                break
            }
            now = now.advanced(byNanoseconds: 50_000_000)
            var fired = 0
            // As the daemon fires it: ticks handed out 100 ms ahead (JamPart.lead).
            while let deadline = jam.nextDeadline(ahead: 100_000_000), deadline <= now, fired < 1000 {
                jam.fire(now: deadline, ahead: 100_000_000) { _ in }
                fired += 1
            }
        }
    }
    return 0
}

runFuzzer { fuzzOne($0, $1) }
