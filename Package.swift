// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "jambridge",
    products: [
        .executable(name: "jambridge", targets: ["jambridge"]),
        .library(name: "MIDI", targets: ["MIDI"]),
        .library(name: "Routing", targets: ["Routing"]),
        .library(name: "RouteFile", targets: ["RouteFile"]),
        .library(name: "Transport", targets: ["Transport"]),
        .library(name: "RTPMIDI", targets: ["RTPMIDI"]),
        .library(name: "ALSA", targets: ["ALSA"]),
        .library(name: "OSC", targets: ["OSC"]),
        .library(name: "JamBridge", targets: ["JamBridge"]),
        .library(name: "Jam", targets: ["Jam"]),
        .library(name: "Drums", targets: ["Drums"]),
        .library(name: "DrumKits", targets: ["DrumKits"]),
        .library(name: "Link", targets: ["Link"]),
        .library(name: "JSON", targets: ["JSON"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        // The MIDI 1.0 model, byte-stream parser/encoder and Standard MIDI Files (and SourceLocation). Stdlib only.
        .target(name: "MIDI"),
        // The route graph, its stages and the router that never leaves a note hanging. Pure: no I/O, no clock.
        .target(name: "Routing", dependencies: ["MIDI"]),
        // The route-file language: reads route files (YAML, the only module that knows it), checks them with
        // located errors and the songs and recording paths they name, and makes each block's model, which
        // belongs to the module that runs it (stages: Routing; OSC mappings: OSC; clock and activity: Jam; drums:
        // Drums), and checks the kits the route files name through DrumKits' loader.
        .target(name: "RouteFile", dependencies: ["MIDI", "Routing", "OSC", "Transport", "Jam", "Drums", "DrumKits", "CYAML"]),
        // libyaml (Debian libyaml-dev): the YAML parser under RouteFile's composer.
        .systemLibrary(name: "CYAML", pkgConfig: "yaml-0.1", providers: [.apt(["libyaml-dev"])]),
        // The jam (sans-I/O): clock master election, activity aggregation, clock generator and follower.
        .target(name: "Jam", dependencies: ["MIDI"]),
        // The drum sequencer (sans-I/O): kits as the mixer plays them, patterns, styles, the mixer.
        .target(name: "Drums", dependencies: ["MIDI", "Jam"]),
        // libsndfile (Debian libsndfile1-dev: WAV, FLAC and AIFF samples read, renders written), libsamplerate
        // (libsamplerate0-dev: rate conversion and pitch) and libxml2 (libxml2-dev: Hydrogen's drumkit.xml;
        // FoundationXML's XMLParser traps on some malformed input), loaded when a kit from disk first needs them
        // (dlopen), not linked: a daemon that reads no kit from disk maps none of them, nor the codecs and ICU they
        // bring in (issue 34). Their headers only: libxml2's lie in their own folder (pkg-config --cflags
        // libxml-2.0), which a system library target would also link.
        .target(name: "CKitLibraries", cSettings: [.unsafeFlags(["-I/usr/include/libxml2"])]),
        // Drum kits from disk: Hydrogen drumkits and sample folders (kit.yaml, read by RouteFile) into Drums' Kit.
        .target(name: "DrumKits", dependencies: ["Drums", "CKitLibraries"], swiftSettings: [.unsafeFlags(["-Xcc", "-I/usr/include/libxml2"])]),
        // JSON without Foundation: values, their reader and writer, Codable to and from them. Stdlib only.
        .target(name: "JSON"),
        // UDP sockets, network addresses and the poll(2) reader thread RTPMIDI and OSC share.
        .target(name: "Transport"),
        // Linux calls Glibc's module leaves out (timerfd(2): the session's timer, read by the thread that reads its
        // ports; eventfd(2): how a real-time thread wakes the engine's queue) or Swift cannot make (prctl(2) is
        // variadic). libc's, no package.
        .systemLibrary(name: "CLinux"),
        // AppleMIDI sessions and the RTP-MIDI payload (sans-I/O), and their UDP transport.
        .target(name: "RTPMIDI", dependencies: ["MIDI", "Transport", "CLinux"]),
        // libasound's sequencer API with one-line C functions for its macros (Debian libasound2-dev).
        .systemLibrary(name: "CALSA", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
        // ALSA sequencer client: ports, connections, hot-plug announcements, events <-> MIDI.
        .target(name: "ALSA", dependencies: ["CALSA", "MIDI", "Transport"]),
        // liblo's message codec (Debian liblo-dev); jambridge owns its UDP sockets.
        .systemLibrary(name: "CLiblo", pkgConfig: "liblo", providers: [.apt(["liblo-dev"])]),
        // OSC endpoints: packets <-> messages, UDP sockets, address-to-MIDI mapping both ways (and its model),
        // motion -> activity.
        .target(name: "OSC", dependencies: ["CLiblo", "MIDI", "Transport"]),
        // The avahi dns_sd compatibility library (Debian libavahi-compat-libdnssd-dev).
        .systemLibrary(name: "CDNSSD", providers: [.apt(["libavahi-compat-libdnssd-dev"])]),
        // Advertising and browsing `_apple-midi._udp` sessions through CDNSSD.
        .target(name: "Bonjour", dependencies: ["CDNSSD"]),
        // Ableton Link (Debian ableton-link-dev, header-only C++ over libasio-dev) behind a small C interface of ours.
        .target(name: "CLink", cxxSettings: [.define("LINK_PLATFORM_LINUX")], linkerSettings: [.linkedLibrary("pthread")]),
        // Ableton Link's session on this instance's clock, through CLink.
        .target(name: "Link", dependencies: ["CLink", "MIDI", "Jam"]),
        // Assembly: endpoints from the config, engine loop, lifecycle, logging.
        .target(name: "JamBridge", dependencies: [
            "MIDI", "Routing", "RouteFile", "Transport", "RTPMIDI", "Bonjour", "ALSA", "OSC", "Jam", "Drums", "DrumKits", "Link", "JSON",
            "CLinux",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
        ]),
        // Linked by the toolchain's lld with the relative relocations packed (DT_RELR) and none of its own symbols
        // exported (the static standard library's link exports them all): what the loader reads and writes at start
        // was 3 MB of the binary's resident memory (issue 34). Still position-independent.
        .executableTarget(name: "jambridge", dependencies: [
            "JamBridge", "JSON", "RouteFile", "CLinux",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ], linkerSettings: [.unsafeFlags(["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
                                          "-Xlinker", "--no-export-dynamic"])]),
        // Seeded random MIDI for the property tests of several test targets.
        .target(name: "MIDITestSupport", dependencies: ["MIDI"], path: "Tests/MIDITestSupport"),
        .testTarget(name: "MIDITests", dependencies: ["MIDI", "MIDITestSupport"]),
        .testTarget(name: "RoutingTests", dependencies: ["MIDI", "Routing", "MIDITestSupport"]),
        .testTarget(name: "RouteFileTests", dependencies: ["MIDI", "Routing", "RouteFile", "OSC", "Transport", "Jam", "MIDITestSupport"]),
        .testTarget(name: "RTPMIDITests", dependencies: ["MIDI", "RTPMIDI", "Transport", "MIDITestSupport"]),
        .testTarget(name: "JamTests", dependencies: ["Jam", "MIDI", "MIDITestSupport"]),
        .testTarget(name: "DrumsTests", dependencies: ["Drums", "Jam", "MIDI"]),
        .testTarget(name: "DrumKitsTests", dependencies: ["DrumKits", "Drums", "RouteFile"]),
        .testTarget(name: "BonjourTests", dependencies: ["Bonjour"]),
        .testTarget(name: "ALSATests", dependencies: ["ALSA", "CALSA", "MIDI", "MIDITestSupport"]),
        .testTarget(name: "OSCTests", dependencies: ["OSC", "CLiblo", "MIDI", "Transport", "MIDITestSupport"]),
        .testTarget(name: "JamBridgeTests", dependencies: ["MIDI", "Routing", "RouteFile", "Transport", "RTPMIDI", "ALSA", "Jam", "JamBridge", "JSON", "MIDITestSupport"]),
        .testTarget(name: "JSONTests", dependencies: ["JSON"]),
        // Man pages and README: lint and consistency with the shipped files.
        .testTarget(name: "DocumentationTests"),
    ],
    swiftLanguageModes: [.v6],
    cxxLanguageStandard: .cxx17
)
