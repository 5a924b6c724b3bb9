import Drums
import DrumKits
import Foundation
import RouteFile
import Testing

/// Kits bounded before decoding (issue 29, item 8): a sample's channels, rate and length, and what the whole kit
/// takes, are read from the headers, and a kit beyond them is refused at once, saying which file and what to do.
@Suite struct KitLimitsTests {
    private func load(_ path: String) throws -> LoadedKit {
        try KitLoader.load(path: path, readingKitFile: KitFile.load(path:))
    }

    /// Writes `copies` copies of `seconds` of silence at `rate` in `channels` channels, as 16-bit FLAC (a few hundred
    /// kilobytes each), named 0.flac, 1.flac, ...; returns the folder.
    private func silentFLACs(copies: Int, rate: Int, channels: Int, seconds: Int) throws -> String {
        let folder = try temporaryDirectory()
        // -D: no dither, or the silence would be noise that FLAC cannot compress.
        try run("sox", ["-D", "-n", "-r", "\(rate)", "-c", "\(channels)", "-b", "16", folder + "/0.flac", "trim", "0", "\(seconds)"])
        for copy in 1..<copies { try FileManager.default.copyItem(atPath: folder + "/0.flac", toPath: folder + "/\(copy).flac") }
        return folder
    }

    /// Runs `body`, printing how long it took (the figure is recorded, never asserted).
    private func timed(_ what: String, _ body: () throws -> Void) rethrows {
        let started = ContinuousClock.now
        defer { print("\(what): \(ContinuousClock.now - started)") }
        try body()
    }

