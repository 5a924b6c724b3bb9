/// Whether `name` matches the shell-style `glob` (`*`, `?`, `[abc]`, `[a-z]`, `[!abc]`,
/// backslash escapes); case-sensitive, compared Character by Character so "Mike’s*" matches
/// "Mike’s Mac".
public func bonjourNameMatches(_ name: String, glob: String) -> Bool {
    let text = Array(name)
    let pattern = Array(glob)
    var t = 0, p = 0
    // Where to resume after the last `*`: pattern index after it, text index it currently covers.
    var starP: Int? = nil, starT = 0
    while t < text.count {
        if p < pattern.count {
            switch pattern[p] {
            case "*":
                starP = p + 1
                starT = t
                p += 1
                continue
            case "?":
                t += 1; p += 1
                continue
            case "[":
                if let (matched, next) = matchBracket(pattern, at: p, text[t]) {
                    if matched { t += 1; p = next; continue }
                } else if text[t] == "[" {  // unterminated: a literal "["
                    t += 1; p += 1; continue
                }
            case "\\" where p + 1 < pattern.count:
                if pattern[p + 1] == text[t] { t += 1; p += 2; continue }
            default:
                if pattern[p] == text[t] { t += 1; p += 1; continue }
            }
        }
        // Mismatch: let the last `*` swallow one more character, or fail.
        guard let resume = starP else { return false }
        starT += 1
        t = starT
        p = resume
    }
    while p < pattern.count, pattern[p] == "*" { p += 1 }
    return p == pattern.count
}

/// Matches `c` against the bracket expression starting at `pattern[start] == "["`. Returns whether
/// it matched and the index after the closing "]", or nil when the bracket is not terminated.
private func matchBracket(_ pattern: [Character], at start: Int, _ c: Character) -> (Bool, Int)? {
    var i = start + 1
    var negated = false
    if i < pattern.count, pattern[i] == "!" || pattern[i] == "^" {
        negated = true
        i += 1
    }
    var matched = false
    var first = true
    while i < pattern.count {
        var lower = pattern[i]
        if lower == "]" && !first { return (matched != negated, i + 1) }
        first = false
        if lower == "\\", i + 1 < pattern.count {
            i += 1
            lower = pattern[i]
        }
        // A range "a-z" (a "-" right before "]" is literal).
        if i + 2 < pattern.count, pattern[i + 1] == "-", pattern[i + 2] != "]" {
            var upper = pattern[i + 2]
            var end = i + 2
            if upper == "\\", i + 3 < pattern.count {
                end = i + 3
                upper = pattern[end]
            }
            if lower <= c && c <= upper { matched = true }
            i = end + 1
        } else {
            if lower == c { matched = true }
            i += 1
        }
    }
    return nil
}
