#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import Logging
import MIDI
import OSC
import RouteFile
import Routing
import RTPMIDI

/// The assembly: turns route files into running endpoints and an engine, and owns the
/// lifecycle -- start, reload on SIGHUP, clean stop on SIGINT/SIGTERM or after a set time.
public final class JamBridgeDaemon: @unchecked Sendable {
    /// How to run.
    public struct Options: Sendable {
        /// The route files, merged.
        public var files: [String]
        /// Print every delivered event.
        public var monitor: Bool
        /// Stop by itself after this many seconds (nil: run until a signal).
        public var stopAfter: Double?
        /// Options for running `files`.
        public init(files: [String], monitor: Bool = false, stopAfter: Double? = nil) {
            self.files = files
            self.monitor = monitor
            self.stopAfter = stopAfter
        }
    }

    /// One running endpoint; neither source nor sink when it could not start (its song did not load, its
    /// recording could not be created, its port was taken).
    private struct Running {
        var kind: EndpointKind
        var source: SourceEndpoint?
        var sink: SinkEndpoint?
        var isLive: Bool { source != nil || sink != nil }
    }

    private let options: Options
    private let logger: Logger
    private let control = DispatchQueue(label: "jambridge.control")
    private let stopRequested = DispatchSemaphore(value: 0)
    // Touched only on `control` (and in `run` before signals are armed / after they are cancelled).
    private var engine: Engine?
    private var ids: [String: EndpointID] = [:]
    private var names: [String] = []
    private var running: [EndpointID: Running] = [:]
    private var signalSources: [DispatchSourceSignal] = []
    /// The RTP-MIDI session, if a route file declares or uses one, and what it runs with.
    private var network: NetworkSession?
    private var networkSettings: SessionSettings?
    /// The ALSA sequencer client, once a route file has an `alsa:` endpoint.
    private var alsa: ALSAClient?
    /// The IDs MIDI from an OSC endpoint enters the router with: one per route from it (by endpoint name and
    /// route index), since each route's `osc:` block translates for that route alone.
    private var oscRouteIDs: [OSCRouteKey: EndpointID] = [:]
    /// Prints every delivered event and OSC message (`--monitor`).
    private var monitor: EventMonitor?
    /// While the first configuration starts: what could not be opened (a port taken, a song or a take that
    /// cannot be had), which makes `run` stop and fail. Nil afterwards: a reload logs and runs on.
    private var startFailures: [String]?

    /// A daemon for `options`, logging to `logger`.
    public init(options: Options, logger: Logger) {
        self.options = options
        self.logger = logger
    }

    /// Loads the route files, runs until stopped, then releases every note and writes the
    /// recordings. Throws the route files' errors if they do not load, and what could not be opened
    /// if something they ask for cannot be had at start (after stopping what did start).
    public func run() throws(DaemonError) -> RouterCounters {
        let configuration: RouteConfiguration
        do {
            configuration = try RouteConfiguration.load(files: options.files)
        } catch {
            throw .routeFiles(error)
        }
        let failures = control.sync {
            startFailures = []
            start(configuration)
            defer { startFailures = nil }
            if startFailures!.isEmpty { armSignals() }
            return startFailures!
        }
        guard failures.isEmpty else {
            _ = control.sync { shutdown() }
            throw .cannotStart(failures)
        }
        if let seconds = options.stopAfter {
            _ = stopRequested.wait(timeout: .now() + .nanoseconds(Int(seconds * 1e9)))
        } else {
            stopRequested.wait()
        }
        return control.sync { shutdown() }
    }

    /// Logs `problem`, something the route files ask for that cannot be had; at start it also makes `run` fail.
    private func failedToOpen(_ problem: String, _ consequence: String) {
        if startFailures != nil {
            startFailures!.append(problem)
            logger.error("\(problem)")
        } else {
            logger.error("\(problem); \(consequence)")
        }
    }

    /// Asks a running daemon to stop (as SIGTERM does).
    public func requestStop() { stopRequested.signal() }

    /// Reloads the route files (as SIGHUP does): on errors, logs them and keeps running as before.
    public func reload() {
        control.sync { reloadOnControlQueue() }
    }

