import Drums

/// The styles jambridge ships, in the style-file language (`jambridge styles NAME` prints one to start a style of
/// your own from). Each step says from which intensity level up it plays: level 1 is a drummer keeping time for a
/// calm room, the top level one driving a busy jam.
public enum BuiltinStyles {
    /// The names, in the order listed.
    public static let names = ["rock", "funk", "bossa", "six-eight"]

    /// The style file text of the built-in style `name`.
    public static func text(of name: String) -> String? {
        switch name {
        case "rock": rock
        case "funk": funk
        case "bossa": bossa
        case "six-eight": sixEight
        default: nil
        }
    }

    /// The built-in style `name`, read.
    public static func style(_ name: String) -> Style? {
        text(of: name).map { try! StyleFile.parse(yaml: $0, file: "\(name).yaml") } // shipped text: checked by the tests
    }

    static let rock = """
        # Straight rock: kick on 1 and 3, backbeat, eighth hats; then a pushed kick and an open hat, sixteenth
        # ghost notes on the hats and snare, a crash to open each phrase, and toms down the fill.
        name: rock
        time: 4/4
        levels: 5
        humanize: { time: 3, velocity: 8 }
        phrase: 4
        groove:
          kick:     "1> .   .    .  | .   .  .    4  | 1  .  3    .  | .   .  5   ."
          snare:    ".  .   .    .  | 1>  .  .    4g | .  5g .    .  | 1>  .  .   4g"
          hat:      "1  4g  2@80 4g | 1   4g 2@80 4g | 1  4g 2@80 4g | 1   4g 2@80 4g"
          open-hat: ".  .   .    .  | .   .  .    .  | .  .  .    .  | .   .  3   ."
          crash:    "4> . . . | . . . . | . . . . | . . . . |
                     .  . . . | . . . . | . . . . | . . . . |
                     .  . . . | . . . . | . . . . | . . . . |
                     .  . . . | . . . . | . . . . | . . . ."
        fill:
          kick:     "1> .  .  .  | .  .  .  .  | 1  .  .  .  | .  .  .  4"
          snare:    ".  .  .  .  | 1> .  .  4g | .  .  .  .  | 1  3g 2  3"
          hat:      "1  4g 2@80 4g | 1 4g 2@80 4g | 1 . 2@80 . | . . . ."
          high-tom: ".  .  .  .  | .  .  .  .  | 3  4  3  .  | .  .  .  ."
          mid-tom:  ".  .  .  .  | .  .  .  .  | .  .  .  4  | .  .  .  ."
          low-tom:  ".  .  .  .  | .  .  .  .  | .  .  .  .  | 4  4  .  4"
        """

    static let funk = """
        # A sixteenth-note funk groove with a little swing: a syncopated kick, a ghosted snare that fills in as the
        # room heats up, sixteenth hats with the off ones soft, an open hat and a clap doubling the backbeat on top.
        name: funk
        time: 4/4
        levels: 5
        swing: 54
        humanize: { time: 2, velocity: 10 }
        phrase: 4
        groove:
          kick:     "1> .    .  3    | .   .    2  .    | .  .    1  .    | .  4    .  ."
          snare:    ".  .    .  .    | 1>  .    .  3g   | .  4g   .  3g   | 1> .    .  4g"
          hat:      "1  2@64 1  2@64 | 1   2@64 1  2@64 | 1  2@64 1  2@64 | 1  2@64 1  ."
          open-hat: ".  .    .  .    | .   .    .  .    | .  .    .  .    | .  .    .  3"
          clap:     ".  .    .  .    | 5   .    .  .    | .  .    .  .    | 5  .    .  ."
          crash:    "4> . . . | . . . . | . . . . | . . . . |
                     .  . . . | . . . . | . . . . | . . . . |
                     .  . . . | . . . . | . . . . | . . . . |
                     .  . . . | . . . . | . . . . | . . . ."
        fill:
          kick:     "1> .    .  3    | .   .    2  .    | .  .    1  .    | .  .    .  3"
          snare:    ".  .    .  .    | 1>  .    .  3g   | 2  3g   2  3g   | 1> 2    3g 2>"
          hat:      "1  2@64 1  2@64 | 1   2@64 1  2@64 | .  .    .  .    | .  .    .  ."
          high-tom: ".  .    .  .    | .   .    .  .    | .  4    .  .    | .  .    .  ."
          low-tom:  ".  .    .  .    | .   .    .  .    | .  .    .  4    | .  4    .  ."
        """

    static let bossa = """
        # Bossa nova over two bars: the surdo-like kick on 1 and the "and" of 2 (and of 3 and 4), the bossa clave on
        # the rim, then hats, a shaker in sixteenths and the ride's bell for the busiest room.
        name: bossa
        time: 4/4
        levels: 4
        humanize: { time: 3, velocity: 8 }
        phrase: 8
        groove:
          kick:      "1 . . 2 | 1 . . 2 | 1 . . 2 | 1 . . 2"
          rim:       "1 . . 1 | . . 1 . | . . 1 . | . 1 . . |
                      . . 1 . | . 1 . . | 1 . . 1 | . . . ."
          hat:       "2@70 . 2@50 . | 2@70 . 2@50 . | 2@70 . 2@50 . | 2@70 . 2@50 ."
          pedal-hat: ". . 3g . | . . 3g . | . . 3g . | . . 3g ."
          shaker:    "3@60 3g 3@50 3g | 3@60 3g 3@50 3g | 3@60 3g 3@50 3g | 3@60 3g 3@50 3g"
          ride-bell: "4 . . . | 4 . . . | 4 . . . | 4 . . 4?50"
        fill:
          kick:      "1 . . 2 | 1 . . 2 | 1 . . 2 | 1 . . 2"
          rim:       "1 . . 1 | . . 1 . | . . 1 . | . 1 . ."
          snare:     ". . . . | . . . . | . . 3g . | 2 . 3 3"
          high-tom:  ". . . . | . . . . | 4 . . . | . . . ."
          low-tom:   ". . . . | . . . . | . . . 4 | . . . ."
        """

    static let sixEight = """
        # A 6/8 feel in two dotted beats: the kick on 1, the backbeat on 4, eighths on the hat; then a shaker, the
        # cowbell's bell pattern and kick pick-ups, the ride and sixteenths for the busiest room.
        name: six-eight
        time: 6/8
        levels: 4
        humanize: { time: 3, velocity: 8 }
        phrase: 4
        groove:
          kick:    "1> . . . 3 . | 2 . . . . 3"
          snare:   ".  . . . . . | 1> . . . 4g ."
          rim:     ".  . . . . . | .  . . . . 3g"
          hat:     "1  . 2@70 . 2@70 . | 1 . 2@70 . 2@70 ."
          shaker:  "2@60 2g 2g 2g 2g 2g | 2@60 2g 2g 2g 2g 2g"
          cowbell: "3 . 3 . . 3 | . 3 . 3 . 3"
          ride:    "4 . 4 4g 4 . | 4 . 4 4g 4 ."
        fill:
          kick:     "1> . . . 3 . | 2 . . . . ."
          snare:    ".  . . . . . | 1> . 2 3g 2 2>"
          hat:      "1  . 2@70 . 2@70 . | . . . . . ."
          high-tom: ".  . . . . . | . 3 . . . ."
          low-tom:  ".  . . . . . | . . . 4 . 4"
        """
}
