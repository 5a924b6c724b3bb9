import MIDI

/// One route file read and checked on its own: each top-level key is read by its section's reader, which reports its
/// mistakes and notes here in the order found, and what the sections declare is kept for `RouteConfiguration` to merge
/// and check across sections and files.
struct RouteFileDocument: YAMLDocument {
    /// The file's path as given.
    let file: String
    /// Every mistake found in this file, in the order found.
    var errors: [RouteFileError] = []
    /// What is worth saying about this file that is not a mistake.
    var notes: [RouteFileNote] = []
    /// The directory relative paths in the file are resolved against.
    let directory: String
    /// True if the songs (`file:`), recordings (`record:`) and the drums' kit named are checked on disk.
    let checksFiles: Bool
    /// True for `jambridge check`: what only the user who runs the file needs (a folder to record into) is a note.
    let checkingOnly: Bool
    /// The reader of the `endpoints:` mapping, which keeps what it declares.
    private(set) var endpoints: EndpointsReader
    /// The routes declared in this file, in order.
    private(set) var routes: [PendingRoute] = []
    /// The file's `session:` block, if it has one (kept even if it holds mistakes, to find a second one).
    private(set) var session: SessionDeclaration?
    /// The file's top-level `alsa:` block, if it has one (kept even if it holds mistakes, to find a second one).
    private(set) var alsa: ALSADeclaration?
    /// The file's `clock:` and `activity:` blocks.
    private(set) var jam = JamBlocks()
    /// The file's `drums:` block, if it has one.
    private(set) var drums: DrumsDeclaration?
    /// The file's `http:` block, if it has one.
    private(set) var http: HTTPDeclaration?

    /// Reads and checks the route file at `file`, the songs it plays, the places it records to and the kit its drums
    /// play; a route file that cannot be read is one error at 1:1. `checkingOnly`: see `RouteConfiguration.load`.
    init(readingFile file: String, checkingOnly: Bool = false) {
        self.init(file: file, checksFiles: true, checkingOnly: checkingOnly)
        do {
            parse(try RegularFile.text(atPath: file, what: "route file"))
        } catch {
            errors += error.errors
        }
    }

    /// Checks `yaml` as the route file called `file`, without reading the files it names.
    init(yaml: String, file: String) {
        self.init(file: file, checksFiles: false, checkingOnly: false)
        parse(yaml)
    }

    /// The route file `file`, nothing read yet.
    private init(file: String, checksFiles: Bool, checkingOnly: Bool) {
        self.file = file
        directory = FilePaths.folder(of: file)
        self.checksFiles = checksFiles
        self.checkingOnly = checkingOnly
        endpoints = EndpointsReader(file: file, directory: directory, checksFiles: checksFiles, checkingOnly: checkingOnly)
    }

    /// Parses the YAML, then walks the top-level mapping.
    private mutating func parse(_ yaml: String) {
        guard let root = compose(yaml) else { return }
        guard !Self.isEmpty(root) else {
            fail(at: SourceLocation(file: file, line: 1, column: 1),
                 "the route file is empty; write a mapping with 'endpoints:' and 'routes:'")
            return
        }
        guard let mapping = root.mapping else {
            fail(root, "a route file is a mapping with the keys 'endpoints' and 'routes', not \(Self.describe(root))")
            return
        }
        for (keyNode, value) in mapping {
            guard let key = scalarKey(keyNode) else { continue }
            switch key {
            case "endpoints":
                endpoints.read(value)
                endpoints.report(into: &errors, &notes)
            case "routes":
                var reader = RoutesReader(file: file)
                routes = reader.read(value)
                reader.report(into: &errors, &notes)
            case "session":
                var reader = SessionReader(file: file)
                session = reader.read(value, key: keyNode)
                reader.report(into: &errors, &notes)
            case "alsa":
                var reader = ALSAClientReader(file: file)
                alsa = reader.read(value, key: keyNode)
                reader.report(into: &errors, &notes)
            case "clock":
                var reader = JamReader(file: file)
                jam.clock = reader.readClock(value, key: keyNode)
                reader.report(into: &errors, &notes)
            case "activity":
                var reader = JamReader(file: file)
                jam.activity = JamBlocks.Activity(configuration: reader.readActivity(value, key: keyNode),
                                                  location: location(keyNode))
                reader.report(into: &errors, &notes)
            case "drums":
                var reader = DrumsReader(file: file, directory: directory, checksFiles: checksFiles,
                                         checkingOnly: checkingOnly)
                drums = reader.read(value, key: keyNode)
                reader.report(into: &errors, &notes)
            case "http":
                var reader = StatusPageReader(file: file)
                http = reader.read(value, key: keyNode)
                reader.report(into: &errors, &notes)
            default:
                let hint = RouteFileVocabulary.closest(to: key, in: RouteFileVocabulary.topLevelKeys)
                    .map { "did you mean '\($0)'? " } ?? ""
                fail(keyNode, "unknown top-level key '\(key)'; \(hint)the known keys are "
                     + "'session', 'alsa', 'clock', 'activity', 'drums', 'http', 'endpoints' and 'routes'")
            }
        }
    }
}
