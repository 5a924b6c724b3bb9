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
        /// Options for running `files`.
        public init(files: [String], monitor: Bool = false, stopAfter: Double? = nil) {
            self.files = files
            self.monitor = monitor
            self.stopAfter = stopAfter
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
    /// Where `jambridge start|stop|tempo|status` reach this daemon.
    private var controlSocket: ControlSocket?

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
        let failures = control.sync {
            let monitor = options.monitor ? EventMonitor(start: MonotonicClock.now()) : nil
            let assembly = Assembly(context: PartContext(logger: logger, monitor: monitor))
            self.assembly = assembly
            let failures = assembly.apply(configuration, starting: true).failures
            guard failures.isEmpty else { return failures }
            let running = "running: \(counted(configuration.endpoints.count, "endpoint")), \(counted(configuration.routes.count, "route")) from \(options.files.joined(separator: ", "))"
            logger.info("jambridge \(running)")
            armSignals()
            openControlSocket()
            serviceManager.notify("READY=1", "STATUS=\(running)")
            return []
        }
        guard failures.isEmpty else {
            _ = stop()
            throw .cannotStart(failures)
        }
    }

    /// Carries out a command to the jam or its drums (as `jambridge start|stop|tempo|drums` and OSC `/jambridge/...` do).
    public func perform(_ command: ControlCommand) -> Result<String, JamRefusal> {
        control.sync { assembly?.perform(command) ?? .failure(JamRefusal(reason: "jambridge is stopping")) }
    }

    /// Listens for `jambridge start|stop|tempo|status`; without the socket the daemon runs on (and says so).
    private func openControlSocket() {
        do {
            controlSocket = try ControlSocket { [self] request in
                switch request {
                case .status:
                    return ControlReply(ok: true, message: "jambridge \(getpid()) running \(options.files.joined(separator: ", "))",
                                        lines: status())
                case .command(let command):
                    switch perform(command) {
                    case .success(let message): return ControlReply(ok: true, message: message)
                    case .failure(let refusal): return ControlReply(ok: false, message: refusal.reason)
                    }
                }
            }
        } catch {
            logger.warning("\(error); 'jambridge start', 'stop', 'tempo' and 'status' cannot reach this daemon")
        }
    }

    /// Asks a running daemon to stop (as SIGTERM does).
    public func requestStop() { stopRequested.signal() }

    /// Reloads the route files (as SIGHUP does) and returns what changed; on errors, logs them, keeps running as
    /// before and returns nil.
    @discardableResult
    public func reload() -> ReloadOutcome? {
        control.sync { reloadOnControlQueue() }
    }

    /// A line per running part (the session, the ALSA client, each OSC endpoint, song and recorder) saying what it
    /// is doing.
    public func status() -> [String] {
        control.sync { assembly?.status ?? [] }
    }

    private func reloadOnControlQueue() -> ReloadOutcome? {
        guard let assembly else { return nil }
        serviceManager.notify("RELOADING=1", ServiceNotifier.monotonicMicroseconds())
        let configuration: RouteConfiguration
        do {
            configuration = try RouteConfiguration.load(files: options.files)
        } catch {
            logger.error("reload failed; still running the previous routes:\n\(error)")
            serviceManager.notify("READY=1", "STATUS=reload failed (see the log); running the previous routes")
            return nil
        }
        let outcome = assembly.apply(configuration, starting: false)
        let reloaded = "reloaded: \(counted(configuration.endpoints.count, "endpoint")), \(counted(configuration.routes.count, "route")) (\(outcome.started.count) started, \(outcome.stopped.count) stopped)"
        logger.info("\(reloaded)")
        serviceManager.notify("READY=1", "STATUS=\(reloaded)")
        return ReloadOutcome(started: outcome.started, stopped: outcome.stopped)
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
            logger.info("stopped: \(counters.delivered) messages delivered, \(counters.droppedByStages) filtered, \(counters.unmatchedReleases) unmatched releases, \(counters.heldTableFull) dropped for a full note table")
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
/// by name.
public struct ReloadOutcome: Equatable, Sendable {
    public var started: [String]
    public var stopped: [String]
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
