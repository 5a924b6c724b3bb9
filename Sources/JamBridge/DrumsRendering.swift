import DrumKits
import Drums
import RouteFile

/// The kit a `drums:` block names, loaded (built-in: synthesised), with what the musician should hear about it.
public func loadKit(of drums: DrumsDeclaration) throws(KitError) -> LoadedKit {
    switch drums.kit {
    case .builtIn:
        return LoadedKit(kit: .synthesized(), warnings: [])
    case .path(let path):
        return try KitLoader.load(path: path, overrides: drums.voices) { file in try KitFile.load(path: file) }
    }
}

/// `jambridge render`: the drums of `drums` for `bars` bars at `tempo`, the session's activity along `activity`,
/// rendered offline with the daemon's sequencer and mixer into a WAV file at `path` (48 kHz stereo, in `encoding`).
public func renderDrums(_ drums: DrumsDeclaration, kit: Kit, tempo: Double, bars: Int, activity: ActivityCurve,
                        to path: String, encoding: SoundFile.WAVEncoding) throws(SoundFileError) -> DrumRender.Result {
    var sequencer = DrumSequencer(style: drums.style, seed: drums.seed)
    sequencer.lockedLevel = drums.level
    sequencer.muted = drums.muted
    let result = DrumRender.render(sequencer, kit: kit, tempo: tempo, bars: bars) { activity.value(atBar: $0, of: bars) }
    let frames = result.frames.count / 2
    var left = [Float](repeating: 0, count: frames), right = left
    for frame in 0..<frames {
        left[frame] = result.frames[2 * frame]
        right[frame] = result.frames[2 * frame + 1]
    }
    try SoundFile.writeWAV(path: path, left: left, right: right, rate: Kit.sampleRate, encoding: encoding)
    return result
}
