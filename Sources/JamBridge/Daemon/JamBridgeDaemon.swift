#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Jam
import Logging
import MIDI
import RouteFile
import Routing

/// The daemon: loads the route files and has their parts run (`Assembly`), and owns the lifecycle -- start
/// (a reload from nothing), reload on SIGHUP, clean stop on SIGINT/SIGTERM or after a set time.
public final class JamBridgeDaemon: @unchecked Sendable {
    /// How to run.
    public struct Options: Sendable {
        /// The route files, merged.
        public var files: [String]
        /// Print every delivered event.
        public var monitor: Bool
        /// Stop by itself after this many seconds (nil: run until a signal).
        public var stopAfter: Double?
        /// Where the control socket listens (nil: `ControlPath.socket(pid:)`).
        public var control: String?
        /// Options for running `files`.
        public init(files: [String], monitor: Bool = false, stopAfter: Double? = nil, control: String? = nil) {
            self.files = files
            self.monitor = monitor
            self.stopAfter = stopAfter
            self.control = control
        }
    }

    private let options: Options
    private let logger: Logger
    /// systemd, when it started this daemon as a `Type=notify` service.
    private let serviceManager: ServiceNotifier
    private let control = DispatchQueue(label: "jambridge.control")
    private let stopRequested = DispatchSemaphore(value: 0)
    // Touched only on `control`.
    /// The running parts and their engine, from `start` until `stop`.
    private var assembly: Assembly?
    private var signalSources: [DispatchSourceSignal] = []
    /// Where `jambridge status|reload|start|stop|tempo|drums` reach this daemon.
    private var controlSocket: ControlSocket?
    /// The event loop of the control socket and the status page, from `start` until `stop`.
    private var servers: ServerLoop?

    /// A daemon for `options`, logging to `logger`.
    public init(options: Options, logger: Logger) {
        self.options = options
        self.logger = logger
        serviceManager = ServiceNotifier(logger: logger)
    }

    /// Loads the route files, runs until stopped, then releases every note and writes the
    /// recordings. Throws the route files' errors if they do not load, and what could not be opened
    /// if something they ask for cannot be had at start (after stopping what did start).
    public func run() throws(DaemonError) -> RouterCounters {
        try start()
        if let seconds = options.stopAfter {
            _ = stopRequested.wait(timeout: .now() + .nanoseconds(Int(seconds * 1e9)))
        } else {
            stopRequested.wait()
        }
        serviceManager.notify("STOPPING=1", "STATUS=stopping: releasing held notes, writing recordings")
        return stop()
    }

    /// Loads the route files and puts them in force from nothing, as a reload does, then answers the signals.
    /// Throws the route files' errors, or, after stopping what was made, what could not be opened.
    func start() throws(DaemonError) {
        let configuration: RouteConfiguration
        do {
            configuration = try RouteConfiguration.load(files: options.files)
        } catch {
            throw .routeFiles(error)
        }
        for note in configuration.notes { logger.notice("\(note)") }
        let failures = control.sync {
            let monitor = options.monitor ? EventMonitor(start: MonotonicClock.now()) : nil
            let servers = ServerLoop()
            self.servers = servers
            let assembly = Assembly(context: PartContext(logger: logger, monitor: monitor, daemon: access, servers: servers))
            self.assembly = assembly
            let failures = assembly.apply(configuration, starting: true).failures
            guard failures.isEmpty else { return failures }
            let running = "running: \(summary(of: configuration)) from \(options.files.joined(separator: ", "))"
            logger.info("jambridge \(running)")
            armSignals()
            openControlSocket(on: servers)
            serviceManager.notify("READY=1", "STATUS=\(running)")
            return []
        }
        guard failures.isEmpty else {
            _ = stop()
            throw .cannotStart(failures)
        }
    }

    /// Carries out a command to the jam or its drums, as if through `channel` (as `jambridge start|stop|tempo|drums`
    /// and OSC `/jambridge/...` do).
    public func perform(_ command: ControlCommand, from channel: CommandChannel) -> Result<String, JamRefusal> {
        control.sync { assembly?.perform(command, from: channel) ?? .failure(JamRefusal(reason: "jambridge is stopping")) }
    }

