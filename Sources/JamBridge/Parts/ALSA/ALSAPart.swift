import Logging
import RouteFile

/// jambridge's ALSA sequencer client (`ALSAClient`) and its `alsa:` endpoints, one port each; made when a route
/// file first has an `alsa:` endpoint. The client keeps its name while it runs; ports come and go in place.
final class ALSAPart: Part {
    private let client: ALSAClient
    private let logger: Logger
    /// The `alsa:` endpoints' ports, by name, with the kind each was made for.
    private var ports: [String: (kind: EndpointKind, sink: ALSAPortSink)] = [:]

    static func blocks(in configuration: RouteConfiguration) -> [(key: String, block: ALSADeclaration)] {
        guard let declaration = configuration.alsa, configuration.endpoints.contains(where: { $0.kind.isALSA }) else { return [] }
        return [("alsa", declaration)]
    }

    init(_ declaration: ALSADeclaration, in configuration: RouteConfiguration, context: PartContext) throws(PartFailure) {
        logger = context.logger
        do {
            client = try ALSAClient(clientName: declaration.client, logger: logger)
        } catch {
            // Said at the endpoint that asked for the sequencer, with what to do about it.
            let asker = configuration.firstALSAEndpoint.map { "\($0.location): \($0.name): " } ?? "\(declaration.location): "
            throw PartFailure(problem: "\(asker)\(error); \(ALSADeclaration.remedy(forErrno: -error.code))",
                              consequence: "the alsa endpoints stay silent until a reload")
        }
        updatePorts(configuration)
    }

    var endpoints: [String: RunningEndpoint] { ports.mapValues { RunningEndpoint(sink: $0.sink) } }

    /// Keeps the client (a new name is only said: it would change the client's number and connections) and the
    /// ports of the endpoints declared as they were; makes the others.
    func apply(_ declaration: ALSADeclaration, in configuration: RouteConfiguration) -> PartUpdate {
        if declaration.client != client.clientName {
            logger.warning("the ALSA client stays '\(client.clientName)' until jambridge restarts (the route files now say '\(declaration.client)')")
        }
        updatePorts(configuration)
        return .applied
    }

    /// Keeps the port of each `alsa:` endpoint still declared as it was and makes the others (one the sequencer
    /// refuses is logged and tried again at the next change). A port left out is removed when the engine stops it.
    private func updatePorts(_ configuration: RouteConfiguration) {
        ports = configuration.endpoints.reduce(into: [:]) { updated, declaration in
            guard declaration.kind.isALSA else { return }
            if let kept = ports[declaration.name], kept.kind == declaration.kind {
                updated[declaration.name] = kept
            } else if let port = client.makePort(for: declaration) {
                updated[declaration.name] = (declaration.kind, port)
            }
        }
    }

    /// Tells the client its endpoints' IDs, then starts it (the first time): it connects them to the matching ports
    /// there are now and follows devices as they come and go.
    func start(_ wiring: Wiring) {
        wiring.engine.queue.sync {
            for (name, port) in ports {
                if let id = wiring.ids[name] { client.register(port.sink, id: id) }
            }
        }
        client.start(sink: wiring.engine)
    }

    func report(into status: inout DaemonStatus) {
        status.alsa = client.report(ports.mapValues(\.sink.port))
    }

    /// Closes the sequencer, once the engine has stopped the ports.
    func stop() {
        client.stop()
    }
}

extension EndpointKind {
    /// True for the `alsa:` endpoints.
    var isALSA: Bool {
        switch self {
        case .alsaPorts, .alsaCreated: true
        default: false
        }
    }
}
