import Foundation
import Testing

/// What `wav_onsets.py` (Debian's soundfile) finds in a WAV file.
struct WAVOnsets: Decodable {
    var rate: Int
    var channels: Int
    var frames: Int
    var peak: Double
    var onsets: [Int]
}

/// Debian's Python, which has python3-soundfile.
let systemPython = "/usr/bin/python3"

func onsets(in file: URL, threshold: Double = 0.02) throws -> WAVOnsets {
    let read = try run(systemPython, [repositoryRoot.appendingPathComponent("Tests/Peers/wav_onsets.py").path, file.path, "\(threshold)"])
    #expect(read.status == 0, "\(read.out)")
    return try JSONDecoder().decode(WAVOnsets.self, from: Data(read.out.utf8))
}

/// `jambridge render`: the drums offline, read back with soundfile.
@Suite struct DrumsRenderTests {
    /// A clave (short: each hit is over well before the next) on every eighth at level 1 and on the swung sixteenths
    /// between them at level 2, at 120 BPM: a sixteenth is 6,000 frames at 48 kHz, a bar 96,000.
    private func setUp(swing: Int = 60, level: String = "follow") throws -> URL {
        let dir = try temporaryDirectory()
        try """
            name: clicks
            swing: \(swing)
            groove:
              clave: "1 2 1 2 1 2 1 2 1 2 1 2 1 2 1 2"

            """.write(to: dir.appendingPathComponent("clicks.yaml"), atomically: true, encoding: .utf8)
        let file = dir.appendingPathComponent("r.yaml")
        try "clock: { tempo: 120 }\ndrums: { style: ./clicks.yaml, level: \(level) }\n".write(to: file, atomically: true, encoding: .utf8)
        return file
    }

