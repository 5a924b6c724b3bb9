import Logging
import MIDI
import RouteFile

/// The RTP-MIDI session (`NetworkSession`, from the `session:` block) and its endpoints: `session` (every peer)
/// and each `peer:` (the peers whose names match). Settings that stay as they are keep the session and its peers
/// through a reload; endpoints come and go in place.
final class SessionPart: Part {
    private let settings: SessionSettings
    let network: NetworkSession
    private let logger: Logger
    /// The `session` and `peer:` endpoints, by name, with the kind each was made for.
    private var sinks: [String: (kind: EndpointKind, sink: SessionSink)] = [:]

    static func blocks(in configuration: RouteConfiguration) -> [(key: String, block: SessionDeclaration)] {
        configuration.session.map { [("session", $0)] } ?? []
    }

    init(_ declaration: SessionDeclaration, in configuration: RouteConfiguration, context: PartContext) throws(PartFailure) {
        logger = context.logger
        let problems: [String]
        (settings, problems) = Self.settings(declaration, in: configuration)
        for problem in problems { logger.error("\(problem)") }
        do {
            network = try NetworkSession(settings: settings, logger: logger)
        } catch {
            throw PartFailure(problem: "\(declaration.location): session '\(settings.configuration.name)': \(error)",
                              consequence: "its endpoints stay silent until a reload")
        }
        updateSinks(configuration)
    }

    /// The settings `declaration` gives, with `configuration`'s `peer:` globs (for `accept: listed`), and the
    /// invitations that do not resolve.
    private static func settings(_ declaration: SessionDeclaration,
                                 in configuration: RouteConfiguration) -> (SessionSettings, problems: [String]) {
        var problems: [String] = []
        let settings = SessionSettings(declaration, peerGlobs: configuration.endpoints.compactMap {
            if case .peer(let glob) = $0.kind { glob } else { nil }
        }, problems: &problems)
        return (settings, problems)
    }

    var endpoints: [String: RunningEndpoint] { sinks.mapValues { RunningEndpoint(sink: $0.sink) } }

    /// Keeps the session (and its peers) while its settings stay as they are.
    func apply(_ declaration: SessionDeclaration, in configuration: RouteConfiguration) -> PartUpdate {
        let (new, problems) = Self.settings(declaration, in: configuration)
        guard new == settings else { return .replace } // the session made again says what does not resolve
        for problem in problems { logger.error("\(problem)") }
        updateSinks(configuration)
        return .applied
    }

    /// Keeps the sink of each `session` and `peer:` endpoint still declared as it was, and makes the others.
    private func updateSinks(_ configuration: RouteConfiguration) {
        sinks = configuration.endpoints.reduce(into: [:]) { updated, declaration in
            let glob: NameGlob?
            switch declaration.kind {
            case .session: glob = nil
            case .peer(let pattern): glob = NameGlob(pattern)
            default: return
            }
            if let kept = sinks[declaration.name], kept.kind == declaration.kind {
                updated[declaration.name] = kept
            } else {
                updated[declaration.name] = (declaration.kind, SessionSink(session: network, glob: glob))
            }
        }
    }

    /// Starts the session (and invites the addresses listed), or routes what peers send by the endpoints' new IDs;
    /// clock sync runs often while a jam does.
    func start(_ wiring: Wiring) {
        defer { network.syncClocksOften(wiring.configuration.jam != nil) }
        let routing = NetworkSession.Routing(
            session: wiring.configuration.endpoints.first { $0.kind == .session }.flatMap { wiring.ids[$0.name] },
            peers: wiring.configuration.endpoints.compactMap { declaration in
                guard case .peer(let glob) = declaration.kind, let id = wiring.ids[declaration.name] else { return nil }
                return (NameGlob(glob), id)
            })
        if network.isStarted {
            network.update(routing: routing)
            return
        }
        network.start(sink: wiring.engine, routing: routing)
        for (address, label) in settings.addresses { network.invite(address, label: label) }
    }

    var identity: (ssrc: UInt32, name: String)? { network.currentIdentity() }

    func report(into status: inout DaemonStatus) {
        status.session = network.report()
    }

    /// Says goodbye to every peer and closes the ports.
    func stop() {
        network.stop()
    }
}
