import MIDI

/// The words a route file may use, in one place so messages and the loader agree.
enum RouteFileVocabulary {
    /// Top-level keys this version reads.
    static let topLevelKeys = ["session", "alsa", "clock", "activity", "drums", "http", "endpoints", "routes"]
    /// Keys of the `http:` mapping.
    static let httpKeys = ["listen", "control", "hosts"]
    /// Keys of the `drums:` mapping.
    static let drumsKeys = ["style", "kit", "voices", "level", "seed", "mute", "audio", "notes"]
    /// The endpoint name of the drum sequencer's notes.
    static let drumsEndpointName = DrumsDeclaration.endpointName
    /// Keys of the `clock:` mapping.
    static let clockKeys = ["first-start", "fixed", "priority", "on-master-lost", "tempo", "to", "link"]
    /// Keys of the `activity:` mapping.
    static let activityKeys = ["level", "total", "combine"]
    /// Keys of an endpoint's mapping.
    static let endpointKeys = ["file", "loop", "record", "peer", "alsa", "osc"]
    /// Keys of a route: `from` and `to`, the stages in the order they run, then `osc` and `echo`, which are not stages.
    static let routeKeys = ["from", "to", "only", "except", "channels", "notes", "convert", "cc", "cc-range",
                            "transpose", "velocity", "channel", "osc", "echo", "control"]
    /// Keys of a `convert:` entry.
    static let convertKeys = ["from", "to"]
    /// Keys of a `cc-range:` entry.
    static let controllerRangeKeys = ["from", "to", "curve"]
    /// Keys of a `velocity:` mapping.
    static let velocityKeys = ["scale", "fixed", "curve", "from", "to"]
    /// The endpoint name reserved for the RTP-MIDI session.
    static let sessionEndpointName = "session"
    /// Keys of the `session:` mapping.
    static let sessionKeys = ["name", "port", "bind", "accept", "invite", "advertise", "timeout",
                              "max-peers", "running-status", "playout"]
    /// The words `accept:` takes besides a list of peer names.
    static let acceptWords = ["anyone", "none", "listed"]
    /// The words `playout:` takes, for every peer or per peer.
    static let playoutWords = ["immediate", "timestamp"]
    /// Keys of the top-level `alsa:` mapping.
    static let alsaKeys = ["client"]
    /// Keys of an `alsa:` endpoint written as a mapping.
    static let alsaEndpointKeys = ["create"]
    /// Keys of an `invite:` entry written as a mapping.
    static let invitationKeys = ["host", "port"]
    /// Keys of an `osc:` endpoint.
    static let oscEndpointKeys = ["listen", "reply", "host", "send", "accept", "forget", "control"]
    /// The words an `osc:` endpoint's `accept:` takes besides addresses and networks.
    static let oscAcceptWords = ["anyone", "none", "local"]
    /// Keys of an OSC control in a route's `osc:` block.
    static let oscControlKeys = ["cc", "note", "velocity", "pitchbend", "program", "pressure", "channel", "arg",
                                 "args", "from", "to", "curve", "smooth"]
    /// The keys of an OSC control that say what it becomes; a control has exactly one.
    static let oscControlTargets = ["cc", "note", "pitchbend", "program", "pressure"]
    /// Keys of an `activity: motion` entry in a route's `osc:` block.
    static let motionKeys = ["activity", "axes", "units", "high-pass", "attack", "release", "range", "cc", "channel"]
    /// The accelerometer units `units:` takes, with how many of them make one g (standard gravity).
    static let motionUnits: [(name: String, unitsPerG: Double)] = [("g", 1), ("m/s2", 9.80665)]

    /// Message kinds by the names `only:` and `except:` use, in the order messages list them.
    static let messageKinds: [(name: String, kinds: MIDIMessageKinds)] = [
        ("note", [MIDIMessageKinds(.noteOn), MIDIMessageKinds(.noteOff)]),
        ("poly-pressure", MIDIMessageKinds(.polyPressure)),
        ("cc", MIDIMessageKinds(.controlChange)),
        ("program", MIDIMessageKinds(.programChange)),
        ("pressure", MIDIMessageKinds(.channelPressure)),
        ("pitchbend", MIDIMessageKinds(.pitchBend)),
        ("sysex", MIDIMessageKinds(.sysEx)),
        ("mtc", MIDIMessageKinds(.mtcQuarterFrame)),
        ("song-position", MIDIMessageKinds(.songPosition)),
        ("song-select", MIDIMessageKinds(.songSelect)),
        ("tune-request", MIDIMessageKinds(.tuneRequest)),
        ("clock", MIDIMessageKinds(.timingClock)),
        ("start", MIDIMessageKinds(.start)),
        ("continue", MIDIMessageKinds(.continue)),
        ("stop", MIDIMessageKinds(.stop)),
        ("active-sensing", MIDIMessageKinds(.activeSensing)),
        ("reset", MIDIMessageKinds(.systemReset)),
        ("transport", [MIDIMessageKinds(.start), MIDIMessageKinds(.continue), MIDIMessageKinds(.stop),
                       MIDIMessageKinds(.songPosition)]),
        ("realtime", [MIDIMessageKinds(.timingClock), MIDIMessageKinds(.start), MIDIMessageKinds(.continue),
                      MIDIMessageKinds(.stop), MIDIMessageKinds(.activeSensing), MIDIMessageKinds(.systemReset)]),
        ("channel", channelVoiceKinds),
        ("system", MIDIMessageKinds.all.subtracting(channelVoiceKinds)),
    ]

    /// Every channel voice message kind.
    static let channelVoiceKinds: MIDIMessageKinds = [
        MIDIMessageKinds(.noteOn), MIDIMessageKinds(.noteOff), MIDIMessageKinds(.polyPressure),
        MIDIMessageKinds(.controlChange), MIDIMessageKinds(.programChange), MIDIMessageKinds(.channelPressure),
        MIDIMessageKinds(.pitchBend),
    ]

    /// The message kinds called `name`, or nil if no kind or group has that name.
    static func messageKinds(named name: String) -> MIDIMessageKinds? {
        messageKinds.first { $0.name == name }?.kinds
    }

    /// The names `only:` and `except:` accept, for messages.
    static var messageKindNames: [String] { messageKinds.map(\.name) }

    /// The closest of `candidates` to `word` if it is near enough to be a likely typo.
    static func closest(to word: String, in candidates: [String]) -> String? {
        let scored = candidates.map { ($0, editDistance(word, $0)) }
        guard let best = scored.min(by: { $0.1 < $1.1 }) else { return nil }
        return best.1 <= max(1, word.count / 3) ? best.0 : nil
    }

    /// The edit distance between `a` and `b`, in characters: insertions, deletions, substitutions and swaps of two
    /// neighbours (optimal string alignment), so that a typo such as 'sytnh' is one edit from 'synth'.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty else { return b.count }
        var beforePrevious = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in stride(from: 1, through: b.count, by: 1) {
                let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], beforePrevious[j - 2] + 1)
                }
            }
            (beforePrevious, previous, current) = (previous, current, beforePrevious)
        }
        return previous[b.count]
    }
}

extension StringProtocol {
    /// This text without the spaces and tabs around it.
    var trimmingSpaces: SubSequence {
        let isSpace = { (character: Character) in character == " " || character == "\t" }
        let start = firstIndex { !isSpace($0) } ?? endIndex
        let end = lastIndex { !isSpace($0) }.map(index(after:)) ?? start
        return self[start..<end]
    }
}