    /// The daemon as the control socket and the status page ask it: each answer is made on the control queue, after
    /// what is already there (a reload), and handed over there.
    private var access: DaemonAccess {
        DaemonAccess { [weak self] request, channel, reply in
            guard let self else { return reply(ControlReply(ok: false, message: "jambridge is stopping")) }
            control.async { reply(self.answerOnControlQueue(request, from: channel)) }
        }
    }

    /// Listens for `jambridge status|reload|start|stop|tempo|drums`; without the socket the daemon runs on (and says
    /// so).
    private func openControlSocket(on servers: ServerLoop) {
        let path = options.control ?? ControlPath.socket(pid: getpid())
        let unreachable = "'jambridge status', 'reload' and the jam's commands cannot reach this daemon (SIGHUP still reloads)"
        if options.control == nil {
            do {
                try ControlPath.prepare(ControlPath.directory)
            } catch {
                logger.error("\(error); \(unreachable)")
                return
            }
        }
        do {
            controlSocket = try ControlSocket(path: path, servers: servers, logger: logger, daemon: access)
            logger.info("control socket: \(path)")
        } catch {
            logger.warning("\(error); \(unreachable)")
        }
    }

    /// The answer to `request` from `channel`: the control socket, the status page or an OSC endpoint.
    private func answerOnControlQueue(_ request: ControlRequest, from channel: CommandChannel) -> ControlReply {
        let files = options.files.joined(separator: ", ")
        switch request {
        case .status:
            guard let status = reportOnControlQueue() else { return ControlReply(ok: false, message: "jambridge is stopping") }
            return ControlReply(ok: true, message: "jambridge \(getpid()) running \(files)", status: status)
        case .reload:
            logger.notice("control socket: reloading \(files)")
            switch reloadOnControlQueue() {
            case .stopping:
                return ControlReply(ok: false, message: "jambridge is stopping")
            case .refused(let errors):
                return ControlReply(ok: false, message: "\(files) not reloaded: the route files have mistakes; the previous routes run on",
                                    errors: errors.errors.map(\.description))
            case .reloaded(let outcome, let summary):
                let changes = outcome.started.isEmpty && outcome.stopped.isEmpty ? "nothing restarted"
                    : [("started", outcome.started), ("stopped", outcome.stopped)].filter { !$0.1.isEmpty }
                        .map { "\($0.0) \($0.1.joined(separator: ", "))" }.joined(separator: "; ")
                guard outcome.failures.isEmpty else {
                    return ControlReply(ok: false, message: "reloaded \(files) (\(summary); \(changes)), but some of it cannot be opened",
                                        reload: outcome, errors: outcome.failures)
                }
                return ControlReply(ok: true, message: "reloaded \(files): \(summary); \(changes)", reload: outcome)
            }
        case .command(let command):
            switch assembly?.perform(command, from: channel) ?? .failure(JamRefusal(reason: "jambridge is stopping")) {
            case .success(let message): return ControlReply(ok: true, message: message)
            case .failure(let refusal): return ControlReply(ok: false, message: refusal.reason)
            }
        }
    }

    /// Asks a running daemon to stop (as SIGTERM does).
    public func requestStop() { stopRequested.signal() }

    /// Reloads the route files (as SIGHUP does) and returns what changed; on errors, logs them, keeps running as
    /// before and returns nil.
    @discardableResult
    public func reload() -> ReloadOutcome? {
        guard case .reloaded(let outcome, _) = control.sync(execute: reloadOnControlQueue) else { return nil }
        return outcome
    }

    /// What the daemon is doing, part by part (`jambridge status`); nil once stopped.
    public func report() -> DaemonStatus? {
        control.sync(execute: reportOnControlQueue)
    }

    private func reportOnControlQueue() -> DaemonStatus? {
        guard let assembly else { return nil }
        var status = DaemonStatus(pid: getpid(), routeFiles: options.files)
        assembly.report(into: &status)
        return status
    }

