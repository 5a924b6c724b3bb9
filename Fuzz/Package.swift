// swift-tools-version:6.1
// libFuzzer targets, kept apart so a plain `swift build` of jambridge stays clean.
// Build: swift build -c debug -Xswiftc -sanitize=fuzzer,address -Xswiftc -use-ld=lld
// Run:   scripts/fuzz.sh (bounded by -runs and -seed) or by hand for long campaigns.
import PackageDescription

let package = Package(
    name: "jambridge-fuzz",
    dependencies: [.package(path: "..")],
    targets: [
        .executableTarget(name: "FuzzMIDIParser", dependencies: [.product(name: "MIDI", package: "jambridge")]),
        .executableTarget(name: "FuzzStandardMIDIFile", dependencies: [.product(name: "MIDI", package: "jambridge")]),
    ],
    swiftLanguageModes: [.v6]
)
