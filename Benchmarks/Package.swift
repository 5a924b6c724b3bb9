// swift-tools-version:6.1
// Benchmarks with percentiles and malloc counts (ordo-one package-benchmark).
// Run: cd Benchmarks && swift package --disable-sandbox benchmark --skip-target rtpmidi-bench
// Results and the machine they ran on are recorded in ../BENCHMARKS.md.
import PackageDescription

let package = Package(
    name: "jambridge-benchmarks",
    dependencies: [
        .package(name: "jambridge", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        // What several benchmark targets share (their configuration).
        .target(
            name: "BenchmarkSupport",
            dependencies: [.product(name: "Benchmark", package: "benchmark")],
            path: "Benchmarks/BenchmarkSupport"
        ),
        .executableTarget(
            name: "RouterBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "MIDI", package: "jambridge"),
                .product(name: "Routing", package: "jambridge"),
                .product(name: "RouteFile", package: "jambridge"),
            ],
            path: "Benchmarks/RouterBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "ParserBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "MIDI", package: "jambridge"),
            ],
            path: "Benchmarks/ParserBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The recovery journal's cost per RTP-MIDI packet (RTPMIDISender), results in ../BENCHMARKS.md.
        .executableTarget(
            name: "JournalBenchmarks",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "MIDI", package: "jambridge"),
                .product(name: "RTPMIDI", package: "jambridge"),
            ],
            path: "Benchmarks/JournalBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // ALSA sequencer events <-> MIDI messages (SequencerEvent), results in ../BENCHMARKS.md.
        .executableTarget(
            name: "ALSABenchmarks",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "MIDI", package: "jambridge"),
                .product(name: "ALSA", package: "jambridge"),
            ],
            path: "Benchmarks/ALSABenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // RTP-MIDI forwarding through a running jambridge (latency against a bare UDP relay,
        // throughput, idle RSS/CPU with 16 peers). Not a package-benchmark target: run
        // ./rtpmidi-bench.sh, results in ../BENCHMARKS.md.
        .executableTarget(
            name: "rtpmidi-bench",
            dependencies: [
                .product(name: "MIDI", package: "jambridge"),
                .product(name: "RTPMIDI", package: "jambridge"),
                .product(name: "Transport", package: "jambridge"),
            ],
            path: "Benchmarks/RTPMIDIBench"
        ),
    ],
    swiftLanguageModes: [.v6]
)
