import RouteFile

/// A `file:` endpoint: its song played in time into the engine (`MIDIFilePlayer`). The song is the one the route
/// files' loader read and checked, so a song is read once and the file played is the file checked.
final class FilePlayerPart: Part {
    private let declaration: EndpointDeclaration
    private let path: String
    private let loop: Bool
    private let player: MIDIFilePlayer

    static func blocks(in configuration: RouteConfiguration) -> [(key: String, block: Declared<(path: String, loop: Bool)>)] {
        configuration.endpoints { if case .midiFile(let path, let loop) = $0 { (path, loop) } else { nil } }
    }

    init(_ block: Declared<(path: String, loop: Bool)>, in configuration: RouteConfiguration,
         context: PartContext) throws(PartFailure) {
        declaration = block.declaration
        path = block.settings.path
        loop = block.settings.loop
        guard let song = configuration.songs[path] else {
            throw PartFailure(problem: "\(declaration.location): \(declaration.name): the song \(path) was not read with the route files",
                              consequence: "this endpoint stays silent")
        }
        player = MIDIFilePlayer(name: declaration.name, song: song, loop: loop, logger: context.logger)
    }

    var endpoints: [String: RunningEndpoint] { [declaration.name: RunningEndpoint(source: player)] }

    /// Plays on while its `file:` and `loop:` stay as they are: a song changed on disk plays when the endpoint
    /// starts again.
    func apply(_ block: Declared<(path: String, loop: Bool)>, in configuration: RouteConfiguration) -> PartUpdate {
        block.declaration.kind == declaration.kind ? .applied : .replace
    }

    func report(into status: inout DaemonStatus) {
        status.songs[declaration.name] = DaemonStatus.Song(path: path, loop: loop)
    }
}
