// Random mappings and hostile OSC streams never crash the mapping layer, and what it sends is sound.
//
// The input is read as a script (bytes past its end read as 0):
//   byte 0: how many route mappings (1-3); then per mapping: flags (bit 0: the MIDI-over-OSC family),
//   an entry count (0-3) and per entry a template (literals and captures with ranges, empty or inverted ones
//   impossible in ClosedRange but degenerate ones possible) and an action: a control (controllers, note,
//   pitch bend, program or pressure, numbers from captures or constants incl. Int.min/max, argument indexes
//   incl. negative and huge, input ranges incl. degenerate and infinite ones, outputs incl. inverted and
//   huge, curves incl. 0, negative, NaN and infinite exponents, smoothing incl. NaN and infinity) or motion
//   (axes, units, high-pass, attack, release, range, controller and channel, all from hostile pools);
//   then op records until the end: a tick, or an OSC message (an address built from a template with random
//   captures, a family address or random text; 0-4 arguments of every type with NaN, infinities, huge
//   values) at a time stepping by amounts incl. 0, backwards, NaN and infinity.
// Invariants:
//   - only cc, note on (velocity > 0), note off, pitch bend, program and channel pressure are sent, and
//     only from a mapped message or a tick; unmatched and rejected messages send nothing;
//   - each rejection is counted once, under its kind, and its description names the address;
//   - no note is turned on twice or off when not on by the mapped entries (family notes excepted);
//   - every MIDI message sent is fed to the feedback mapper; what it sends has at most its maximum
//     of arguments, and its full state never holds two messages for one address;
//   - an echo filter fed everything as one controller's input never admits that value back to it;
//   - with every smoothing, attack and release at most 10 s, ticks hours later settle everything.
// FUZZ_TRACE=1 prints the mappings and what happens, to read a reproducer.
import FuzzSupport
import MIDI
import OSC
import RouteFile

/// The input's bytes, read in order; 0 past the end.
struct Script {
    let bytes: UnsafeRawBufferPointer
    var offset = 0
    var atEnd: Bool { offset >= bytes.count }
    mutating func byte() -> Int {
        defer { offset += 1 }
        return offset < bytes.count ? Int(bytes[offset]) : 0
    }
    mutating func pick<T>(_ pool: [T]) -> T { pool[byte() % pool.count] }
}

let here = SourceLocation(file: "fuzz.yaml", line: 1, column: 1)
let literals = ["/1/fader", "/1/push", "/3/xy", "/pitch", "/", "/rotary", "/accxyz", "/ch", "1", "x", "/note", "/cc", ""]
let captureNames = ["n", "m", "page"]
let ranges: [ClosedRange<Int>?] = [nil, 1...8, 0...0, 0...127, 5...5, 0...Int.max, Int.min...(-1), 100...200, 1...16]
let offsets = [0, 1, -1, 20, 35, 127, 128, -20, 1_000_000, Int.max, Int.min]
let doubles: [Double] = [0, 1, -1, 0.5, 127, 8191, 1e-300, 1e300, -1e300, .infinity, -.infinity, .greatestFiniteMagnitude]
let outputs = [0, 127, -8192, 8191, 64, 1, -1, 200, Int.max, Int.min]
let exponents: [Double] = [1, 2, 0.5, 0, -1, .nan, .infinity, 1e-300, 1e300, 3]
let smoothings: [Double] = [0, 0, 0.05, 0.2, 1, -1, .nan, .infinity, 1e-300, 1e300]
let indexes = [0, 1, 2, 3, -1, Int.max, Int.min, 64, 63]
let steps: [Double] = [0.01, 0.01, 0.001, 0, 0.1, 1, 30, -0.5, -1e6, 1e9, .nan, .infinity, -.infinity]
let floats: [Float] = [0, 1, 0.5, -1, 0.25, 0.75, 127, .nan, .infinity, -.infinity, .greatestFiniteMagnitude, Float.leastNormalMagnitude / 4, 64, 8191]
let integers: [Int64] = [0, 1, 16, 17, 60, 100, 127, 128, -1, 8191, 8192, -8192, -8193, .max, .min, Int64(Int32.max)]

