/// Note names as musicians write them, with middle C (note 60) as C4: C-1 is 0, G9 is 127.
public enum NoteName {
    private static let letters = ["C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B"]

    /// The name of `note`, with sharps: 60 is "C4", 61 "C#4", 0 "C-1".
    public static func name(of note: UInt7) -> String {
        let n = Int(note.value)
        return letters[n % 12] + String(n / 12 - 1)
    }

    /// The note named `text` ("C4", "c#4", "Db4", "C-1", "G9"), or nil if it is not a note name.
    public static func parse(_ text: String) -> UInt7? {
        var chars = Substring(text)
        guard let letter = chars.first else { return nil }
        chars = chars.dropFirst()
        let base: Int
        switch letter {
        case "C", "c": base = 0
        case "D", "d": base = 2
        case "E", "e": base = 4
        case "F", "f": base = 5
        case "G", "g": base = 7
        case "A", "a": base = 9
        case "B", "b": base = 11
        default: return nil
        }
        var accidental = 0
        if chars.first == "#" {
            accidental = 1
            chars = chars.dropFirst()
        } else if chars.first == "b" {
            accidental = -1
            chars = chars.dropFirst()
        }
        guard chars.count <= 2, !chars.isEmpty, let octave = Int(chars), chars.first != "+",
              (-1...9).contains(octave)
        else { return nil }
        return UInt7((octave + 1) * 12 + base + accidental)
    }
}