    @Test func onsetsFallOnTheExactFramesTheTempoAndSwingImplyAndTheLevelChangesOnBarLines() throws {
        try #require(FileManager.default.isExecutableFile(atPath: systemPython), "no \(systemPython) with soundfile: run scripts/install-deps.sh")
        let routes = try setUp()
        let wav = routes.deletingLastPathComponent().appendingPathComponent("clicks.wav")
        // Quiet for two bars, then the room heats up at once.
        let result = try jambridge(["render", routes.path, "--bars", "4", "--activity", "0:0,1.8:0,1.9:127", "--out", wav.path])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.contains("4 bars of clicks at 120.0 BPM on the built-in kit") && result.out.contains("levels by bar: 1 1 2 2"), "\(result.out)")
        let read = try onsets(in: wav)
        #expect(read.rate == 48_000 && read.channels == 2 && read.peak <= 1)
        // The first hit is at frame 0; its sample rises past the threshold `attack` frames in, and so does every hit.
        let attack = try #require(read.onsets.first)
        #expect(attack <= 2)
        let eighths = (0..<16).map { $0 * 12_000 }
        let swung = (16..<32).flatMap { [$0 * 12_000, $0 * 12_000 + 7_200] } // 60 %: the second sixteenth 1,200 frames late
        #expect(read.onsets == (eighths + swung).map { $0 + attack })
    }

    @Test func theLevelRisesAlongAnActivityRampOnlyAtBarLines() throws {
        try #require(FileManager.default.isExecutableFile(atPath: systemPython), "no \(systemPython) with soundfile: run scripts/install-deps.sh")
        let routes = try setUp(swing: 50)
        let wav = routes.deletingLastPathComponent().appendingPathComponent("ramp.wav")
        #expect(try jambridge(["render", routes.path, "--bars", "6", "--activity", "0-127", "--out", wav.path]).status == 0)
        let read = try onsets(in: wav)
        let perBar = (0..<6).map { bar in read.onsets.filter { $0 / 96_000 == bar }.count }
        // Each bar is wholly one level: 8 hits or 16, never between; quiet at the start, busy at the end, never back.
        #expect(perBar.allSatisfy { $0 == 8 || $0 == 16 }, "\(perBar)")
        #expect(perBar.first == 8 && perBar.last == 16 && perBar == perBar.sorted(), "\(perBar)")
    }

    @Test func theSameSeedRendersTheSameFileAndAnotherSeedAnother() throws {
        let dir = try temporaryDirectory()
        var files: [Data] = []
        for (name, seed) in [("a", 1), ("b", 1), ("c", 2)] {
            let routes = dir.appendingPathComponent("\(name).yaml")
            try "drums: { style: funk, seed: \(seed) }\n".write(to: routes, atomically: true, encoding: .utf8)
            let wav = dir.appendingPathComponent("\(name).wav")
            #expect(try jambridge(["render", routes.path, "--bars", "4", "--activity", "0-127", "--out", wav.path]).status == 0)
            files.append(try Data(contentsOf: wav))
        }
        #expect(files[0] == files[1])
        #expect(files[0] != files[2])
    }

    @Test func aHydrogenKitRendersAndAMissingKitOrNoDrumsBlockIsAClearError() throws {
        let dir = try temporaryDirectory()
        let kit = "/usr/share/hydrogen/data/drumkits/The Black Pearl 1.0"
        try #require(FileManager.default.fileExists(atPath: kit), "no \(kit): run scripts/install-deps.sh (hydrogen-drumkits)")
        let routes = dir.appendingPathComponent("pearl.yaml")
        try "drums: { style: rock, kit: \"\(kit)\" }\n".write(to: routes, atomically: true, encoding: .utf8)
        let wav = dir.appendingPathComponent("pearl.wav")
        let rendered = try jambridge(["render", routes.path, "--bars", "2", "--activity", "127", "--out", wav.path])
        #expect(rendered.status == 0 && rendered.out.contains("on the kit 'The Black Pearl 1.0'"), "\(rendered.out) \(rendered.err)")
        if FileManager.default.isExecutableFile(atPath: systemPython) {
            #expect(try onsets(in: wav, threshold: 0.05).onsets.count >= 8)
        }
        let none = dir.appendingPathComponent("none.yaml")
        try "endpoints:\n  x: { alsa: y }\nroutes:\n  - { from: x, to: x }\n".write(to: none, atomically: true, encoding: .utf8)
        let refused = try jambridge(["render", none.path, "--out", wav.path])
        #expect(refused.status == 1 && refused.err.contains("no 'drums' block"), "\(refused.err)")
        let curve = try jambridge(["render", routes.path, "--activity", "loud", "--out", wav.path])
        #expect(curve.status != 0 && curve.err.contains("--activity is N (0-127), A-B"), "\(curve.err)")
    }

    /// The peak resident memory, in kB, of `jambridge render` with `arguments` (`/usr/bin/time`'s %M), and what it printed.
    private func peakKilobytes(rendering arguments: [String]) throws -> (kilobytes: Int, out: String) {
        let report = try temporaryDirectory().appendingPathComponent("time")
        let result = try run("/usr/bin/time", ["-f", "%M", "-o", report.path, executable.path, "render"] + arguments)
        #expect(result.status == 0, "\(result.out)")
        let kilobytes = try #require(Int(String(contentsOf: report, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        return (kilobytes, result.out)
    }

    /// Issue 41, item 5: a render is written as it is rendered, so 200 bars take the memory of 4 (where the whole
    /// render was held, 300 BPM took some 0.6 MB a bar: 200 bars, 120 MB more).
    @Test func aLongRenderTakesTheMemoryOfAShortOne() throws {
        let routes = try setUp(swing: 50)
        let short = try peakKilobytes(rendering: [routes.path, "--bars", "4", "--tempo", "300", "--out", "/dev/null"])
        let long = try peakKilobytes(rendering: [routes.path, "--bars", "200", "--tempo", "300", "--out", "/dev/null"])
        #expect(long.out.contains("200 bars of clicks at 300.0 BPM") && long.out.contains(" 1600 hits "), "\(long.out)")
        #expect(long.kilobytes < short.kilobytes + 8_000, "4 bars: \(short.kilobytes) kB, 200 bars: \(long.kilobytes) kB")
    }

    /// Issue 41, item 5: `render` does not write its WAV over a file it reads (a route file, the style file), however
    /// the path is spelt: the same file by another path, through a symlink.
    @Test func anOutThatIsAnInputIsRefusedAndTheInputKept() throws {
        let routes = try setUp()
        let dir = routes.deletingLastPathComponent()
        let style = dir.appendingPathComponent("clicks.yaml")
        let link = dir.appendingPathComponent("link.yaml")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: routes)
        let routesText = try Data(contentsOf: routes), styleText = try Data(contentsOf: style)
        for (given, out) in [(routes, routes.path), (routes, dir.path + "/./r.yaml"), (routes, link.path), (link, routes.path), (routes, style.path)] {
            let result = try jambridge(["render", given.path, "--bars", "1", "--out", out])
            #expect(result.status == 1 && result.err.hasPrefix("jambridge render: --out '\(out)' is '")
                    && result.err.contains("which the render reads"), "\(out): \(result.err)")
        }
        #expect(try Data(contentsOf: routes) == routesText && Data(contentsOf: style) == styleText)
        #expect(try jambridge(["render", link.path, "--bars", "1", "--out", dir.appendingPathComponent("new.wav").path]).status == 0)
    }

    /// What Python's own `wave` module makes of a WAV file (`Tests/Peers/wav_wave.py`).
    private struct WaveRead: Decodable {
        var width: Int?
        var channels: Int?
        var rate: Int?
        var frames: Int?
        var peak: Double?
        var error: String?
    }

    private func readWithWave(_ file: URL) throws -> WaveRead {
        let read = try run(systemPython, [repositoryRoot.appendingPathComponent("Tests/Peers/wav_wave.py").path, file.path])
        #expect(read.status == 0, "\(read.out)")
        return try JSONDecoder().decode(WaveRead.self, from: Data(read.out.utf8))
    }

    /// Issue 33, item 8: by default a render is 24-bit PCM, which Python's `wave` reads; `--format` gives 16-bit or
    /// the exact 32-bit float, which `wave` cannot read, and `render` says which it wrote.
    @Test func theDefaultIs24BitPCMThatPythonsWaveReadsAndFormatGives16BitOrFloat() throws {
        try #require(FileManager.default.isExecutableFile(atPath: systemPython), "no \(systemPython): run scripts/install-deps.sh")
        let routes = try setUp(swing: 50)
        let dir = routes.deletingLastPathComponent()
        var read: [String: WaveRead] = [:]
        for (name, arguments) in [("default", [String]()), ("16", ["--format", "16"]), ("24", ["--format", "24"]), ("float", ["--format", "float"])] {
            let wav = dir.appendingPathComponent("\(name).wav")
            let result = try jambridge(["render", routes.path, "--bars", "2", "--activity", "127", "--out", wav.path] + arguments)
            #expect(result.status == 0, "\(result.err)")
            let said = ["default": "24-bit PCM", "16": "16-bit PCM", "24": "24-bit PCM", "float": "32-bit float"][name]!
            #expect(result.out.hasPrefix("\(wav.path) (\(said) WAV, 48 kHz stereo): 2 bars of clicks"), "\(result.out)")
            read[name] = try readWithWave(wav)
        }
        let bars = 2 * 96_000
        #expect(read["default"]?.width == 3 && read["default"]?.channels == 2 && read["default"]?.rate == 48_000 && read["default"]?.frames == bars,
                "\(String(describing: read["default"]))")
        #expect(read["24"]?.width == 3 && read["24"]?.frames == bars)
        #expect(read["16"]?.width == 2 && read["16"]?.channels == 2 && read["16"]?.frames == bars, "\(String(describing: read["16"]))")
        // The hits are there, in range, and the same loudness at either width.
        let peak24 = try #require(read["default"]?.peak), peak16 = try #require(read["16"]?.peak)
        #expect(peak24 > 0.05 && peak24 <= 1 && abs(peak24 - peak16) < 0.001, "\(peak24) \(peak16)")
        #expect(read["float"]?.error?.contains("unknown format") == true, "\(String(describing: read["float"]))")
        // soundfile reads the float file: the same hits, on the same frames, as the default's.
        #expect(try onsets(in: dir.appendingPathComponent("float.wav")).onsets == onsets(in: dir.appendingPathComponent("default.wav")).onsets)

        let wrong = try jambridge(["render", routes.path, "--format", "32", "--out", dir.appendingPathComponent("x.wav").path])
        #expect(wrong.status != 0 && wrong.err.contains("16") && wrong.err.contains("float"), "\(wrong.err)")
    }
}
