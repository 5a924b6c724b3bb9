/// A position in a route file: file name, line and column, all counted from 1. Here, below every module,
/// because each block's model (OSC mappings, later the jam's) carries where it was written.
public struct SourceLocation: Hashable, Sendable, CustomStringConvertible {
    /// The route file's path as it was given.
    public var file: String
    /// The line, counted from 1.
    public var line: Int
    /// The column in Unicode scalars, counted from 1.
    public var column: Int

    /// A position in `file` at `line` and `column` (both counted from 1).
    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    /// `file:line:column`, the form editors and compilers use.
    public var description: String { "\(file):\(line):\(column)" }
}
