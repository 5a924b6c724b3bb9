import Benchmark

/// The metrics and limits the per-packet and per-event benchmarks share: time, throughput,
/// mallocs and instructions, in nanoseconds, up to 3 s or 20,000 samples.
public func perItemConfiguration() -> Benchmark.Configuration {
    Benchmark.Configuration(
        metrics: [.wallClock, .throughput, .mallocCountTotal, .instructions],
        timeUnits: .nanoseconds,
        scalingFactor: .one,
        maxDuration: .seconds(3),
        maxIterations: 20_000
    )
}
