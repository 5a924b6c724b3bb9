import DrumKits
import Foundation
import Testing

/// `left` and `right` written to `path` as a stereo WAV in blocks of 4,096 frames, as `jambridge render` writes.
private func writeWAV(path: String, left: [Float], right: [Float], rate: Int) throws(SoundFileError) {
    let frames = zip(left, right).flatMap { [$0, $1] }
    try SoundFile.writingWAV(path: path, rate: rate) { (wav) throws(SoundFileError) in
        try frames.withUnsafeBufferPointer { (all) throws(SoundFileError) in
            for start in stride(from: 0, to: all.count, by: 2 * 4_096) {
                try wav.write(UnsafeBufferPointer(rebasing: all[start..<min(start + 2 * 4_096, all.count)]))
            }
        }
    }
}

/// Sound files written for `jambridge render` and read back by sox and by libsndfile.
@Suite struct SoundFileTests {
    @Test func aWAVWrittenIsReadBackExactly() throws {
        let folder = try temporaryDirectory()
        let path = folder + "/render.wav"
        var generator = SystemRandomNumberGenerator()
        let left = (0..<10_000).map { _ in Float.random(in: -0.99...0.99, using: &generator) }
        let right = (0..<10_000).map { _ in Float.random(in: -0.99...0.99, using: &generator) }
        try writeWAV(path: path, left: left, right: right, rate: 48_000)
        let info = String(decoding: try run("soxi", [path]), as: UTF8.self)
        #expect(info.contains("Channels       : 2") && info.contains("Sample Rate    : 48000")
                && info.contains("Sample Encoding: 32-bit Floating Point PCM"), "\(info)")
        // sox goes through 32-bit integers: within a few units of the float's last place.
        let sox = try soxChannels(path)
        #expect(sox.count == 2 && nearlyEqual(sox[0], left, tolerance: 1e-7) && nearlyEqual(sox[1], right, tolerance: 1e-7))
        let audio = try SoundFile.read(path: path)
        #expect(audio.rate == 48_000 && audio.channelCount == 2 && audio.channel(0) == left && audio.channel(1) == right)
        // Written again, it replaces what was there; floats, so a mix louder than full scale is kept, not clipped (sox
        // would clip it reading).
        try writeWAV(path: path, left: [1.5, 0.25], right: [-2, -0.25], rate: 44_100)
        let loud = try SoundFile.read(path: path)
        #expect(loud.rate == 44_100 && loud.channel(0) == [1.5, 0.25] && loud.channel(1) == [-2, -0.25])
    }

    @Test func aWAVThatCannotBeWritten() throws {
        let folder = try temporaryDirectory()
        #expect(throws: SoundFileError(path: folder + "/no/such/folder.wav", reason: "cannot be written (System error : No such file or directory)")) {
            try writeWAV(path: folder + "/no/such/folder.wav", left: [0], right: [0], rate: 48_000)
        }
        #expect(throws: SoundFileError(path: folder + "/x.wav", reason: "0 Hz is not a rate a WAV can have")) {
            try writeWAV(path: folder + "/x.wav", left: [0], right: [0], rate: 0)
        }
    }

    @Test func moreThanTwoChannelsKeepTheFirstTwo() throws {
        let folder = try temporaryDirectory()
        try run("sox", ["-n", "-r", "48000", "-c", "4", "-b", "16", folder + "/quad.flac", "synth", "0.01",
                        "sine", "100", "sine", "200", "sine", "300", "sine", "400"])
        let audio = try SoundFile.read(path: folder + "/quad.flac")
        let sox = try soxChannels(folder + "/quad.flac")
        #expect(audio.channelCount == 2 && audio.channel(0) == sox[0] && audio.channel(1) == sox[1])
    }
}