    private func start(_ configuration: RouteConfiguration) {
        let monitor = options.monitor ? EventMonitor(start: MonotonicClock.now()) : nil
        self.monitor = monitor
        openSession(configuration)
        openALSA(configuration)
        // What cannot be opened stops the start here (`run` fails); ports first, so that no take is claimed for nothing.
        guard startFailures?.isEmpty ?? true else { return }
        let added = assign(configuration)
        guard startFailures?.isEmpty ?? true else { return }
        assignOSCRoutes(configuration)
        registerALSA(added)
        let engine = Engine(graph: graph(configuration), sinks: sinkTable(), names: names, monitor: monitor)
        self.engine = engine
        engine.queue.sync { configureOSC(configuration) }
        logger.info("jambridge running: \(counted(configuration.endpoints.count, "endpoint")), \(counted(configuration.routes.count, "route")) from \(options.files.joined(separator: ", "))")
        // ALSA first: its sinks pace their output on the engine's queue, which they learn here.
        alsa?.start(sink: engine)
        startSources(added, engine: engine)
        startSession(configuration, engine: engine)
    }

    /// Opens the ALSA sequencer client the first time a route file has an `alsa:` endpoint
    /// (its name cannot change while running: a reload that renames it says so).
    private func openALSA(_ configuration: RouteConfiguration) {
        let name = configuration.alsa?.client ?? ALSADeclaration.defaultClientName
        if let alsa {
            if alsa.clientName != name {
                logger.warning("the ALSA client stays '\(alsa.clientName)' until jambridge restarts (the route files now say '\(name)')")
            }
            return
        }
        guard configuration.endpoints.contains(where: { $0.kind.isALSA }) else { return }
        do {
            alsa = try ALSAClient(clientName: name, logger: logger)
        } catch {
            failedToOpen("\(error)", "the alsa endpoints stay silent until a reload")
        }
    }

    /// Hands the ALSA client the IDs of its new endpoints.
    private func registerALSA(_ added: [EndpointID]) {
        guard let alsa else { return }
        for id in added {
            if let port = running[id]?.sink as? ALSAPortSink { alsa.register(port, id: id) }
        }
    }

    /// Opens the session the configuration asks for (none, the same as now, or a new one);
    /// endpoints of the session that is replaced are made again by `assign`.
    private func openSession(_ configuration: RouteConfiguration) {
        var problems: [String] = []
        let settings = configuration.session.map {
            SessionSettings($0, peerGlobs: configuration.endpoints.compactMap {
                if case .peer(let glob) = $0.kind { glob } else { nil }
            }, problems: &problems)
        }
        for problem in problems { logger.error("\(problem)") }
        guard settings != networkSettings || (settings != nil && network == nil) else { return }
        if let network {
            network.stop()
            self.network = nil
            for (id, endpoint) in running where endpoint.kind.isNetworkSession { running[id] = nil }
        }
        networkSettings = settings
        guard let settings else { return }
        do {
            network = try NetworkSession(settings: settings, logger: logger)
        } catch {
            failedToOpen("\(configuration.session.map { "\($0.location): " } ?? "")session '\(settings.configuration.name)': \(error)",
                         "its endpoints stay silent until a reload")
        }
    }

    /// Starts a newly opened session and points the running one at the current endpoint IDs.
    private func startSession(_ configuration: RouteConfiguration, engine: Engine) {
        guard let network, let settings = networkSettings else { return }
        let routing = NetworkSession.Routing(
            session: configuration.endpoints.first { $0.kind == .session }.flatMap { ids[$0.name] },
            peers: configuration.endpoints.compactMap { declaration in
                guard case .peer(let glob) = declaration.kind, let id = ids[declaration.name] else { return nil }
                return (NameGlob(glob), id)
            })
        if network.isStarted {
            network.update(routing: routing)
            return
        }
        network.start(sink: engine, routing: routing)
        for (address, label) in settings.addresses { network.invite(address, label: label) }
    }