func number(_ script: inout Script, _ template: OSCAddressTemplate) -> OSCNumber {
    let choice = script.byte()
    let names = template.captureNames
    let capture: String? = choice % 4 == 0 || names.isEmpty ? (choice % 8 == 4 ? "zz" : nil) : names[choice % names.count]
    return OSCNumber(capture: capture, offset: script.pick(offsets))
}

func range(_ script: inout Script) -> ClosedRange<Double> {
    let a = script.pick(doubles), b = script.pick(doubles)
    return min(a, b)...max(a, b)
}

func makeTemplate(_ script: inout Script) -> OSCAddressTemplate {
    var pieces: [OSCAddressTemplate.Piece] = []
    let count = 1 + script.byte() % 4
    for index in 0..<count {
        if index % 2 == 1 || (index == 0 && script.byte() % 5 == 0) {
            pieces.append(.capture(name: captureNames[index % captureNames.count], range: script.pick(ranges)))
        } else {
            pieces.append(.literal(script.pick(literals)))
        }
    }
    return OSCAddressTemplate(pieces: pieces, description: "fuzz")
}

func entry(_ script: inout Script) -> OSCMappingEntry {
    let template = makeTemplate(&script)
    let kind = script.byte()
    if kind % 6 == 5 {
        let axes = (0..<script.byte() % 5).map { _ in script.pick(indexes) }
        let motion = MotionActivityMapping(axes: axes, unitsPerG: script.pick([1, 9.80665, 0, -1, .nan, .leastNonzeroMagnitude, .infinity]),
                                           highPass: script.pick(doubles + [.nan]), attack: script.pick(smoothings),
                                           release: script.pick(smoothings), range: range(&script),
                                           controller: script.pick(outputs), channel: script.pick([1, 16, 0, 17, -5, Int.max]))
        return OSCMappingEntry(template: template, action: .motion(motion), location: here)
    }
    let target: OSCControlTarget
    switch kind % 6 {
    case 0: target = .controllers((0..<1 + script.byte() % 3).map { _ in number(&script, template) })
    case 1: target = .note(number(&script, template), velocity: script.pick(outputs))
    case 2: target = .pitchBend
    case 3: target = .program
    default: target = .channelPressure
    }
    let arguments = (0..<script.byte() % 4).map { _ in script.pick(indexes) }
    let control = OSCControlMapping(target: target, channel: number(&script, template), arguments: arguments,
                                    input: range(&script), output: (script.pick(outputs), script.pick(outputs)),
                                    exponent: script.pick(exponents), smoothing: script.pick(smoothings))
    return OSCMappingEntry(template: template, action: .control(control), location: here)
}

func argument(_ script: inout Script) -> OSCArgument {
    switch script.byte() % 12 {
    case 0, 1, 2: .float(script.pick(floats))
    case 3, 4: .int32(Int32(truncatingIfNeeded: script.pick(integers)))
    case 5: .int64(script.pick(integers))
    case 6: .double(Double(script.pick(floats)) * script.pick([1, 1e300, -1]))
    case 7: .bool(script.byte() & 1 == 1)
    case 8: .string("0.5")
    case 9: .blob([1, 2, 3])
    case 10: .nil_
    default: script.pick([.impulse, .midi([0, 0x90, 60, 100]), .char(65), .timetag(1)])
    }
}

func address(_ script: inout Script, _ templates: [OSCAddressTemplate]) -> String {
    let choice = script.byte()
    switch choice % 4 {
    case 0, 1:
        guard !templates.isEmpty else { return "/1/fader1" }
        let template = templates[choice / 4 % templates.count]
        let captures = template.captureNames.map { _ in script.pick([0, 1, 2, 3, 8, 9, 20, 107, 108, 127, 128, 999_999_999]) }
        return template.address(captures: captures) ?? script.pick(literals) + String(script.byte())
    case 2: return script.pick(["/note", "/cc", "/pitchbend", "/program", "/pressure"])
    default: return script.pick(literals) + script.pick(["", "1", "01", "0", "1234567890", "٣", "1/z"])
    }
}

/// True for the messages a mapper may send.
func isMappable(_ message: MIDIMessage) -> Bool {
    switch message {
    case .controlChange, .noteOff, .pitchBend, .programChange, .channelPressure: true
    case .noteOn(_, _, let velocity): velocity.value > 0
    default: false
    }
}

