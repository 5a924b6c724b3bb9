import Glibc

extension Kit {
    /// The built-in kit ("built-in"): every voice synthesised at start-up the way the analogue drum machines
    /// (TR-808, TR-909) make them, so any style plays on a fresh install with no files. Drums are sines with a
    /// pitch sweep, snare and clap filtered noise, the metal six detuned square oscillators. The noise is seeded,
    /// so the kit is the same on every start; the three hats share a choke group, so a closed or pedal hat cuts
    /// the open one. The snare has a softer, darker layer for ghost notes (velocities up to 0.45).
    public static func synthesized() -> Kit {
        Kit(name: "built-in", instruments: Dictionary(uniqueKeysWithValues: DrumVoice.allCases.map {
            ($0, synthesizedInstrument($0))
        }))
    }
}

/// The choke group of the closed, pedal and open hats.
private let hatChokeGroup = 1

private let rate = Double(Kit.sampleRate)

private func synthesizedInstrument(_ voice: DrumVoice) -> KitInstrument {
    var noise = Noise(seed: UInt64(voice.generalMIDINote))
    var first = Oscillator(), second = Oscillator()
    var metal = Metal()
    func instrument(_ name: String, level: Double, pan: Double, _ mono: [Double]) -> KitInstrument {
        KitInstrument(name: name, voice: voice, layers: [KitLayer(sample: stereo(mono, level: level, pan: pan))])
    }
    func tom(_ name: String, _ frequency: Double, decay: Double, pan: Double) -> KitInstrument {
        var stick = Biquad(.lowPass, 3000)
        return instrument(name, level: -4, pan: pan, render(7 * decay) { t in
            first.sine(frequency * (1 + 0.4 * exp(-t / 0.04))) * exp(-t / decay)
                + 0.3 * stick(noise.next()) * exp(-t / 0.004)
        })
    }
    func conga(_ name: String, _ frequency: Double, decay: Double, pan: Double) -> KitInstrument {
        var slap = Biquad(.bandPass, 4000)
        return instrument(name, level: -8, pan: pan, render(8 * decay) { t in
            first.sine(frequency * (1 + 0.08 * exp(-t / 0.01))) * exp(-t / decay)
                + 0.4 * slap(noise.next()) * exp(-t / 0.002)
        })
    }

    switch voice {
    case .kick:
        // 150 -> 50 Hz in a few tens of milliseconds, and a click of high-passed noise for the beater.
        var click = Biquad(.highPass, 2000)
        return instrument("Kick", level: -3, pan: 0, render(0.8) { t in
            first.sine(50 + 100 * exp(-t / 0.03)) * exp(-t / 0.13) + 0.8 * click(noise.next()) * exp(-t / 0.0015)
        })
    case .snare:
        // Two damped tones (the shell) and band-passed noise (the snares); the ghost layer has fewer, duller snares.
        func snare(bright: Double, snares: Double) -> [Double] {
            var highPass = Biquad(.highPass, 1500), lowPass = Biquad(.lowPass, bright)
            var shell = Oscillator(), overtone = Oscillator()
            return render(0.4) { t in
                0.7 * shell.sine(180 * (1 + 0.1 * exp(-t / 0.01))) * exp(-t / 0.05)
                    + 0.4 * overtone.sine(330) * exp(-t / 0.03)
                    + snares * lowPass(highPass(noise.next())) * exp(-t / 0.06)
            }
        }
        let ghost = stereo(snare(bright: 4000, snares: 1), level: -6, pan: 0)
        let full = stereo(snare(bright: 10_000, snares: 1.5), level: -3, pan: 0)
        return KitInstrument(name: "Snare", voice: voice, layers: [KitLayer(velocities: 0...0.45, sample: ghost),
                                                                   KitLayer(velocities: 0.45...1, sample: full)])
    case .rim:
        // The 808's rim shot: two short tones and a click.
        var click = Biquad(.highPass, 3000)
        return instrument("Rim", level: -8, pan: 0, render(0.08) { t in
            (0.6 * first.sine(1700) + 0.4 * second.sine(455)) * exp(-t / 0.008)
                + 0.5 * click(noise.next()) * exp(-t / 0.001)
        })
    case .clap:
        // Three bursts 11 ms apart, then the tail: hands that do not quite meet, and the room.
        var band = Biquad(.bandPass, 1300, q: 1.2)
        return instrument("Clap", level: -4, pan: 0, render(0.5) { t in
            let envelope = t < 0.033 ? exp(-t.truncatingRemainder(dividingBy: 0.011) / 0.003) : exp(-(t - 0.033) / 0.06)
            return band(noise.next()) * envelope
        })
    case .hat, .pedalHat, .openHat:
        // The 808's metal through a band-pass and a high-pass, with a little noise; the envelope makes the hat.
        let (name, decay, attack, level) = voice == .hat ? ("Closed hat", 0.018, 0.0, -10.0)
            : voice == .pedalHat ? ("Pedal hat", 0.03, 0.003, -13.0) : ("Open hat", 0.18, 0.0, -10.0)
        var band = Biquad(.bandPass, voice == .pedalHat ? 6000 : 8000), high = Biquad(.highPass, 6000)
        let hat = render(7 * decay) { t in
            high(band(metal.next() / 6 + 0.3 * noise.next())) * exp(-t / decay) * (attack > 0 ? 1 - exp(-t / attack) : 1)
        }
        return KitInstrument(name: name, voice: voice, layers: [KitLayer(sample: stereo(hat, level: level, pan: 0.25))],
                             chokeGroup: hatChokeGroup)
    case .lowTom: return tom("Low tom", 95, decay: 0.09, pan: -0.35)
    case .midTom: return tom("Mid tom", 130, decay: 0.08, pan: 0.05)
    case .highTom: return tom("High tom", 175, decay: 0.07, pan: 0.3)
    case .crash:
        // Noise and metal, bright and long.
        var band = Biquad(.bandPass, 7000, q: 0.5), high = Biquad(.highPass, 3500)
        return instrument("Crash", level: -8, pan: 0.35, render(3) { t in
            high(band(0.5 * metal.next() / 6 + noise.next())) * exp(-t / 0.45)
        })
    case .ride:
        // More metal than noise, a ping on the hit, and a shorter wash.
        var band = Biquad(.bandPass, 6000, q: 1.5), high = Biquad(.highPass, 3000)
        return instrument("Ride", level: -11, pan: -0.35, render(2) { t in
            high(band(metal.next() / 6 + 0.3 * noise.next())) * (0.6 * exp(-t / 0.3) + 0.4 * exp(-t / 0.02))
        })
    case .rideBell:
        // Inharmonic partials, the higher dying sooner, over a little ride wash.
        var high = Biquad(.highPass, 3000)
        var third = Oscillator(), fourth = Oscillator()
        return instrument("Ride bell", level: -11, pan: -0.35, render(2) { t in
            (first.sine(740) + 0.7 * second.sine(1108)) * exp(-t / 0.28)
                + (0.5 * third.sine(1661) + 0.3 * fourth.sine(2470)) * exp(-t / 0.12)
                + 0.3 * high(metal.next() / 6) * exp(-t / 0.15)
        })
    case .tambourine:
        // A shake of noise through three narrow jingle resonances.
        var jingles = [Biquad(.bandPass, 5300, q: 8), Biquad(.bandPass, 7100, q: 8), Biquad(.bandPass, 9400, q: 8)]
        var high = Biquad(.highPass, 5000)
        return instrument("Tambourine", level: -12, pan: -0.4, render(0.4) { t in
            let x = noise.next()
            let ring = jingles.indices.reduce(0) { $0 + jingles[$1](x) }
            let envelope = exp(-t / 0.05) + (t > 0.018 ? 0.6 * exp(-(t - 0.018) / 0.05) : 0)
            return (ring + 0.3 * high(x)) * envelope
        })
    case .cowbell:
        // The 808's: two detuned squares, band-passed, loud for a moment and then ringing quieter.
        var band = Biquad(.bandPass, 2000, q: 0.8)
        return instrument("Cowbell", level: -11, pan: 0.25, render(0.8) { t in
            band(first.square(540) + second.square(800)) * (0.7 * exp(-t / 0.012) + 0.3 * exp(-t / 0.11))
        })
    case .clave:
        return instrument("Clave", level: -11, pan: -0.3, render(0.12) { t in
            first.sine(2500) * exp(-t / 0.015)
        })
    case .shaker:
        // High noise that swells for a moment and dies away.
        var band = Biquad(.bandPass, 6500, q: 0.9)
        return instrument("Shaker", level: -14, pan: 0.45, render(0.25) { t in
            band(noise.next()) * (1 - exp(-t / 0.012)) * exp(-t / 0.03)
        })
    case .highConga: return conga("High conga", 350, decay: 0.05, pan: -0.25)
    case .lowConga: return conga("Low conga", 235, decay: 0.065, pan: -0.45)
    }
}

