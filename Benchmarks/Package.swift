// swift-tools-version:6.1
// Benchmarks with percentiles and malloc counts (ordo-one package-benchmark).
// Run: cd Benchmarks && swift package --disable-sandbox benchmark
// Results and the machine they ran on are recorded in ../BENCHMARKS.md.
import PackageDescription

let package = Package(
    name: "jambridge-benchmarks",
    dependencies: [
        .package(name: "jambridge", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "RouterBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "MIDI", package: "jambridge"),
                .product(name: "Routing", package: "jambridge"),
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
    ],
    swiftLanguageModes: [.v6]
)