    @Test func theIssuesEightFLACsOfSilenceAt384kHzAreRefusedFromTheirHeaders() throws {
        // 8 files, 8 channels, 384 kHz, 59 s of silence each: 1.6 MB on disk, 5.8 GB decoded.
        let folder = try silentFLACs(copies: 8, rate: 384_000, channels: 8, seconds: 59)
        let onDisk = try (0..<8).reduce(0) { $0 + (try FileManager.default.attributesOfItem(atPath: folder + "/\($1).flac")[.size] as! Int) }
        print("the issue's kit: \(onDisk) bytes on disk")
        #expect(onDisk < 2_000_000)
        let voices = ["kick", "snare", "hat", "open-hat", "crash", "ride", "low-tom", "high-tom"]
        try write("voices:\n" + voices.enumerated().map { "  \($1): \($0).flac\n" }.joined(), to: "kit.yaml", in: folder)
        let reason = "its sample rate, 384000 Hz, is not one a drum sample has (1-192000 Hz): convert it to 48 kHz (sox IN.wav -r 48000 OUT.wav)"
        let refusal = KitError.badSample(kit: folder, instrument: "kick", file: folder + "/0.flac", reason: reason)
        timed("the issue's kit (kit.yaml) refused") {
            #expect(throws: refusal) { try load(folder) }
        }
        #expect(refusal.description == "drum kit '\(folder)', instrument 'kick': sample '\(folder)/0.flac': \(reason)")
        // The same files as a Hydrogen kit, whose unplayable samples are left out: nothing is left to play.
        try FileManager.default.removeItem(atPath: folder + "/kit.yaml")
        try write("<drumkit_info><name>Silence</name><instrumentList>"
                  + voices.enumerated().map { "<instrument><name>\($1)</name><filename>\($0).flac</filename></instrument>" }.joined()
                  + "</instrumentList></drumkit_info>", to: "drumkit.xml", in: folder)
        try timed("the issue's kit (drumkit.xml) refused") {
            do {
                _ = try load(folder)
                Issue.record("the kit loaded")
            } catch let error as KitError {
                guard case .empty(let kit, let why) = error, kit == folder else { throw error }
                #expect(why.hasPrefix("no instrument that matched a voice can be played: drum kit '\(folder)', instrument 'kick': "
                                      + "sample '\(folder)/0.flac' is left out: \(reason)"), "\(why)")
            }
        }
    }

    @Test func aKitThatWouldTakeMoreThanTheLimitIsRefusedBeforeAnySampleIsDecoded() throws {
        // Each file within every limit of a sample (8 channels at 192 kHz for 59 s), three of them too much for a kit:
        // 362,496,000 bytes decoded and 22,656,000 kept at 48 kHz stereo, each.
        let folder = try silentFLACs(copies: 3, rate: 192_000, channels: 8, seconds: 59)
        try write("voices: { kick: 0.flac, snare: 1.flac, hat: 2.flac }\n", to: "kit.yaml", in: folder)
        let refusal = KitError.tooLarge(kit: folder, bytes: 3 * 385_152_000, largest: folder + "/0.flac", largestBytes: 385_152_000)
        timed("a kit over the limit refused") {
            #expect(throws: refusal) { try load(folder) }
        }
        #expect(refusal.description == "drum kit '\(folder)' is too large: its samples would take 1.1 GiB to load (decoded, and kept at "
                + "48 kHz stereo), more than the 1 GiB a kit may take; the largest is '\(folder)/0.flac' (367 MiB). Play fewer or "
                + "shorter samples, or convert them to 48 kHz stereo (sox IN.wav -r 48000 -c 2 OUT.wav)")
    }

    @Test func layersPitchedDownCountAsLongAsTheyAreKept() throws {
        // One small file (59 s at 8 kHz mono: 1.9 MB decoded), two octaves down in twelve voices: each layer is kept
        // at 48 kHz for 236 s, 90,624,000 bytes.
        let folder = try temporaryDirectory()
        try run("sox", ["-n", "-r", "8000", "-c", "1", "-b", "16", folder + "/low.wav", "trim", "0", "59"])
        let voices = ["kick", "snare", "rim", "clap", "hat", "pedal-hat", "open-hat", "low-tom", "mid-tom", "high-tom", "crash", "ride"]
        try write("voices:\n" + voices.map { "  \($0): { file: low.wav, pitch: -24 }\n" }.joined(), to: "kit.yaml", in: folder)
        let bytes = 59 * 8000 * 4 + 12 * 90_624_000
        #expect(throws: KitError.tooLarge(kit: folder, bytes: bytes, largest: folder + "/low.wav", largestBytes: bytes)) { try load(folder) }
    }

    @Test func aSamplesHeaderIsCheckedAgainstItsLimits() throws {
        let folder = try temporaryDirectory()
        try makeTone(folder + "/good.wav", seconds: 0.1, rate: 44_100, channels: 2)
        let good = try SoundFile.header(path: folder + "/good.wav")
        #expect(good.channelCount == 2 && good.rate == 44_100 && good.frames == 4410 && good.lengthKnown)
        #expect(good.decodedBytes == 4410 * 2 * 4)
        try run("sox", ["-n", "-r", "48000", "-c", "9", folder + "/nine.wav", "trim", "0", "0.01"])
        try run("sox", ["-n", "-r", "8000", "-c", "1", folder + "/long.wav", "trim", "0", "61"])
        try run("sox", ["-n", "-r", "200000", "-c", "1", folder + "/fast.wav", "trim", "0", "0.01"])
        let cases: [(file: String, reason: String)] = [
            ("nine.wav", "it has 9 channels, more than a drum sample's 8: keep the first two (sox IN.wav OUT.wav remix 1 2)"),
            ("long.wav", "it is 61 s long, longer than the 60 s a drum sample may be: shorten it (sox IN.wav OUT.wav trim 0 60)"),
            ("fast.wav", "its sample rate, 200000 Hz, is not one a drum sample has (1-192000 Hz): convert it to 48 kHz "
                + "(sox IN.wav -r 48000 OUT.wav)"),
        ]
        for (file, reason) in cases {
            #expect(throws: SoundFileError(path: folder + "/" + file, reason: reason)) { try SoundFile.header(path: folder + "/" + file) }
            #expect(throws: SoundFileError(path: folder + "/" + file, reason: reason)) { try SoundFile.read(path: folder + "/" + file) }
        }
        // A file whose header changed since it was read is not decoded past it.
        let header = try SoundFile.header(path: folder + "/good.wav")
        try makeTone(folder + "/good.wav", seconds: 0.2, rate: 44_100, channels: 2)
        #expect(throws: SoundFileError(path: folder + "/good.wav", reason: "it changed while the kit was loading; load the kit again")) {
            try SoundFile.read(path: folder + "/good.wav", expecting: header)
        }
    }
}