    /// Gives every declared endpoint an ID (kept by name across reloads while its kind is the
    /// same and it is running) and makes the new ones; returns the IDs made. An endpoint that
    /// could not start is made again, so a reload retries it.
    /// Endpoints no longer declared are left in `running` for the caller to stop.
    private func assign(_ configuration: RouteConfiguration) -> [EndpointID] {
        var added: [EndpointID] = []
        for declaration in configuration.endpoints {
            if let id = ids[declaration.name], let current = running[id], current.kind == declaration.kind, current.isLive {
                continue
            }
            let id = EndpointID(UInt16(truncatingIfNeeded: names.count))
            ids[declaration.name] = id
            names.append(declaration.name)
            running[id] = make(declaration, songs: configuration.songs)
            added.append(id)
        }
        return added
    }

    /// The running endpoint for `declaration`; a `file:` endpoint plays its song as the route files' loader
    /// read it (`songs`, by path), so a song is read once.
    private func make(_ declaration: EndpointDeclaration, songs: [String: TimedSong]) -> Running {
        switch declaration.kind {
        case .midiFile(let path, let loop):
            guard let song = songs[path] else {
                failedToOpen("\(declaration.location): \(declaration.name): the song \(path) was not read with the route files",
                             "this endpoint stays silent")
                return Running(kind: declaration.kind)
            }
            return Running(kind: declaration.kind,
                           source: MIDIFilePlayer(name: declaration.name, song: song, loop: loop, logger: logger))
        case .recorder(let path):
            do {
                return Running(kind: declaration.kind,
                               sink: try MIDIRecorder(name: declaration.name, requested: path, logger: logger))
            } catch {
                failedToOpen("\(declaration.location): \(declaration.name): cannot record: \(error)", "this endpoint stays silent")
                return Running(kind: declaration.kind)
            }
        case .alsaPorts, .alsaCreated:
            return Running(kind: declaration.kind, sink: alsa?.makePort(for: declaration))
        case .osc(let settings):
            do {
                let endpoint = try OSCEndpoint(name: declaration.name, settings: settings, logger: logger, monitor: monitor)
                return Running(kind: declaration.kind, source: endpoint, sink: OSCFeedbackSink(endpoint: endpoint))
            } catch {
                failedToOpen("\(declaration.location): \(declaration.name): \(error)", "this endpoint stays silent")
                return Running(kind: declaration.kind)
            }
        case .session, .peer:
            guard let network else { return Running(kind: declaration.kind) }
            let glob: NameGlob? = if case .peer(let pattern) = declaration.kind { NameGlob(pattern) } else { nil }
            return Running(kind: declaration.kind, sink: SessionSink(session: network, glob: glob))
        }
    }

    private func graph(_ configuration: RouteConfiguration) -> RouteGraph {
        RouteGraph(routes: configuration.compiledRoutes(endpointID: { ids[$0] ?? EndpointID(UInt16.max) },
                                                        sourceID: { oscRouteIDs[OSCRouteKey(endpoint: $0, route: $1)] }),
                   endpointCount: names.count)
    }

    /// Gives each route from an OSC endpoint its own source ID (kept while the endpoint and the route's
    /// place stay), named as the endpoint.
    private func assignOSCRoutes(_ configuration: RouteConfiguration) {
        let oscNames = Set(configuration.endpoints.filter(\.kind.isOSC).map(\.name))
        for (index, route) in configuration.routes.enumerated() {
            for name in route.from where oscNames.contains(name) {
                let key = OSCRouteKey(endpoint: name, route: index)
                guard oscRouteIDs[key] == nil else { continue }
                oscRouteIDs[key] = EndpointID(UInt16(truncatingIfNeeded: names.count))
                names.append(name)
            }
        }
    }

    /// Hands each OSC endpoint its routes' translations; on the engine's queue.
    private func configureOSC(_ configuration: RouteConfiguration) {
        for declaration in configuration.endpoints where declaration.kind.isOSC {
            guard let id = ids[declaration.name], let endpoint = running[id]?.source as? OSCEndpoint else { continue }
            var routes: [(id: EndpointID, mapping: OSCRouteMapping)] = []
            var feedback: [OSCRouteMapping] = []
            for (index, route) in configuration.routes.enumerated() {
                guard let mapping = route.osc else { continue }
                if let routeID = oscRouteIDs[OSCRouteKey(endpoint: declaration.name, route: index)] {
                    routes.append((routeID, mapping))
                }
                if route.from.contains(declaration.name) || route.to.contains(declaration.name) { feedback.append(mapping) }
            }
            endpoint.configure(routes: routes, feedback: feedback)
        }
    }