/// `seconds` of `sample(t)`, `t` in seconds from the hit.
private func render(_ seconds: Double, _ sample: (Double) -> Double) -> [Double] {
    (0..<Int(seconds * rate)).map { sample(Double($0) / rate) }
}

/// `mono` faded out over its last 5 ms, its louder channel peaking at `level` dBFS once panned to `pan`
/// (-1 left to 1 right, constant power).
private func stereo(_ mono: [Double], level: Double, pan: Double) -> Sample {
    let angle = (pan + 1) * .pi / 4, fade = Int(0.005 * rate)
    let peak = mono.reduce(0) { max($0, abs($1)) }
    let gain = pow(10, level / 20) / (peak * max(cos(angle), sin(angle)))
    let faded = mono.enumerated().map { i, x in
        x * (i < mono.count - fade ? 1 : 0.5 * (1 - cos(.pi * Double(mono.count - 1 - i) / Double(fade))))
    }
    return Sample(left: faded.map { Float($0 * gain * cos(angle)) }, right: faded.map { Float($0 * gain * sin(angle)) })
}

/// White noise from xorshift64, seeded: the same on every start.
private struct Noise {
    private var state: UInt64

    init(seed: UInt64) { state = (seed &+ 1) &* 0x9E37_79B9_7F4A_7C15 }

