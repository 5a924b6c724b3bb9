/// A shell-style pattern for session, peer and port names: `*` any run, `?` one character,
/// `[abc]` / `[a-z]` / `[!abc]` (or `[^abc]`) a set, `\*` a literal `*`. Case-sensitive; works on characters, so "Mike’s Mac"
/// matches "Mike’s *".
public struct NameGlob: Hashable, Sendable, CustomStringConvertible {
    /// The pattern as written.
    public let pattern: String
    private let characters: [Character]

    /// The glob `pattern`.
    public init(_ pattern: String) {
        self.pattern = pattern
        characters = Array(pattern)
    }

    public var description: String { pattern }

    /// True if the whole of `name` matches.
    public func matches(_ name: String) -> Bool {
        let text = Array(name)
        // Iterative matching with one backtrack point for the last `*`: linear in practice.
        var p = 0, t = 0
        var star: (pattern: Int, text: Int)?
        while t < text.count {
            if p < characters.count, characters[p] == "*" {
                star = (p, t)
                p += 1
            } else if p < characters.count, let width = matchOne(at: p, text[t]) {
                p += width
                t += 1
            } else if let s = star {
                p = s.pattern + 1
                t = s.text + 1
                star = (s.pattern, s.text + 1)
            } else {
                return false
            }
        }
        while p < characters.count, characters[p] == "*" { p += 1 }
        return p == characters.count
    }

    /// If the pattern element at `p` matches `c`, the element's width in the pattern.
    private func matchOne(at p: Int, _ c: Character) -> Int? {
        switch characters[p] {
        case "?":
            return 1
        case "\\" where p + 1 < characters.count:
            return characters[p + 1] == c ? 2 : nil
        case "[":
            guard let close = characters[(p + 1)...].dropFirst().firstIndex(of: "]") else {
                return c == "[" ? 1 : nil // an unclosed bracket is a literal
            }
            var set = characters[(p + 1)..<close]
            let negated = set.first == "!" || set.first == "^"
            if negated { set = set.dropFirst() }
            var found = false
            var i = set.startIndex
            while i < set.endIndex {
                if i + 2 < set.endIndex, set[i + 1] == "-" {
                    if set[i] <= c && c <= set[i + 2] { found = true }
                    i += 3
                } else {
                    if set[i] == c { found = true }
                    i += 1
                }
            }
            return found != negated ? close - p + 1 : nil
        default:
            return characters[p] == c ? 1 : nil
        }
    }
}
