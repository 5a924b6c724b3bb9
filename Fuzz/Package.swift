// swift-tools-version:6.1
// libFuzzer targets, kept apart so a plain `swift build` of jambridge stays clean.
// scripts/fuzz.sh builds them with -sanitize=fuzzer,address and runs each for a fixed
// number of runs and seed on a copy of its seed corpus (corpus/<name>/).
import PackageDescription

let package = Package(
    name: "jambridge-fuzz",
    dependencies: [.package(name: "jambridge", path: "..")],
    targets: [
        // The libFuzzer driver call every target shares.
        .target(name: "FuzzSupport"),
        .executableTarget(name: "FuzzMIDIParser", dependencies: ["FuzzSupport", .product(name: "MIDI", package: "jambridge")]),
        .executableTarget(name: "FuzzStandardMIDIFile", dependencies: ["FuzzSupport", .product(name: "MIDI", package: "jambridge")]),
        .executableTarget(name: "FuzzRouteFile", dependencies: [
            "FuzzSupport", .product(name: "MIDI", package: "jambridge"), .product(name: "Routing", package: "jambridge"),
            .product(name: "RouteFile", package: "jambridge"), .product(name: "Drums", package: "jambridge"),
        ]),
        .executableTarget(name: "FuzzSessionPacket", dependencies: [
            "FuzzSupport", .product(name: "MIDI", package: "jambridge"), .product(name: "RTPMIDI", package: "jambridge"),
            .product(name: "Transport", package: "jambridge"),
        ]),
        .executableTarget(name: "FuzzRTPMIDIPayload", dependencies: [
            "FuzzSupport", .product(name: "MIDI", package: "jambridge"), .product(name: "RTPMIDI", package: "jambridge"),
        ]),
        .executableTarget(name: "FuzzRecoveryJournal", dependencies: [
            "FuzzSupport", .product(name: "MIDI", package: "jambridge"), .product(name: "RTPMIDI", package: "jambridge"),
            .product(name: "Transport", package: "jambridge"),
        ]),
        .executableTarget(name: "FuzzOSCPacket", dependencies: ["FuzzSupport", .product(name: "OSC", package: "jambridge")]),
        .executableTarget(name: "FuzzDrumkitXML", dependencies: [
            "FuzzSupport", .product(name: "DrumKits", package: "jambridge"), .product(name: "Drums", package: "jambridge"),
        ]),
        // The daemon's commands, by OSC and by the control socket (both read in the JamBridge module).
        .executableTarget(name: "FuzzOSCControl", dependencies: [
            "FuzzSupport", .product(name: "MIDI", package: "jambridge"), .product(name: "OSC", package: "jambridge"),
            .product(name: "Jam", package: "jambridge"), .product(name: "JamBridge", package: "jambridge"),
        ]),
        .executableTarget(name: "FuzzControlRequest", dependencies: [
            "FuzzSupport", .product(name: "MIDI", package: "jambridge"), .product(name: "Jam", package: "jambridge"),
            .product(name: "JamBridge", package: "jambridge"), .product(name: "JSON", package: "jambridge"),
        ]),
        .executableTarget(name: "FuzzOSCMapping", dependencies: [
            "FuzzSupport", .product(name: "MIDI", package: "jambridge"), .product(name: "RouteFile", package: "jambridge"),
            .product(name: "OSC", package: "jambridge"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
