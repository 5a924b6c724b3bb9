import Testing
import MIDI

@Suite("NameGlob")
struct GlobTests {
    @Test("matches", arguments: [
        ("Studio Rack", "Studio Rack"),
        ("Studio Rack", "Studio*"),
        ("Studio Rack", "*Rack"),
        ("Studio Rack", "*"),
        ("", "*"),
        ("", ""),
        ("Studio Rack", "S?udio R?ck"),
        ("Studio Rack", "*o*a*"),
        ("Rack 2", "Rack [0-9]"),
        ("Rack b", "Rack [abc]"),
        ("Rack x", "Rack [!abc]"),
        ("Rack x", "Rack [^abc]"),
        ("Mike’s Mac", "Mike’s*"),
        ("Mike’s Mac", "Mike?s Mac"),
        ("Café 🎹", "Caf? ?"),
        ("Café 🎹", "Café [🎹🎸]"),
        ("a*b", "a\\*b"),
        ("a?b", "a\\?b"),
        ("[x", "[x"),
        ("a-b", "a[-]b"),
        ("a]b", "a[]]b"),
        ("aaaaaaaaaaaaaaaaaaaaaaaaaaab", "*a*a*a*a*a*a*b"),
    ])
    func matches(name: String, glob: String) {
        #expect(NameGlob(glob).matches(name))
    }

    @Test("does not match", arguments: [
        ("Studio Rack", "studio*"),  // case-sensitive
        ("Studio Rack", "Studio"),
        ("Studio Rack", "Rack*"),
        ("Studio Rack", "Studio Rack?"),
        ("Rack d", "Rack [abc]"),
        ("Rack a", "Rack [!abc]"),
        ("Rack x", "Rack [0-9]"),
        ("Mike's Mac", "Mike’s*"),  // ASCII apostrophe vs U+2019
        ("Café", "Cafe"),
        ("", "?"),
        ("ab", "a\\*b"),
        ("aaaaaaaaaaaaaaaaaaaaaaaaaaaa", "*a*a*a*a*a*a*b"),
    ])
    func doesNotMatch(name: String, glob: String) {
        #expect(!NameGlob(glob).matches(name))
    }

    @Test func questionMarkIsOneCharacterNotOneByte() {
        // "é" as e + combining acute is one Character.
        #expect(NameGlob("Caf?").matches("Cafe\u{301}"))
        #expect(NameGlob("?").matches("🎹"))
    }
}
