extension MIDIMessage: CustomStringConvertible {
    /// aseqdump-style text, channels shown 1-16: `Note on                 1, note 60 (C4), velocity 100`.
    public var description: String {
        func column(_ name: String) -> String { name + String(repeating: " ", count: max(1, 24 - name.count)) }
        func ch(_ c: UInt4) -> String { String(Int(c.value) + 1) }
        func note(_ n: UInt7) -> String { "note \(n) (\(NoteName.name(of: n)))" }
        switch self {
        case .noteOff(let c, let n, let v): return column("Note off") + "\(ch(c)), \(note(n)), velocity \(v)"
        case .noteOn(let c, let n, let v): return column("Note on") + "\(ch(c)), \(note(n)), velocity \(v)"
        case .polyPressure(let c, let n, let p): return column("Polyphonic aftertouch") + "\(ch(c)), \(note(n)), value \(p)"
        case .controlChange(let c, let n, let v): return column("Control change") + "\(ch(c)), controller \(n), value \(v)"
        case .programChange(let c, let p): return column("Program change") + "\(ch(c)), program \(p)"
        case .channelPressure(let c, let p): return column("Channel aftertouch") + "\(ch(c)), value \(p)"
        case .pitchBend(let c, let v): return column("Pitch bend") + "\(ch(c)), value \(Int(v.value) - 8192)"
        case .sysEx(let data):
            let shown = data.prefix(16).map(hex).joined(separator: " ")
            return column("System exclusive") + "\(data.count) bytes: F0 \(shown)\(data.count > 16 ? " ..." : "") F7"
        case .mtcQuarterFrame(let v): return column("MTC quarter frame") + "type \(v.value >> 4), value \(v.value & 0x0F)"
        case .songPosition(let v): return column("Song position pointer") + "value \(v)"
        case .songSelect(let v): return column("Song select") + "value \(v)"
        case .tuneRequest: return "Tune request"
        case .timingClock: return "Clock"
        case .start: return "Start"
        case .continue: return "Continue"
        case .stop: return "Stop"
        case .activeSensing: return "Active Sensing"
        case .systemReset: return "System reset"
        }
    }
}
