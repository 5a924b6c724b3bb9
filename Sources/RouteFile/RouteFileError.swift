import MIDI

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

/// Something worth saying about route files that is not a mistake: what `check` prints after a file's "ok" and `run`
/// logs, such as a recording that this user could not create but the one who runs the file may.
public struct RouteFileNote: Hashable, Sendable, CustomStringConvertible {
    /// Where it applies, if at one place in a file.
    public var location: SourceLocation?
    /// What to know, and what to do about it.
    public var message: String

    public init(location: SourceLocation?, message: String) {
        self.location = location
        self.message = message
    }

    /// `file:line:column: note: message`.
    public var description: String { (location.map { "\($0): " } ?? "") + "note: " + message }
}