    /// What `jambridge status` prints of `report()`: a line per part, then the endpoints' traffic.
    public func status() -> [String] {
        report()?.lines ?? []
    }

    /// What a reload did.
    private enum ReloadResult {
        /// The new routes run; `summary` counts their endpoints and routes.
        case reloaded(ReloadOutcome, summary: String)
        /// The route files have mistakes: the previous routes run on.
        case refused(RouteFileErrors)
        /// The daemon is stopping: nothing to reload.
        case stopping
    }

    /// `5 endpoints, 3 routes`.
    private func summary(of configuration: RouteConfiguration) -> String {
        "\(counted(configuration.endpoints.count, "endpoint")), \(counted(configuration.routes.count, "route"))"
    }

    private func reloadOnControlQueue() -> ReloadResult {
        guard let assembly else { return .stopping }
        serviceManager.notify("RELOADING=1", ServiceNotifier.monotonicMicroseconds())
        let configuration: RouteConfiguration
        do {
            configuration = try RouteConfiguration.load(files: options.files)
        } catch {
            logger.error("reload failed; still running the previous routes:\n\(error)")
            serviceManager.notify("READY=1", "STATUS=reload failed (see the log); running the previous routes")
            return .refused(error)
        }
        for note in configuration.notes { logger.notice("\(note)") }
        let outcome = assembly.apply(configuration, starting: false)
        let summary = summary(of: configuration)
        let reloaded = "reloaded: \(summary) (\(outcome.started.count) started, \(outcome.stopped.count) stopped)"
        logger.info("\(reloaded)")
        serviceManager.notify("READY=1", "STATUS=\(reloaded)")
        return .reloaded(ReloadOutcome(started: outcome.started, stopped: outcome.stopped, failures: outcome.failures), summary: summary)
    }

    /// Stops everything (every held note released, recordings written) and returns what the router counted.
    func stop() -> RouterCounters {
        control.sync {
            for signalSource in signalSources { signalSource.cancel() }
            signalSources = []
            controlSocket?.stop()
            controlSocket = nil
            // Programs started after this (the daemon may be embedded, as in the tests) get the defaults back.
            for number in [SIGINT, SIGTERM, SIGHUP] { signal(number, SIG_DFL) }
            let counters = assembly?.stop() ?? RouterCounters()
            assembly = nil // a reload arriving after this finds nothing to reload
            // Once the servers are stopped: answers still to be made are dropped.
            if servers?.shutDown() == false { logger.warning("the servers' event loop did not end within \(ServerLoop.waitLimit.nanoseconds / 1_000_000_000) s") }
            servers = nil
            // An unmatched release is a note-off (or pedal release) whose note-on never went through (a song's stray
            // note-off, a note-on a route filtered out): nothing to end, so nothing is sent.
            let unmatched = counters.unmatchedReleases == 1 ? "1 release of a note or pedal that was not on (not passed on)"
                : "\(counters.unmatchedReleases) releases of notes or pedals that were not on (not passed on)"
            logger.info("stopped: \(counters.delivered) messages delivered, \(counters.droppedByStages) filtered, \(unmatched), \(counters.heldTableFull) dropped for a full note table")
            return counters
        }
    }

    private func armSignals() {
        // A monitor piped into `head` must not kill the daemon (and lose its recordings).
        signal(SIGPIPE, SIG_IGN)
        let handlers: [(Int32, @Sendable () -> Void)] = [
            (SIGINT, { [self] in logger.notice("SIGINT: stopping"); requestStop() }),
            (SIGTERM, { [self] in logger.notice("SIGTERM: stopping"); requestStop() }),
            (SIGHUP, { [self] in logger.notice("SIGHUP: reloading \(options.files.joined(separator: ", "))"); _ = reloadOnControlQueue() }),
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

/// What a reload changed: the endpoints started (new, or changed and started again) and stopped (gone, or changed),
/// by name, and what could not be opened (with where the route files ask for it; the rest runs).
public struct ReloadOutcome: Codable, Equatable, Sendable {
    public var started: [String]
    public var stopped: [String]
    public var failures: [String] = []
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
