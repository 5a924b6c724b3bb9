// rtpmidi-bench: jambridge's RTP-MIDI forwarding latency (against a bare UDP relay, in the
// same run), sustained throughput, and idle RSS/CPU with many peers; OSC in -> RTP-MIDI out latency and
// throughput (OSCScenarios.swift). See ../../rtpmidi-bench.sh.
#if canImport(Glibc)
import Glibc
#endif

func parseArguments() -> (Options, [String]) {
    var options = Options()
    var modes: [String] = []
    var arguments = CommandLine.arguments.dropFirst()
    func value(_ name: String) -> String {
        guard let v = arguments.popFirst() else { emit("\(name) needs a value"); exit(2) }
        return v
    }
    while let argument = arguments.popFirst() {
        switch argument {
        case "--jambridge": options.jambridge = value(argument)
        case "--base-port": options.basePort = UInt16(value(argument))!
        case "--latency-seconds": options.latencySeconds = Double(value(argument))!
        case "--latency-rate": options.latencyRate = Int(value(argument))!
        case "--throughput-seconds": options.throughputSeconds = Double(value(argument))!
        case "--throughput-rate": options.throughputRate = Int(value(argument))!
        case "--batch": options.batch = Int(value(argument))!
        case "--peers": options.peers = Int(value(argument))!
        case "--idle-seconds": options.idleSeconds = Double(value(argument))!
        case "--relay": options.relay = value(argument)
        case "latency", "throughput", "idle", "glob", "osc-latency", "osc-throughput": modes.append(argument)
        case "all": modes += ["latency", "throughput", "idle"]
        default:
            emit("""
                usage: rtpmidi-bench [latency] [throughput] [idle] [all] [glob] [osc-latency] [osc-throughput] --jambridge PATH [--base-port EVEN]
                       [--latency-seconds S] [--latency-rate N] [--throughput-seconds S] [--throughput-rate N]
                       [--batch N] [--peers N] [--idle-seconds S] [--relay poll|process|dispatch|dispatch-async|dispatch-timer|dispatch-async-timer]
                osc-latency and osc-throughput read OSC_LATENCY_SECONDS, OSC_LATENCY_RATE, OSC_WARMUP_SECONDS,
                OSC_THROUGHPUT_SECONDS, OSC_THROUGHPUT_RATE and OSC_BATCH from the environment (see OSCScenarios.swift)
                """)
            exit(2)
        }
    }
    if options.jambridge.isEmpty { emit("--jambridge PATH is required"); exit(2) }
    if options.basePort == 0 { options.basePort = UInt16.random(in: 10_000...19_000) * 2 } // 20000-38000
    if modes.isEmpty { modes = ["latency", "throughput", "idle"] }
    return (options, modes)
}

func main() {
    if CommandLine.arguments.dropFirst().first == "serve-relay" { serveRelay(Array(CommandLine.arguments.dropFirst(2))) }
    let (options, modes) = parseArguments()
    do {
        for (index, mode) in modes.enumerated() {
            var o = options
            o.basePort = options.basePort + UInt16(index) * 40 // fresh ports for each daemon
            switch mode {
            case "latency": try runLatency(o)
            case "throughput": try runThroughput(o)
            case "glob": runGlob()
            case "osc-latency": try runOSCLatency(o)
            case "osc-throughput": try runOSCThroughput(o)
            default: try runIdle(o)
            }
        }
    } catch {
        emit("error: \(error)")
        exit(1)
    }
}

main()
