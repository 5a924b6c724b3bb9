import Benchmark
import MIDI
import RouteFile
import Routing

/// Events cycling through a realistic mix: note-on, CC, pitch bend, note-off on a few channels.
private func eventMix(count: Int, sources: Int) -> [MIDIEvent] {
    var events: [MIDIEvent] = []
    events.reserveCapacity(count)
    var i = 0
    while events.count < count {
        let channel = UInt4(masking: UInt8(i % 4))
        let note = UInt7(masking: UInt8(36 + i % 48))
        let source = EndpointID(UInt16(i % sources))
        let time = MonotonicInstant(nanoseconds: UInt64(i) * 1000)
        events.append(MIDIEvent(.noteOn(channel: channel, note: note, velocity: UInt7(masking: UInt8(1 + i % 127))), from: source, at: time))
        events.append(MIDIEvent(.controlChange(channel: channel, controller: UInt7(masking: 1), value: UInt7(masking: UInt8(i % 128))), from: source, at: time))
        events.append(MIDIEvent(.pitchBend(channel: channel, value: UInt14(masking: UInt16(i * 97 % 16384))), from: source, at: time))
        events.append(MIDIEvent(.noteOff(channel: channel, note: note, velocity: .zero), from: source, at: time))
        i += 1
    }
    return events
}

/// The six stages a busy live route might carry.
private func sixStages() -> [any RouteStage] {
    [
        KindFilter(passing: [MIDIMessageKinds(.noteOn), MIDIMessageKinds(.noteOff), MIDIMessageKinds(.controlChange), MIDIMessageKinds(.pitchBend)]),
        ChannelFilter(channels: [UInt4(masking: 0), UInt4(masking: 1), UInt4(masking: 2), UInt4(masking: 3)]),
        NoteRangeFilter(range: UInt7(masking: 24)...UInt7(masking: 108)),
        Transpose(semitones: 7),
        VelocityMap(curve: ValueCurve(input: 0...127, output: (low: 20, high: 127), exponent: 1.5)),
        ChannelRemap(mapping: [UInt4(masking: 0): UInt4(masking: 9)]),
    ]
}

private let batch = 1000

/// Routes `events` through `router` `batch` at a time per scaled iteration. The benchmark
/// closure runs once per iteration, so measuring starts only after the setup above it.
private func measure(_ benchmark: Benchmark, router: Router, events: [MIDIEvent]) {
    var delivered = 0
    var index = 0
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations {
        for _ in 0..<batch {
            router.dispatch(events[index]) { _, _ in delivered &+= 1 }
            index = index == events.count - 1 ? 0 : index + 1
        }
    }
    blackHole(delivered)
}

private func routerConfiguration() -> Benchmark.Configuration { Benchmark.Configuration(
    metrics: [.wallClock, .throughput, .mallocCountTotal, .instructions],
    timeUnits: .nanoseconds,
    scalingFactor: .one,
    maxDuration: .seconds(3),
    maxIterations: 20_000
) }

/// A route file with 10 endpoints and `count` routes, each with several stages.
func routeFile(routes count: Int) -> String {
    var yaml = "endpoints:\n"
    for i in 0..<5 { yaml += "  song\(i): { file: songs/song\(i).mid, loop: true }\n" }
    for i in 0..<5 { yaml += "  tape\(i): { record: tape\(i).mid }\n" }
    yaml += "routes:\n"
    for i in 0..<count {
        yaml += """
              - from: song\(i % 5)
                to: [tape\(i % 5), tape\((i + 1) % 5)]
                only: [note, cc, pitchbend]
                channels: [\(1 + i % 16)]
                notes: C2..C6
                transpose: \(i % 12)
                velocity: { curve: 1.5, from: [0, 127], to: [20, 127] }
                cc: { 1: 74 }
                channel: { \(1 + i % 16): \(1 + (i + 3) % 16) }

            """
    }
    return yaml
}

let benchmarks: @Sendable () -> Void = {
    Benchmark(
        "RouteFile-load-200-routes",
        configuration: .init(metrics: [.wallClock, .mallocCountTotal], timeUnits: .milliseconds, maxDuration: .seconds(5), maxIterations: 100)
    ) { benchmark in
        let yaml = routeFile(routes: 200)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try? RouteConfiguration.parse(yaml: yaml, file: "/tmp/200-routes.yaml"))
        }
    }

    // The same loop with no router: what the harness itself allocates and costs per batch.
    Benchmark("Harness-only-1000-events", configuration: routerConfiguration()) { benchmark in
        let events = eventMix(count: 4096, sources: 1)
        var delivered = 0
        var index = 0
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            for _ in 0..<batch {
                if case .noteOn = events[index].message { delivered &+= 1 }
                index = index == events.count - 1 ? 0 : index + 1
            }
        }
        blackHole(delivered)
    }

    Benchmark("Router-1-stage-1000-events", configuration: routerConfiguration()) { benchmark in
        let graph = RouteGraph(routes: [CompiledRoute(sources: [EndpointID(0)], sinks: [EndpointID(1)], stages: [Transpose(semitones: 12)])], endpointCount: 2)
        measure(benchmark, router: Router(graph: graph), events: eventMix(count: 4096, sources: 1))
    }

    Benchmark("Router-6-stage-1000-events", configuration: routerConfiguration()) { benchmark in
        let graph = RouteGraph(routes: [CompiledRoute(sources: [EndpointID(0)], sinks: [EndpointID(1)], stages: sixStages())], endpointCount: 2)
        measure(benchmark, router: Router(graph: graph), events: eventMix(count: 4096, sources: 1))
    }

    Benchmark("Router-100-routes-100-sources-1000-events", configuration: routerConfiguration()) { benchmark in
        let routes = (0..<100).map { i in
            CompiledRoute(sources: [EndpointID(UInt16(i))], sinks: [EndpointID(UInt16(100 + i % 8))], stages: sixStages())
        }
        let graph = RouteGraph(routes: routes, endpointCount: 108)
        measure(benchmark, router: Router(graph: graph), events: eventMix(count: 4096, sources: 100))
    }

    Benchmark("Router-fan-out-100-routes-1000-events", configuration: routerConfiguration()) { benchmark in
        let routes = (0..<100).map { i in
            CompiledRoute(sources: [EndpointID(0)], sinks: [EndpointID(UInt16(1 + i))], stages: [Transpose(semitones: i % 12)])
        }
        let graph = RouteGraph(routes: routes, endpointCount: 101)
        measure(benchmark, router: Router(graph: graph), events: eventMix(count: 4096, sources: 1))
    }
}
