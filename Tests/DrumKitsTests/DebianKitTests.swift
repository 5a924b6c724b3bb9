import Drums
import DrumKits
import Foundation
import RouteFile
import Testing

/// Debian's hydrogen-drumkits, all 14: samples in FLAC, WAV and AIFF, no `formatVersion`, three kits in the oldest
/// layout (one `filename` per instrument), folder names with spaces.
@Suite struct DebianKitTests {
    /// Each kit's folder, its instruments with a sample, and how many voices they cover.
    static let kits: [(folder: String, instruments: Int, voices: Int)] = [
        ("Audiophob", 14, 13), ("BJA_Pacific", 14, 9), ("ColomboAcousticDrumkit", 18, 12), ("ElectricEmpireKit", 32, 6),
        ("ForzeeStereo", 27, 13), ("Gimme A Hand 1.0", 14, 5), ("HardElectro1", 16, 5), ("Millo-Drums_v.1", 32, 13),
        ("Millo_MultiLayered2", 32, 12), ("Millo_MultiLayered3", 13, 12), ("The Black Pearl 1.0", 22, 13),
        ("VariBreaks", 16, 8), ("circAfrique v4", 27, 1), ("rumpf_kit_z01_h2", 82, 13),
    ]

    @Test func theFourteenKitsAreInstalled() throws {
        #expect(try FileManager.default.contentsOfDirectory(atPath: debianKits).sorted() == Self.kits.map(\.folder).sorted(),
                "scripts/install-deps.sh installs hydrogen-drumkits")
    }

    @Test(arguments: kits.map(\.folder))
    func everyKitLoads(_ folder: String) throws {
        let expected = try #require(Self.kits.first { $0.folder == folder })
        let path = debianKits + "/" + folder
        let (description, readerWarnings) = try HydrogenDrumkit.read(path: path + "/drumkit.xml")
        #expect(description.instruments.count == expected.instruments)
        #expect(readerWarnings.isEmpty)
        let loaded = try KitLoader.load(path: path, readingKitFile: KitFile.load(path:))
        #expect(loaded.kit.instruments.count == expected.voices)
        // Far within what a kit may take to load (issue 29): the figure is printed for jambridge-kits(5).
        print("\(folder): \(loaded.bytes) bytes counted to load")
        #expect(loaded.bytes > 0 && loaded.bytes < KitLoader.maximumBytes / 4)
        for (voice, instrument) in loaded.kit.instruments {
            #expect(instrument.voice == voice)
            for layer in instrument.layers {
                #expect(layer.sample.frameCount > 0)
                #expect(layer.sample.left.allSatisfy(\.isFinite) && layer.sample.right.allSatisfy(\.isFinite))
            }
        }
        // What the kit lacks is said once, by voice, and so is what nothing plays.
        let missing = DrumVoice.allCases.filter { loaded.kit.instruments[$0] == nil }
        #expect(loaded.warnings.contains(.missingVoices(kit: path, missing)))
        // Checking it (jambridge check: headers only, nothing decoded) warns of the same.
        #expect(try KitLoader.check(path: path, readingKitFile: KitFile.load(path:)) == loaded.warnings)
        if folder == "rumpf_kit_z01_h2" {
            #expect(loaded.warnings.map(\.description).contains { $0.hasSuffix("'a#4 -' and 59 more (the route file can give them voices)") })
        }
    }

    @Test func aKnownKitsVoices() throws {
        let path = debianKits + "/The Black Pearl 1.0"
        let loaded = try KitLoader.load(path: path, readingKitFile: KitFile.load(path:))
        #expect(loaded.kit.name == "The Black Pearl 1.0")
        #expect(loaded.kit.instruments.mapValues(\.name) == [
            .kick: "Pearl Kick", .snare: "Pearl Snare", .rim: "Pearl Side Stick", .clap: "Hand Clap",
            .hat: "Sabian Hat Closed", .pedalHat: "Sabian Hat Pedal", .openHat: "Sabian Hat Open",
            .lowTom: "Pearl Tom Floor", .midTom: "Pearl Tom 2", .crash: "Sabian Crash", .ride: "Paiste Ride",
            .rideBell: "Paiste Bell", .cowbell: "Cowbell",
        ])
        #expect(loaded.warnings == [
            .missingVoices(kit: path, [.highTom, .tambourine, .clave, .shaker, .highConga, .lowConga]),
            .unusedInstruments(kit: path, ["Pearl Snare Rimshot", "Pearl Tom 1", "Sabian Hat Semi-Open", "Sabian Hat Swish",
                                           "Sabian Hat Choke", "Paiste Ride Flink", "Sabian Crash Flink", "Zildjian Splash",
                                           "Zildjian Splash Choke"]),
        ])
        #expect(loaded.warnings[1].description == "drum kit '\(path)': no voice plays 'Pearl Snare Rimshot', 'Pearl Tom 1', "
                + "'Sabian Hat Semi-Open', 'Sabian Hat Swish', 'Sabian Hat Choke', 'Paiste Ride Flink', 'Sabian Crash Flink', "
                + "'Zildjian Splash', 'Zildjian Splash Choke' (the route file can give them voices)")
        #expect(loaded.warnings[0].description == "drum kit '\(path)' has nothing for high-tom, tambourine, clave, shaker, "
                + "high-conga, low-conga: those hits are silent")
        // Five velocity layers, softest first, as the kit lists them.
        let kick = try #require(loaded.kit.instruments[.kick])
        #expect(kick.layers.count == 5)
        #expect(kick.layer(for: 0.1) == kick.layers[0] && kick.layer(for: 1) == kick.layers[4])
    }

    @Test func theRouteFilesOverridesGiveAVoiceAnyInstrument() throws {
        let path = debianKits + "/The Black Pearl 1.0"
        let loaded = try KitLoader.load(path: path, overrides: [.highTom: "Pearl Tom 1", .snare: "pearl snare rimshot"],
                                        readingKitFile: KitFile.load(path:))
        #expect(loaded.kit.instruments[.highTom]?.name == "Pearl Tom 1")
        #expect(loaded.kit.instruments[.snare]?.name == "Pearl Snare Rimshot")
        #expect(throws: KitError.unknownInstruments(kit: path, [.ride: "Paiste Ryde"],
                                                    instruments: try HydrogenDrumkit.read(path: path + "/drumkit.xml").description.instruments.map(\.name))) {
            try KitLoader.load(path: path, overrides: [.ride: "Paiste Ryde"], readingKitFile: KitFile.load(path:))
        }
    }

    @Test func aStereoSampleKeepsItsChannelsWithItsGains() throws {
        // Forzee's kick: 48 kHz 24-bit stereo WAVs (no conversion), instrument gain 1.1, volume 1, centred.
        let loaded = try KitLoader.load(path: debianKits + "/ForzeeStereo", readingKitFile: KitFile.load(path:))
        let kick = try #require(loaded.kit.instruments[.kick])
        #expect(kick.layers.map(\.velocities) == [0...0.2, 0.2...0.4, 0.4...0.6, 0.6...0.8, 0.8...1])
        let source = try soxChannels(debianKits + "/ForzeeStereo/Kick-0.wav")
        #expect(source.count == 2 && source[0] != source[1])
        #expect(nearlyEqual(kick.layers[0].sample.left, source[0].map { $0 * 1.1 }))
        #expect(nearlyEqual(kick.layers[0].sample.right, source[1].map { $0 * 1.1 }))
    }

    @Test func anAIFFKitAt44100IsConvertedTo48000() throws {
        // BJA_Pacific: 16-bit 44.1 kHz AIFF, eight layers per drum, written loudest first.
        let loaded = try KitLoader.load(path: debianKits + "/BJA_Pacific", readingKitFile: KitFile.load(path:))
        let kick = try #require(loaded.kit.instruments[.kick])
        #expect(kick.layers.count == 8)
        let loudest = try soxChannels(debianKits + "/BJA_Pacific/BD_08.aiff")
        let sample = kick.layer(for: 0.95).sample
        #expect(abs(sample.frameCount - loudest[0].count * 48_000 / 44_100) <= 2)
    }

    @Test func aKitShippedWithoutASamplePlaysWithoutIt() throws {
        // Millo_MultiLayered2's drumkit.xml names misc_Cowbell.flac, which the package does not have: Hydrogen plays
        // the kit without a cowbell, and so does jambridge, saying so.
        let path = debianKits + "/Millo_MultiLayered2"
        let loaded = try KitLoader.load(path: path, readingKitFile: KitFile.load(path:))
        #expect(loaded.kit.instruments[.cowbell] == nil)
        #expect(loaded.warnings.first == .sampleLeftOut(kit: path, instrument: "Cowbell", file: path + "/misc_Cowbell.flac",
                                                        reason: "No such file or directory"))
        #expect(try KitLoader.check(path: path, readingKitFile: KitFile.load(path:)).first == loaded.warnings.first)
    }

    @Test func folderNamesWithSpaces() throws {
        for folder in ["Gimme A Hand 1.0", "circAfrique v4"] {
            let loaded = try KitLoader.load(path: debianKits + "/" + folder, readingKitFile: KitFile.load(path:))
            #expect(loaded.kit.name == folder)
        }
        let hand = try KitLoader.load(path: debianKits + "/Gimme A Hand 1.0/drumkit.xml", readingKitFile: KitFile.load(path:))
        #expect(hand.kit.instruments.mapValues(\.name) == [
            .clap: "Hand Clap", .tambourine: "Tambourine", .cowbell: "Cowbell", .clave: "Clave", .shaker: "Maraca",
        ])
    }
}