    /// The next value, in -1..<1.
    mutating func next() -> Double {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return Double(state >> 11) / Double(1 << 52) - 1
    }
}

/// A phase for sines and squares whose frequency may change every sample.
private struct Oscillator {
    private var phase = 0.0

    mutating func sine(_ frequency: Double) -> Double {
        defer { advance(frequency) }
        return sin(2 * .pi * phase)
    }

    /// A square with its steps smoothed (polyBLEP), so that it does not alias.
    mutating func square(_ frequency: Double) -> Double {
        defer { advance(frequency) }
        let step = frequency / rate
        func blep(_ t: Double) -> Double {
            if t < step { let x = t / step; return 2 * x - x * x - 1 }
            if t > 1 - step { let x = (t - 1) / step; return x * x + 2 * x + 1 }
            return 0
        }
        let half = phase < 0.5 ? phase + 0.5 : phase - 0.5
        return (phase < 0.5 ? 1 : -1) + blep(phase) - blep(half)
    }

    private mutating func advance(_ frequency: Double) {
        phase += frequency / rate
        phase -= floor(phase)
    }
}

/// The 808's metal: six square oscillators at inharmonic frequencies, summed (-6...6).
private struct Metal {
    private static let frequencies = [205.3, 304.4, 369.6, 522.7, 540.0, 800.0]
    private var oscillators = Array(repeating: Oscillator(), count: 6)

    mutating func next() -> Double {
        oscillators.indices.reduce(0) { $0 + oscillators[$1].square(Metal.frequencies[$1]) }
    }
}

/// A second-order filter (the Audio EQ Cookbook's), the band-pass with 0 dB at its centre.
private struct Biquad {
    enum Kind { case lowPass, highPass, bandPass }

    private let b0, b1, b2, a1, a2: Double
    private var s1 = 0.0, s2 = 0.0

    init(_ kind: Kind, _ frequency: Double, q: Double = 0.707) {
        let w = 2 * .pi * frequency / rate, alpha = sin(w) / (2 * q), a0 = 1 + alpha
        let (b0, b1, b2) = switch kind {
        case .lowPass: ((1 - cos(w)) / 2, 1 - cos(w), (1 - cos(w)) / 2)
        case .highPass: ((1 + cos(w)) / 2, -(1 + cos(w)), (1 + cos(w)) / 2)
        case .bandPass: (alpha, 0.0, -alpha)
        }
        (self.b0, self.b1, self.b2) = (b0 / a0, b1 / a0, b2 / a0)
        (a1, a2) = (-2 * cos(w) / a0, (1 - alpha) / a0)
    }

    mutating func callAsFunction(_ x: Double) -> Double {
        let y = b0 * x + s1
        s1 = b1 * x - a1 * y + s2
        s2 = b2 * x - a2 * y
        return y
    }
}
