import Drums
import MIDI
import RouteFile
import Testing

/// kit.yaml, a sample folder's voices, read by RouteFile with located mistakes.
@Suite struct KitFileTests {
    private func mistakes(_ yaml: String) -> [String] {
        do {
            _ = try KitFile.parse(yaml: yaml, file: "kits/garage/kit.yaml")
            return []
        } catch {
            return error.errors.map(\.description)
        }
    }

    @Test func everyKey() throws {
        let description = try KitFile.parse(yaml: """
            name: Garage kit
            voices:
              kick: kick.wav
              snare: { file: snare.flac, gain: 0.8, pan: -0.2, pitch: -1 }
              hat: { file: hh.wav, choke: 1 }
              open-hat: { file: /samples/oh.wav, choke: 1 }
              crash: { layers: [ { file: crash-soft.wav, velocity: 0-0.5 }, { file: crash-hard.wav, velocity: 0.5-1, gain: 1.2, pitch: 2 } ] }
              ride: { layers: [ride.wav] }
            """, file: "kits/garage/kit.yaml")
        #expect(description == KitDescription(name: "Garage kit", instruments: [
            .init(name: "kick", voice: .kick, layers: [.init(file: "kits/garage/kick.wav")]),
            .init(name: "snare", voice: .snare, gain: 0.8, pan: -0.2, pitch: -1, layers: [.init(file: "kits/garage/snare.flac")]),
            .init(name: "hat", voice: .hat, chokeGroup: 1, layers: [.init(file: "kits/garage/hh.wav")]),
            .init(name: "open-hat", voice: .openHat, chokeGroup: 1, layers: [.init(file: "/samples/oh.wav")]),
            .init(name: "crash", voice: .crash, layers: [
                .init(velocities: 0...0.5, file: "kits/garage/crash-soft.wav"),
                .init(velocities: 0.5...1, gain: 1.2, pitch: 2, file: "kits/garage/crash-hard.wav"),
            ]),
            .init(name: "ride", voice: .ride, layers: [.init(file: "kits/garage/ride.wav")]),
        ]))
    }

    @Test func theNameDefaultsToTheFolders() throws {
        #expect(try KitFile.parse(yaml: "voices: { kick: k.wav }", file: "kits/garage/kit.yaml").name == "garage")
    }

    @Test func mistakesAreLocated() {
        #expect(mistakes("""
            name: Garage kit
            voice:
              kick: kick.wav
            """) == [
            "kits/garage/kit.yaml:2:1: unknown key 'voice'; did you mean 'voices'?",
            "kits/garage/kit.yaml:1:1: a kit file has 'voices:' giving each voice its sound file, such as 'kick: kick.wav'",
        ])
        #expect(mistakes("""
            voices:
              snar: snare.wav
              kick: { file: kick.wav, gaim: 2 }
              hat: { file: hh.wav, gain: 20, pan: left, pitch: 30, choke: -1 }
              crash: { file: c.wav, layers: [c.wav] }
              ride:
              clap: { gain: 1 }
              rim: { layers: [ { velocity: 0.5-0.2, file: r.wav }, { gain: 1 }, [x] ] }
              cowbell: [bell.wav]
            """) == [
            "kits/garage/kit.yaml:2:3: unknown key 'snar'; did you mean 'snare'?",
            "kits/garage/kit.yaml:3:27: unknown key 'gaim'; did you mean 'gain'?",
            "kits/garage/kit.yaml:4:30: 'gain' is a level from 0 to 16 (1 leaves the sound as it is), not '20'",
            "kits/garage/kit.yaml:4:39: 'pan' is from -1 (left) through 0 (centre) to 1 (right), not 'left'",
            "kits/garage/kit.yaml:4:52: 'pitch' is semitones from -24 to 24, not '30'",
            "kits/garage/kit.yaml:4:63: 'choke' is a group number, 0-99, not -1",
            "kits/garage/kit.yaml:5:25: 'file' and 'layers' together: a voice has one sound file or a list of layers",
            "kits/garage/kit.yaml:6:3: a sound file's path, such as 'snare.wav' (relative to the kit file's folder), not ''",
            "kits/garage/kit.yaml:7:9: 'clap' needs 'file:' (a sound file) or 'layers:' (sound files by velocity)",
            "kits/garage/kit.yaml:8:32: 'velocity' is a range of velocities from 0 to 1 such as 0-0.5 or 0.5-1, not '0.5-0.2'",
            "kits/garage/kit.yaml:8:56: a layer needs 'file:', its sound file",
            "kits/garage/kit.yaml:8:69: a layer is a sound file or a mapping such as '{ file: soft.wav, velocity: 0-0.5 }', not a list",
            "kits/garage/kit.yaml:9:12: 'cowbell' is a sound file such as 'cowbell.wav' or a mapping such as '{ file: cowbell.wav, gain: 0.8 }', not a list",
        ])
    }

    @Test func notAKitFile() {
        #expect(mistakes("") == [
            "kits/garage/kit.yaml:1:1: the kit file is empty; write 'voices:' with each voice's sound file, such as 'kick: kick.wav'",
        ])
        #expect(mistakes("- kick.wav") == ["kits/garage/kit.yaml:1:1: a kit file is a mapping with 'voices:' (and 'name:'), not a list"])
        #expect(mistakes("voices:\n\tkick: k.wav") == ["kits/garage/kit.yaml:2:1: tab in the indentation; YAML indents with spaces only"])
        #expect(mistakes("voices: {}") == [
            "kits/garage/kit.yaml:1:9: 'voices' maps voices to sound files, such as 'kick: kick.wav' or 'snare: { file: snare.wav, gain: 0.8 }'",
        ])
        #expect(mistakes("voices: { kick: a.wav, kick: b.wav }") == [
            "kits/garage/kit.yaml:1:24: key 'kick' is already written at kits/garage/kit.yaml:1:11 in the same mapping; keep one",
        ])
    }

    @Test func aFileThatCannotBeReadIsOneMistakeAtItsStart() throws {
        let directory = try temporaryDirectory()
        #expect(throws: RouteFileErrors.self) { try KitFile.load(path: directory + "/kit.yaml") }
        do {
            _ = try KitFile.load(path: directory + "/kit.yaml")
        } catch {
            #expect(error.errors.map(\.description) == ["\(directory)/kit.yaml:1:1: cannot read the kit file: No such file or directory"])
        }
    }
}
