import Drums
import DrumKits
import Foundation
import RouteFile
import Testing

/// Kits loaded from disk: samples read with libsndfile, converted and pitched with libsamplerate, gain and pan
/// applied; fixtures made and results checked with sox.
@Suite struct KitLoaderTests {
    private func load(_ path: String, overrides: [DrumVoice: String] = [:]) throws -> LoadedKit {
        try KitLoader.load(path: path, overrides: overrides, readingKitFile: KitFile.load(path:))
    }

    @Test func aSampleFolderWithLayersByVelocityAndChokeGroups() throws {
        let folder = try temporaryDirectory()
        try makeTone(folder + "/kick.wav", frequency: 60)
        try makeTone(folder + "/snare.flac", frequency: 200)
        try makeTone(folder + "/hh.wav", frequency: 8000)
        try makeTone(folder + "/oh.aiff", frequency: 7000)
        try makeTone(folder + "/crash-soft.wav", frequency: 5000, amplitude: 0.2)
        try makeTone(folder + "/crash-hard.wav", frequency: 5000, amplitude: 0.8)
        try write("""
            name: Garage kit
            voices:
              kick: kick.wav
              snare: { file: snare.flac, gain: 0.8, pan: -0.2 }
              hat: { file: hh.wav, choke: 1 }
              open-hat: { file: oh.aiff, choke: 1 }
              crash: { layers: [ { file: crash-soft.wav, velocity: 0-0.5 }, { file: crash-hard.wav, velocity: 0.5-1 } ] }
            """, to: "kit.yaml", in: folder)
        let loaded = try load(folder)
        #expect(loaded.kit.name == "Garage kit")
        #expect(loaded.kit.instruments.keys.sorted() == [.kick, .snare, .hat, .openHat, .crash])
        #expect(loaded.kit.instruments[.hat]?.chokeGroup == 1 && loaded.kit.instruments[.openHat]?.chokeGroup == 1)
        #expect(loaded.kit.instruments[.kick]?.chokeGroup == nil)
        #expect(loaded.warnings == [.missingVoices(kit: folder, DrumVoice.allCases.filter {
            ![.kick, .snare, .hat, .openHat, .crash].contains($0)
        })])

        let crash = try #require(loaded.kit.instruments[.crash])
        let soft = try soxChannels(folder + "/crash-soft.wav")[0], hard = try soxChannels(folder + "/crash-hard.wav")[0]
        #expect(crash.layer(for: 0.2).sample == Sample(left: soft))
        #expect(crash.layer(for: 0.9).sample == Sample(left: hard))

        // 48 kHz in, so nothing is resampled: the gains are exact. Pan -0.2 keeps the left, takes 20 % off the right.
        let snare = try #require(loaded.kit.instruments[.snare]?.layers.first?.sample)
        let source = try soxChannels(folder + "/snare.flac")[0]
        #expect(snare.left == source.map { $0 * 0.8 })
        #expect(nearlyEqual(snare.right, source.map { $0 * 0.8 * 0.8 }))
        // A directory and its kit.yaml are the same kit.
        #expect(try load(folder + "/kit.yaml").kit == loaded.kit)
    }

    @Test func aStereoSamplePannedRight() throws {
        let folder = try temporaryDirectory()
        try makeTone(folder + "/tom.wav", channels: 2)
        try write("voices: { mid-tom: { file: tom.wav, pan: 0.5, gain: 2 } }", to: "kit.yaml", in: folder)
        let tom = try #require(try load(folder).kit.instruments[.midTom]?.layers.first?.sample)
        let source = try soxChannels(folder + "/tom.wav")
        #expect(source[0] != source[1])
        #expect(nearlyEqual(tom.left, source[0].map { $0 * 2 * 0.5 }))
        #expect(tom.right == source[1].map { $0 * 2 })
    }

    @Test func pitchIsResampling() throws {
        let folder = try temporaryDirectory()
        try makeTone(folder + "/tone.wav", seconds: 0.1, frequency: 440)
        try write("""
            voices:
              kick: tone.wav
              snare: { file: tone.wav, pitch: 12 }
              clap: { file: tone.wav, pitch: -12 }
              rim: { layers: [ { file: tone.wav, pitch: 7 } ], pitch: 5 }
            """, to: "kit.yaml", in: folder)
        let kit = try load(folder).kit
        let length = { (voice: DrumVoice) in kit.instruments[voice]!.layers[0].sample.frameCount }
        #expect(length(.kick) == 4800)
        #expect(abs(length(.snare) - 2400) <= 2)
        #expect(abs(length(.clap) - 9600) <= 2)
        #expect(abs(length(.rim) - 2400) <= 2, "instrument and layer pitch add up")
        // An octave up in half the time: as many cycles, so as many rising zero crossings (44 in 0.1 s of 440 Hz).
        let crossings = { (samples: [Float]) in zip(samples, samples.dropFirst()).filter { $0 < 0 && $1 >= 0 }.count }
        let original = crossings(kit.instruments[.kick]!.layers[0].sample.left)
        #expect(abs(crossings(kit.instruments[.snare]!.layers[0].sample.left) - original) <= 1)
        #expect(abs(crossings(kit.instruments[.clap]!.layers[0].sample.left) - original) <= 1)
    }

    @Test func a44100HzSampleComesOut48000HzAsSoxConvertsIt() throws {
        let folder = try temporaryDirectory()
        try makeTone(folder + "/cd.wav", seconds: 1, frequency: 1000, rate: 44_100, channels: 2)
        try write("voices: { kick: cd.wav }", to: "kit.yaml", in: folder)
        let sample = try #require(try load(folder).kit.instruments[.kick]?.layers.first?.sample)
        #expect(abs(sample.frameCount - 48_000) <= 2)
        // sox's own converter, another implementation: away from the edges the two agree closely.
        try run("sox", [folder + "/cd.wav", "-r", "48000", folder + "/sox48.wav"])
        let sox = try soxChannels(folder + "/sox48.wav")
        let middle = 1000..<47_000
        for (ours, theirs) in [(sample.left, sox[0]), (sample.right, sox[1])] {
            let difference = middle.map { abs(ours[$0] - theirs[$0]) }.max()!
            #expect(difference < 2e-3, "largest difference from sox: \(difference)")
        }
    }

    @Test func brokenSamplesInAKitYAMLAreErrorsNamingTheFileAndTheKit() throws {
        let folder = try temporaryDirectory()
        try makeTone(folder + "/good.wav", seconds: 1)
        let good = try Data(contentsOf: URL(fileURLWithPath: folder + "/good.wav"))
        try good.prefix(good.count / 2).write(to: URL(fileURLWithPath: folder + "/truncated.wav"))
        try write("This is not a sound.\n", to: "text.wav", in: folder)
        try run("sox", ["-n", "-r", "48000", "-c", "1", folder + "/empty.wav", "trim", "0", "0"])
        // A header claiming 2 GB of sound in a file of 96 KB.
        var claim = good
        let data = try #require(claim.range(of: Data("data".utf8)))
        claim.replaceSubrange(data.upperBound..<data.upperBound + 4, with: [0x00, 0xFF, 0xFF, 0x7F])
        try claim.write(to: URL(fileURLWithPath: folder + "/claim.wav"))

        let cases: [(file: String, reason: String)] = [
            ("truncated.wav", "it is truncated: its header claims more sound than the file holds"),
            ("text.wav", "not a sound file libsndfile can read (Format not recognised)"),
            ("missing.wav", "No such file or directory"),
            ("empty.wav", "it holds no sound (0 frames)"),
            ("claim.wav", "it is truncated: its header claims more sound than the file holds"),
        ]
        for (file, reason) in cases {
            try write("voices: { kick: good.wav, snare: \(file) }", to: "kit.yaml", in: folder)
            let error = KitError.badSample(kit: folder, instrument: "snare", file: folder + "/" + file, reason: reason)
            #expect(throws: error) { try load(folder) }
            // Checking the kit (headers only) finds each as well, a WAV shorter than its header from libsndfile's log.
            #expect(throws: error) { try KitLoader.check(path: folder, readingKitFile: KitFile.load(path:)) }
            #expect(error.description == "drum kit '\(folder)', instrument 'snare': sample '\(folder)/\(file)': \(reason)")
        }
    }

    @Test func pathsThatAreNoKit() throws {
        let folder = try temporaryDirectory()
        #expect(throws: KitError.notAKit(path: folder + "/nowhere", reason: "it does not exist")) { try load(folder + "/nowhere") }
        #expect(throws: KitError.notAKit(path: folder, reason: "the folder has neither a kit.yaml (a sample folder's voices) "
                                         + "nor a drumkit.xml (a Hydrogen kit)")) { try load(folder) }
        try makeTone(folder + "/kick.wav")
        #expect(throws: KitError.notAKit(path: folder + "/kick.wav",
                                         reason: "it is neither a kit.yaml nor a Hydrogen drumkit.xml (nor their folder)")) {
            try load(folder + "/kick.wav")
        }
        #expect("\(KitError.notAKit(path: "x", reason: "it does not exist"))" == "'x' is not a drum kit: it does not exist")
    }

    @Test func badDescriptionsAreLocatedMistakesOfTheKit() throws {
        let folder = try temporaryDirectory()
        try write("garbage", to: "drumkit.xml", in: folder)
        let xml = KitError.badDescription(kit: folder, mistakes: [
            "\(folder)/drumkit.xml:1:1: not valid XML: Start tag expected, '<' not found",
        ])
        #expect(throws: xml) { try load(folder) }
        #expect(xml.description == "drum kit '\(folder)': \(folder)/drumkit.xml:1:1: not valid XML: Start tag expected, '<' not found")
        // A kit.yaml in the folder comes first.
        try write("voices: { kik: k.wav, snare: { gain: loud } }", to: "kit.yaml", in: folder)
        #expect(throws: KitError.badDescription(kit: folder, mistakes: [
            "\(folder)/kit.yaml:1:11: unknown key 'kik'; did you mean 'kick'?",
            "\(folder)/kit.yaml:1:38: 'gain' is a level from 0 to 16 (1 leaves the sound as it is), not 'loud'",
            "\(folder)/kit.yaml:1:30: 'snare' needs 'file:' (a sound file) or 'layers:' (sound files by velocity)",
        ])) { try load(folder) }
    }

    @Test func aKitWithNothingToPlay() throws {
        let folder = try temporaryDirectory()
        try makeTone(folder + "/a.wav")
        try write("<drumkit_info><name>Nothing</name><instrumentList/></drumkit_info>", to: "drumkit.xml", in: folder)
        #expect(throws: KitError.empty(kit: folder, reason: "it has no instrument with a sample")) { try load(folder) }
        try write("""
            <drumkit_info><instrumentList>
             <instrument><name>Djembe Slap</name><filename>a.wav</filename></instrument>
            </instrumentList></drumkit_info>
            """, to: "drumkit.xml", in: folder)
        #expect(throws: KitError.empty(kit: folder, reason: "none of its instruments matched a voice; give them voices in the route file")) {
            try load(folder)
        }
        #expect(try load(folder, overrides: [.highConga: "djembe slap"]).kit.instruments[.highConga]?.name == "Djembe Slap")
    }

    @Test func aMatchedInstrumentWithoutItsSampleGivesItsVoiceToTheNext() throws {
        let folder = try temporaryDirectory()
        try makeTone(folder + "/b.wav")
        try makeTone(folder + "/k.wav")
        try write("""
            <drumkit_info><name>Patchy</name><instrumentList>
             <instrument><name>Snare A</name><filename>gone.wav</filename></instrument>
             <instrument><name>Snare B</name><layer><filename>b.wav</filename></layer><layer><filename>b2.wav</filename><min>0.5</min></layer></instrument>
             <instrument><name>Kick</name><filename>k.wav</filename></instrument>
            </instrumentList></drumkit_info>
            """, to: "drumkit.xml", in: folder)
        let loaded = try load(folder)
        #expect(loaded.kit.instruments.mapValues(\.name) == [.snare: "Snare B", .kick: "Kick"])
        #expect(loaded.kit.instruments[.snare]?.layers.count == 1)
        #expect(Array(loaded.warnings.prefix(2)) == [
            .sampleLeftOut(kit: folder, instrument: "Snare A", file: folder + "/gone.wav", reason: "No such file or directory"),
            .sampleLeftOut(kit: folder, instrument: "Snare B", file: folder + "/b2.wav", reason: "No such file or directory"),
        ])
        #expect(loaded.warnings[0].description
                == "drum kit '\(folder)', instrument 'Snare A': sample '\(folder)/gone.wav' is left out: No such file or directory")
        // What the route file chose must play.
        #expect(throws: KitError.badSample(kit: folder, instrument: "Snare A", file: folder + "/gone.wav", reason: "No such file or directory")) {
            try load(folder, overrides: [.snare: "Snare A"])
        }
        // Nothing left that plays: the error says what could not.
        try FileManager.default.removeItem(atPath: folder + "/b.wav")
        try FileManager.default.removeItem(atPath: folder + "/k.wav")
        #expect(throws: KitError.empty(kit: folder, reason: "no instrument that matched a voice can be played: "
            + "drum kit '\(folder)', instrument 'Snare A': sample '\(folder)/gone.wav' is left out: No such file or directory; "
            + "drum kit '\(folder)', instrument 'Kick': sample '\(folder)/k.wav' is left out: No such file or directory; "
            + "drum kit '\(folder)', instrument 'Snare B': sample '\(folder)/b.wav' is left out: No such file or directory; "
            + "drum kit '\(folder)', instrument 'Snare B': sample '\(folder)/b2.wav' is left out: No such file or directory")) {
            try load(folder)
        }
    }
}
