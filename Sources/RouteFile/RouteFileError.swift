/// A position in a route file: file name, line and column, all counted from 1.
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

/// One mistake in a route file: where it is and what is wrong (and what would be right).
public struct RouteFileError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Where the mistake is.
    public var location: SourceLocation
    /// What is wrong and what would be right, for the musician who wrote the file.
    public var message: String

    /// A mistake at `location` described by `message`.
    public init(location: SourceLocation, message: String) {
        self.location = location
        self.message = message
    }

    /// `file:line:column: message`.
    public var description: String { "\(location): \(message)" }
}

/// Every mistake found in a set of route files, in file order and by position within a file.
public struct RouteFileErrors: Error, Sendable, CustomStringConvertible {
    /// The mistakes, never empty when thrown.
    public var errors: [RouteFileError]

    /// The mistakes `errors`, kept in the order given.
    public init(errors: [RouteFileError]) {
        self.errors = errors
    }

    /// One mistake per line.
    public var description: String { errors.map(\.description).joined(separator: "\n") }
}
