import DrumKits
import Drums
#if canImport(Glibc)
import Glibc
#endif
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
/// rendered offline with the daemon's sequencer and mixer into a WAV file at `path` (48 kHz stereo, in `encoding`),
/// written as it is rendered: a render of 10,000 bars takes the memory of one of 4.
public func renderDrums(_ drums: DrumsDeclaration, kit: Kit, tempo: Double, bars: Int, activity: ActivityCurve,
                        to path: String, encoding: SoundFile.WAVEncoding) throws(SoundFileError) -> DrumRender.Result {
    var sequencer = DrumSequencer(style: drums.style, seed: drums.seed)
    sequencer.lockedLevel = drums.level
    sequencer.muted = drums.muted
    return try SoundFile.writingWAV(path: path, rate: Kit.sampleRate, encoding: encoding) { (wav) throws(SoundFileError) in
        try DrumRender.render(sequencer, kit: kit, tempo: tempo, bars: bars) { activity.value(atBar: $0, of: bars) } write: { (frames) throws(SoundFileError) in
            try wav.write(frames)
        }
    }
}

/// The first of `inputs` that is the file at `path` (the same device and inode however either is spelt: through a
/// symlink or a hard link, `./x` for `x`), or nil if none is or nothing is at `path`: `render` must not write over
/// what it reads.
public func file(among inputs: [String], sameAs path: String) -> String? {
    guard let output = FileIdentity(path) else { return nil }
    return inputs.first { FileIdentity($0) == output }
}

/// What tells one file from another: its device and inode (`stat`, symlinks followed).
private struct FileIdentity: Equatable {
    var device: UInt64
    var inode: UInt64

    init?(_ path: String) {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        device = UInt64(status.st_dev)
        inode = UInt64(status.st_ino)
    }
}
