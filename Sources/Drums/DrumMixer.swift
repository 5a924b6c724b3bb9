/// Mixes a kit's samples into stereo frames at `Kit.sampleRate`, each hit starting at the exact frame it was
/// given (frames count from an origin the caller chooses: the song's start offline, the stream's start live).
/// Hits may be added in any order, ahead of time; a hit whose frame has passed starts at once and is counted.
/// A hit on a choke group fades out what else of the group still sounds (a closed hat cuts the open one).
/// It allocates only while its lists grow past what they held before (`reserve`d at the start).
public struct DrumMixer: Sendable {
    /// The most sounds at once: past it the oldest stops (counted).
    public static let polyphony = 64
    /// How long a choked or cut sound takes to fade: 5 ms.
    public static let fadeFrames = 240
    /// The gain of the mix, leaving headroom for hits that coincide.
    public static let masterGain: Float = 0.7

    public struct Counters: Sendable, Equatable {
        public var hits = 0
        /// Hits that came after their frame had been mixed: started at once.
        public var lateHits = 0
        /// Hits on a voice the kit does not have.
        public var silentHits = 0
        /// Sounds stopped early because `polyphony` were playing.
        public var stolen = 0
    }

    private struct Pending {
        var frame: Int64
        var voice: DrumVoice
        var velocity: Float
    }

    private struct Sounding {
        var sample: Sample
        var gain: Float
        var position: Int
        var chokeGroup: Int?
        var voice: DrumVoice
        /// Frames left of a fade-out, nil while not fading.
        var fade: Int?
    }

    public var kit: Kit
    public private(set) var counters = Counters()
    private var pending: [Pending] = []
    private var sounding: [Sounding] = []

    public init(kit: Kit) {
        self.kit = kit
        pending.reserveCapacity(256)
        sounding.reserveCapacity(Self.polyphony)
    }

    /// Whether sounds are playing or waiting.
    public var isIdle: Bool { pending.isEmpty && sounding.isEmpty }

    /// Plays `voice` at `velocity` (0-1) from `frame`.
    public mutating func add(_ voice: DrumVoice, velocity: Float, at frame: Int64) {
        let index = pending.firstIndex { $0.frame > frame } ?? pending.endIndex
        pending.insert(Pending(frame: frame, voice: voice, velocity: velocity), at: index)
    }

    /// Forgets hits not yet started (a stop, a jump in the song); what sounds rings out.
    public mutating func cancelPending() {
        pending.removeAll(keepingCapacity: true)
    }

    /// Writes interleaved stereo frames `start ..< start + buffer.count / 2` into `buffer`.
    public mutating func render(into buffer: UnsafeMutableBufferPointer<Float>, startingAt start: Int64) {
        let frames = buffer.count / 2
        for index in buffer.indices { buffer[index] = 0 }
        var cursor = 0
        while let next = pending.first, next.frame < start + Int64(frames) {
            let at = max(0, Int(next.frame - start))
            mix(into: buffer, from: cursor, to: at)
            cursor = at
            pending.removeFirst()
            if next.frame < start { counters.lateHits += 1 }
            begin(next)
        }
        mix(into: buffer, from: cursor, to: frames)
        sounding.removeAll { $0.position >= $0.sample.frameCount || $0.fade == 0 }
    }

    private mutating func begin(_ hit: Pending) {
        counters.hits += 1
        guard let instrument = kit.instruments[hit.voice] else {
            counters.silentHits += 1
            return
        }
        if let group = instrument.chokeGroup {
            for index in sounding.indices where sounding[index].chokeGroup == group && sounding[index].voice != hit.voice
                && sounding[index].fade == nil {
                sounding[index].fade = Self.fadeFrames
            }
        }
        sounding.removeAll { $0.position >= $0.sample.frameCount || $0.fade == 0 }
        if sounding.count == Self.polyphony {
            sounding.removeFirst()
            counters.stolen += 1
        }
        sounding.append(Sounding(sample: instrument.layer(for: hit.velocity).sample, gain: hit.velocity * Self.masterGain,
                                 position: 0, chokeGroup: instrument.chokeGroup, voice: hit.voice))
    }

    /// Adds every sound into frames `from ..< to` of `buffer`.
    private mutating func mix(into buffer: UnsafeMutableBufferPointer<Float>, from: Int, to: Int) {
        guard from < to else { return }
        for index in sounding.indices {
            var sound = sounding[index]
            let length = sound.sample.frameCount
            sound.sample.left.withUnsafeBufferPointer { left in
                sound.sample.right.withUnsafeBufferPointer { right in
                    var frame = from
                    while frame < to, sound.position < length, sound.fade != 0 {
                        var gain = sound.gain
                        if let fade = sound.fade {
                            gain *= Float(fade) / Float(Self.fadeFrames)
                            sound.fade = fade - 1
                        }
                        buffer[2 * frame] += left[sound.position] * gain
                        buffer[2 * frame + 1] += right[sound.position] * gain
                        sound.position += 1
                        frame += 1
                    }
                }
            }
            sounding[index].position = sound.position
            sounding[index].fade = sound.fade
        }
    }
}
