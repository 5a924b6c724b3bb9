import Logging
import MIDI
import OSC
import RouteFile

/// An `osc:` endpoint (`OSCEndpoint`): its socket, and the translation of every route from or to it. Each route
/// from it enters the router under an ID of that route's own, since each route's `osc:` block translates for that
/// route alone.
final class OSCPart: Part {
    /// The longest `stop` waits for the port to be free. The reader thread closes it as it ends, after the batch it may
    /// be handing to the engine's queue, which an ALSA output waiting for room can hold for up to a second.
    static let stopLimit = Duration.seconds(2)

    private let name: String
    private let logger: Logger
    private let settings: OSCEndpointSettings
    private let endpoint: OSCEndpoint
    private let feedback: OSCFeedbackSink

    static func blocks(in configuration: RouteConfiguration) -> [(key: String, block: Declared<OSCEndpointSettings>)] {
        configuration.endpoints { if case .osc(let settings) = $0 { settings } else { nil } }
    }

    init(_ block: Declared<OSCEndpointSettings>, in configuration: RouteConfiguration, context: PartContext) throws(PartFailure) {
        name = block.declaration.name
        settings = block.settings
        logger = context.logger
        do {
            let daemon = context.daemon
            // Answered on the daemon's control queue, after the endpoint's batch: the part it is for carries it out (and logs it).
            endpoint = try OSCEndpoint(name: name, settings: settings, logger: context.logger, monitor: context.monitor,
                                       commands: { [name] command in daemon.answer(.command(command), .osc(name)) { _ in } })
        } catch {
            throw PartFailure(problem: "\(block.declaration.location): \(name): \(error)", consequence: "this endpoint stays silent")
        }
        feedback = OSCFeedbackSink(endpoint: endpoint)
    }

    var endpoints: [String: RunningEndpoint] {
        [name: RunningEndpoint(source: endpoint, sink: feedback, entersEachRoute: true)]
    }

    /// Runs on while its settings stay as they are; its routes' `osc:` blocks are taken in place by `start`.
    func apply(_ block: Declared<OSCEndpointSettings>, in configuration: RouteConfiguration) -> PartUpdate {
        block.settings == settings ? .applied : .replace
    }

    /// Hands the endpoint its routes' translations, under their IDs, and the feedback of every route from or to it.
    func start(_ wiring: Wiring) {
        var routes: [(id: EndpointID, mapping: OSCRouteMapping)] = []
        var feedbackMappings: [OSCRouteMapping] = []
        for (index, route) in wiring.configuration.allRoutes.enumerated() {
            guard let mapping = route.osc else { continue }
            if let id = wiring.routeIDs[name]?[index] { routes.append((id, mapping)) }
            if route.from.contains(name) || route.to.contains(name) { feedbackMappings.append(mapping) }
        }
        wiring.engine.queue.sync { endpoint.configure(routes: routes, feedback: feedbackMappings) }
    }

    func report(into status: inout DaemonStatus) {
        let (osc, dropped) = endpoint.report()
        status.osc[name] = osc
        status.endpoints[name, default: DaemonStatus.Traffic()].dropped = dropped
    }

    /// Returns once the port is free (the engine closed it when it stopped the endpoint's sink), so an endpoint
    /// made again can listen there; or after `stopLimit`, saying so (an endpoint made again there then fails to
    /// listen, and is tried again at the next reload).
    func stop() {
        guard !endpoint.waitUntilClosed(within: Self.stopLimit) else { return }
        logger.warning("\(name): OSC port \(endpoint.settings.listenPort) still open after \(Self.stopLimit.components.seconds) s (its reader waits for the engine); it closes when the engine lets it")
    }
}