func run(_ input: UnsafeRawBufferPointer) {
    var script = Script(bytes: input)
    let mappings = (0..<1 + script.byte() % 3).map { _ -> OSCRouteMapping in
        let flags = script.byte()
        let entries = (0..<script.byte() % 4).map { _ in entry(&script) }
        return OSCRouteMapping(entries: entries, midi: flags & 1 == 1, location: here)
    }
    trace("mappings: \(mappings)")
    var mappers = mappings.map { OSCInputMapper(mapping: $0) }
    var feedback = OSCFeedbackMapper(mappings: mappings)
    var echo = EchoFilter<Int>()
    let templates = mappings.flatMap { $0.entries.map(\.template) }
    var time = 1000.0
    var notesOn = Set<Int>()

    func deliver(_ message: MIDIMessage) {
        precondition(isMappable(message), "sent \(message)")
        echo.record(message, from: 0)
        precondition(!echo.admits(message, to: 0), "\(message) echoed back to the controller that produced it")
        feedback.feedback(for: message) { osc, _ in
            trace("    feedback \(osc)")
            precondition(osc.arguments.count <= OSCFeedbackMapper.maxArguments, "feedback \(osc) has too many arguments")
        }
    }

    while !script.atEnd {
        let op = script.byte()
        let step = script.pick(steps) // a non-finite step is this op's time, not the clock's
        if step.isFinite { time += step }
        let now = step.isFinite ? time : step
        let which = op / 4 % mappers.count
        if op % 4 == 0 {
            trace("tick \(which) at \(now)")
            mappers[which].tick(at: now) { message in
                trace("  -> \(message)")
                deliver(message)
            }
            continue
        }
        let message = OSCMessage(address(&script, templates), (0..<script.byte() % 5).map { _ in argument(&script) })
        let before = mappers[which].rejections
        var sent: [MIDIMessage] = []
        let outcome = mappers[which].map(message, at: now) { sent.append($0) }
        trace("\(message) at \(now) -> \(outcome) \(sent)")
        let after = mappers[which].rejections
        switch outcome {
        case .mapped:
            precondition(after == before, "a mapped message counted a rejection")
        case .unmatched:
            precondition(sent.isEmpty && after == before, "an unmatched message sent \(sent)")
        case .rejected(let rejection):
            precondition(sent.isEmpty, "a rejected message sent \(sent)")
            precondition(rejection.address == message.address && rejection.description.hasPrefix(message.address))
            precondition(after.total == before.total + 1 && after[rejection.reason.kind] == before[rejection.reason.kind] + 1,
                         "rejection not counted once under \(rejection.reason.kind)")
        }
        // Family notes are passed on as sent (a repeated on is the app's to send); entry notes are tracked.
        let family = !mappings[which].entries.contains { $0.template.match(message.address) != nil }
        for midi in sent {
            if !family {
                switch midi {
                case .noteOn(let c, let n, _): precondition(notesOn.insert(which << 11 | Int(c.value) << 7 | Int(n.value)).inserted, "note on twice: \(midi)")
                case .noteOff(let c, let n, _): precondition(notesOn.remove(which << 11 | Int(c.value) << 7 | Int(n.value)) != nil, "note off when off: \(midi)")
                default: break
                }
            }
            deliver(midi)
        }
    }

    var addresses = Set<String>()
    for message in feedback.fullState() where message.address.hasPrefix("/") && !["/cc", "/pitchbend", "/program", "/pressure"].contains(message.address) {
        precondition(addresses.insert(message.address).inserted, "two state messages for \(message.address)")
    }

    let calm = mappings.allSatisfy { mapping in
        mapping.entries.allSatisfy { entry in
            switch entry.action {
            case .control(let control): !(control.smoothing > 10)
            case .motion(let motion): !(motion.release > 10) && !(motion.attack > 10)
            }
        }
    }
    if calm {
        for index in mappers.indices {
            mappers[index].tick(at: time + 10_000) { deliver($0) }
            mappers[index].tick(at: time + 20_000) { deliver($0) }
            precondition(!mappers[index].needsTick, "mapper \(index) still needs ticks hours on")
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

runFuzzer { fuzzOne($0, $1) }