    private func sinkTable() -> [SinkEndpoint?] {
        (0..<names.count).map { running[EndpointID(UInt16($0))]?.sink }
    }

    private func startSources(_ added: [EndpointID], engine: Engine) {
        for id in added { running[id]?.source?.start(id: id, sink: engine) }
    }

    private func reloadOnControlQueue() {
        guard let engine else { return }
        let configuration: RouteConfiguration
        do {
            configuration = try RouteConfiguration.load(files: options.files)
        } catch {
            logger.error("reload failed; still running the previous routes:\n\(error)")
            return
        }
        openSession(configuration)
        openALSA(configuration)
        let before = running
        let added = assign(configuration)
        assignOSCRoutes(configuration)
        engine.queue.sync { registerALSA(added) }
        alsa?.start(sink: engine)
        let declaredNames = Set(configuration.endpoints.map(\.name))
        let removed = before.keys.filter { id in
            let name = names[Int(id.index)]
            return !declaredNames.contains(name) || ids[name] != id
        }
        for id in removed {
            before[id]?.source?.stop()
            running[id] = nil
        }
        engine.replace(graph: graph(configuration), sinks: sinkTable(), names: names,
                       stopping: removed.compactMap { before[$0]?.sink })
        engine.queue.sync { configureOSC(configuration) }
        startSources(added, engine: engine)
        startSession(configuration, engine: engine)
        logger.info("reloaded: \(counted(configuration.endpoints.count, "endpoint")), \(counted(configuration.routes.count, "route")) (\(added.count) started, \(removed.count) stopped)")
    }

    private func shutdown() -> RouterCounters {
        for signalSource in signalSources { signalSource.cancel() }
        signalSources = []
        // Programs started after this (the daemon may be embedded, as in the tests) get the defaults back.
        for number in [SIGINT, SIGTERM, SIGHUP] { signal(number, SIG_DFL) }
        for (_, endpoint) in running { endpoint.source?.stop() }
        network?.stop() // goodbye to the peers; their held notes are released downstream
        network = nil
        let counters = engine?.stop() ?? RouterCounters()
        engine = nil // a reload arriving after this finds nothing to reload
        alsa?.stop()
        alsa = nil
        logger.info("stopped: \(counters.delivered) messages delivered, \(counters.droppedByStages) filtered, \(counters.unmatchedReleases) unmatched releases, \(counters.heldTableFull) dropped for a full note table")
        return counters
    }

    private func armSignals() {
        // A monitor piped into `head` must not kill the daemon (and lose its recordings).
        signal(SIGPIPE, SIG_IGN)
        let handlers: [(Int32, @Sendable () -> Void)] = [
            (SIGINT, { [self] in logger.notice("SIGINT: stopping"); requestStop() }),
            (SIGTERM, { [self] in logger.notice("SIGTERM: stopping"); requestStop() }),
            (SIGHUP, { [self] in logger.notice("SIGHUP: reloading \(options.files.joined(separator: ", "))"); reloadOnControlQueue() }),
        ]
        for (number, handler) in handlers {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: control)
            source.setEventHandler(handler: handler)
            source.resume()
            signalSources.append(source)
        }
    }
}

/// Why `JamBridgeDaemon.run` did not run.
public enum DaemonError: Error, CustomStringConvertible {
    /// The route files have mistakes.
    case routeFiles(RouteFileErrors)
    /// Something they ask for could not be opened at start (each with its route-file location where known).
    case cannotStart([String])

    public var description: String {
        switch self {
        case .routeFiles(let errors): errors.description
        case .cannotStart(let problems): problems.joined(separator: "\n")
        }
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

    /// True for the `osc:` endpoints.
    var isOSC: Bool {
        if case .osc = self { true } else { false }
    }

    /// True for the endpoints that are views of the RTP-MIDI session.
    var isNetworkSession: Bool {
        switch self {
        case .session, .peer: true
        default: false
        }
    }
}

/// A route from an OSC endpoint: the endpoint's name and the route's place in the merged route files.
private struct OSCRouteKey: Hashable {
    var endpoint: String
    var route: Int
}
