import Jam
import Logging
import MIDI
import RouteFile

/// One running part of the daemon, made from its block of the route files: the ALSA client, the RTP-MIDI session,
/// each OSC endpoint, song and recorder, the jam, the drums. `Assembly` knows parts only through this, and puts every configuration in
/// force the same way, the first one included (docs/internals.md, "Parts").
///
/// All of it is called on the daemon's control queue, but `song`.
protocol Part: AnyObject {
    /// What a part is made from: its block of the configuration (an endpoint's declaration, the `session:` block).
    associatedtype Block

    /// The parts of this kind `configuration` asks for, each by a key unique within the kind (the endpoint's name,
    /// the block's), in the order they are made.
    static func blocks(in configuration: RouteConfiguration) -> [(key: String, block: Block)]

    /// Makes the part: opens what it needs (ports, files), sends nothing into the engine before `start`. Throws
    /// what cannot be opened.
    init(_ block: Block, in configuration: RouteConfiguration, context: PartContext) throws(PartFailure)

    /// The endpoints routes can name, by name, with what runs them: the same objects for as long as they run
    /// unchanged, so that they keep their IDs. An endpoint that could not be made is left out (and tried again
    /// at the next change).
    var endpoints: [String: RunningEndpoint] { get }

    /// Takes a changed configuration in place, or says the part must be stopped and made again. Endpoints it
    /// stops offering (or offers as new objects) are taken out of the engine before new parts are made.
    func apply(_ block: Block, in configuration: RouteConfiguration) -> PartUpdate

    /// Starts the part, or points it at the IDs its endpoints have now: after every configuration the engine
    /// takes, before the sources of new endpoints start.
    func start(_ wiring: Wiring)

    /// Carries out `command`, which came through `channel`, if it is this part's to carry out (the jam's start, stop and
    /// tempo; the drums'), and says what happened; nil if it is not.
    func perform(_ command: ControlCommand, from channel: CommandChannel) -> Result<String, JamRefusal>?

    /// Who this instance is to its network peers (the session's SSRC and name), if this part knows.
    var identity: (ssrc: UInt32, name: String)? { get }

    /// Fills in the part's own object of `status` (the session's, an OSC endpoint's...) and what it dropped for
    /// its endpoints (`status.endpoints[name].dropped`), for `jambridge status`.
    func report(into status: inout DaemonStatus)

    /// Stops the part for good, once its endpoints are out of the engine: their sources stopped, what they held
    /// and what was routed to them released, their sinks stopped.
    func stop()
}

extension Part {
    /// Parts whose endpoints are all they run have nothing to start or point anywhere.
    func start(_ wiring: Wiring) {}

    /// Parts whose endpoints are all they run have nothing more to stop.
    func stop() {}

    /// Most parts take no commands.
    func perform(_ command: ControlCommand, from channel: CommandChannel) -> Result<String, JamRefusal>? { nil }

    /// Most parts do not speak for the instance on the network.
    var identity: (ssrc: UInt32, name: String)? { nil }
}

/// What a part answers when told of a changed configuration.
enum PartUpdate {
    /// It took the change while running.
    case applied
    /// It must be stopped and made again.
    case replace
}

/// What a part could not open: `problem` says what and where in the route files; `consequence` what it means
/// for a running daemon (logged after the problem on a reload).
struct PartFailure: Error {
    var problem: String
    var consequence: String
}

/// What parts are made with.
struct PartContext {
    var logger: Logger
    /// Shows every delivered event and OSC message (`--monitor`).
    var monitor: EventMonitor?
    /// The daemon as its control socket serves it, for parts that serve it too (the status page).
    var daemon: DaemonAccess
    /// The event loop the daemon's servers share (the status page's listener).
    var servers: ServerLoop
}

/// What the control socket, the status page and OSC endpoints ask of the daemon: `answer` takes a request (its status,
/// a reload, a command to the jam or its drums) and the channel it came through, and returns at once; the reply is
/// made on the daemon's control queue and handed to the closure there, so no caller (an event loop) waits for the
/// daemon.
struct DaemonAccess: Sendable {
    var answer: @Sendable (ControlRequest, CommandChannel, @escaping @Sendable (ControlReply) -> Void) -> Void
}

/// An endpoint as the engine sees it: what produces its events, what takes what is routed to it.
struct RunningEndpoint {
    /// Started with the endpoint's ID when it gets one, stopped before it is taken out of the engine.
    var source: SourceEndpoint?
    /// In the engine's sink table while the endpoint has its ID; stopped by the engine once released to.
    var sink: SinkEndpoint?
    /// True if MIDI from it enters each route under an ID of that route's own (an OSC endpoint: each route's
    /// `osc:` block translates for it alone).
    var entersEachRoute = false

    /// True if `other` is run by the same objects.
    func isSame(as other: RunningEndpoint) -> Bool {
        source === other.source && sink === other.sink
    }
}

/// What parts are started with: the engine and the IDs the configuration's endpoints have.
struct Wiring {
    var engine: Engine
    var configuration: RouteConfiguration
    /// The ID of each running endpoint, by name.
    var ids: [String: EndpointID]
    /// The IDs MIDI from an endpoint that enters each route under its own enters them with: by endpoint name, then
    /// by the route's index in `configuration.allRoutes`.
    var routeIDs: [String: [Int: EndpointID]]
    /// Who this instance is to its network peers (the session's SSRC and name), if a session runs: asked once the
    /// parts before the asker started.
    var identity: () -> (ssrc: UInt32, name: String)?
    /// The jam's song as the jam publishes it (silent while no jam runs), for the parts that play along it.
    var song: PublishedSong
}

/// An endpoint's declaration with what its kind says (a path, OSC settings): the block of a part that runs one
/// endpoint.
struct Declared<Settings> {
    var declaration: EndpointDeclaration
    var settings: Settings
}

extension RouteConfiguration {
    /// The endpoints declared with a kind `settings` reads, as blocks keyed by name.
    func endpoints<Settings>(_ settings: (EndpointKind) -> Settings?) -> [(key: String, block: Declared<Settings>)] {
        endpoints.compactMap { declaration in
            settings(declaration.kind).map { (declaration.name, Declared(declaration: declaration, settings: $0)) }
        }
    }
}
