import ArgumentParser
import CLinux
import Dispatch
import DrumKits
import Drums
#if canImport(Glibc)
import Glibc
#endif
import JamBridge
import JSON
import Logging
import RouteFile

/// `jambridge`: bridges MIDI hardware, network sessions and OSC into a jam, by route files.
@main
struct JamBridgeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jambridge",
        abstract: "Route MIDI between devices, files and network sessions, by route files.",
        discussion: "See jambridge(1) and jambridge-routes(5) in man/.",
        version: "jambridge 0.1.0",
        subcommands: [Run.self, Check.self, Ports.self, Peers.self, Status.self, Reload.self, Start.self, Stop.self, Tempo.self, Drums.self,
                      Render.self, Styles.self]
    )
}

/// Options every command takes.
struct GlobalOptions: ParsableArguments {
    @Option(help: "Log level: trace, debug, info, notice, warning, error or critical.")
    var logLevel: Logger.Level = .info

    /// Sends log lines at `logLevel` and above to standard error: timestamped, or as the journal reads them when
    /// standard error is the journal (under systemd).
    func bootstrapLogging() -> Logger {
        let level = logLevel
        let journal = JournalLogHandler.standardErrorIsJournal
        LoggingSystem.bootstrap { label in
            var handler: any LogHandler = journal ? JournalLogHandler() : StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        return Logger(label: "jambridge")
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}

/// Prints route-file errors, one `file:line:column: message` per line, to standard error (as errors, for the journal).
func report(_ errors: RouteFileErrors) {
    var standardError = StandardError()
    if JournalLogHandler.standardErrorIsJournal {
        print(JournalLogHandler.lines(errors.description, level: .error), terminator: "", to: &standardError)
    } else {
        print(errors.description, to: &standardError)
    }
}

/// Prints notes about route files, one `file:line:column: note: message` per line, to standard error (as notices,
/// for the journal).
func report(_ notes: [RouteFileNote]) {
    guard !notes.isEmpty else { return }
    var standardError = StandardError()
    let text = notes.map(\.description).joined(separator: "\n")
    if JournalLogHandler.standardErrorIsJournal {
        print(JournalLogHandler.lines(text, level: .notice), terminator: "", to: &standardError)
    } else {
        print(text, to: &standardError)
    }
}

/// Standard error as a `TextOutputStream`.
struct StandardError: TextOutputStream {
    mutating func write(_ string: String) {
        FileHandleOutput.standardError(string)
    }
}

/// `jambridge run ROUTES...`: run until SIGINT/SIGTERM (or --stop-after), reload on SIGHUP.
struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the routes in ROUTES (merged) until stopped.",
        discussion: "SIGINT and SIGTERM stop cleanly: every held note is released, then recordings are written. SIGHUP (or 'jambridge reload') reloads the route files."
    )

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Print every event as it reaches a sink, aseqdump-style, and OSC in and out.")
    var monitor = false

    @Option(help: "Stop by itself after this many seconds.")
    var stopAfter: Double?

    @Option(help: ArgumentHelp("Listen for 'jambridge status', 'reload' and the jam's commands at this Unix socket (default: control-PID.sock in $RUNTIME_DIRECTORY if set, else /run/jambridge for root, else $XDG_RUNTIME_DIR/jambridge or /tmp/jambridge-UID).", valueName: "path"))
    var control: String?

    @Argument(help: "Route files (YAML).")
    var routes: [String]

    func validate() throws {
        guard !routes.isEmpty else { throw ValidationError("give at least one route file") }
        if let stopAfter, !(stopAfter > 0 && stopAfter.isFinite) {
            throw ValidationError("--stop-after takes a positive number of seconds")
        }
    }

    func run() throws {
        let logger = global.bootstrapLogging()
        // Before any thread starts: 2 MB huge pages would only inflate a daemon whose memory is a few MB.
        if jambridge_disable_transparent_huge_pages() != 0 {
            logger.debug("transparent huge pages stay on: \(String(cString: strerror(errno)))")
        }
        let daemon = JamBridgeDaemon(options: .init(files: routes, monitor: monitor, stopAfter: stopAfter, control: control), logger: logger)
        do {
            _ = try daemon.run()
        } catch .routeFiles(let errors) {
            report(errors)
            throw ExitCode(1)
        } catch .cannotStart {
            // Each problem was logged as it happened, and the closing line says jambridge did not start.
            logger.critical("jambridge did not start: what the route files ask for cannot be opened")
            throw ExitCode(2)
        }
    }
}

/// `jambridge check ROUTES...`: validate without touching any device, reading the songs and checking where recordings go.
struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check route files and report every mistake as file:line:column: message.",
        discussion: "Touches no device and writes no file; reads each song (file:) and checks that each recording (record:) can be created. Exits 1 if any file has errors."
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "Route files (YAML), checked together as `run` would merge them.")
    var routes: [String]

    func validate() throws {
        guard !routes.isEmpty else { throw ValidationError("give at least one route file") }
    }

    func run() throws {
        _ = global.bootstrapLogging()
        do {
            let configuration = try RouteConfiguration.load(files: routes, checkingOnly: true)
            for file in configuration.files {
                print("\(file.file): ok (\(counted(file.endpoints, "endpoint")), \(counted(file.routes, "route")))")
            }
            report(configuration.notes)
        } catch {
            report(error)
            throw ExitCode(1)
        }
    }
}

/// `jambridge ports`: the ALSA sequencer's ports, then what `peers` lists.
struct Ports: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List ALSA sequencer ports and RTP-MIDI sessions, in a form to paste into a route file.",
        discussion: "Each ALSA port is printed as an 'alsa:' endpoint value (\"CLIENT:PORT\"); sessions and peers as 'jambridge peers' prints them."
    )

    @OptionGroup var global: GlobalOptions

    @Option(help: "How long to listen for Bonjour announcements, in seconds.")
    var browse: Double = 1

    func validate() throws { try checkBrowse(browse) }

    func run() throws {
        _ = global.bootstrapLogging()
        var standardError = StandardError()
        switch PortListing.alsaReport() {
        case .success(let text): print(text, terminator: "")
        case .failure(let error):
            print("jambridge ports: \(error)", to: &standardError)
            print("# ALSA sequencer ports\n# not available")
        }
        printPeerListing(browseSeconds: browse, command: "ports")
    }
}

/// `jambridge peers`: sessions announced on the network, and this machine's sessions with their peers.
struct Peers: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List RTP-MIDI sessions announced on the network and the peers of running jambridge sessions.",
        discussion: "Names are printed in double quotes, as 'invite:' and 'peer:' in a route file take them. Bonjour needs a running avahi-daemon; without one only this machine's sessions are listed."
    )

    @OptionGroup var global: GlobalOptions

    @Option(help: "How long to listen for Bonjour announcements, in seconds.")
    var browse: Double = 2

    func validate() throws { try checkBrowse(browse) }

    func run() throws {
        _ = global.bootstrapLogging()
        printPeerListing(browseSeconds: browse, command: "peers")
    }
}

/// `--browse` takes 0 to 60 seconds.
private func checkBrowse(_ seconds: Double) throws {
    guard seconds >= 0, seconds.isFinite, seconds <= 60 else { throw ValidationError("--browse takes 0 to 60 seconds") }
}

/// Prints what `jambridge peers` lists, browsing Bonjour for `seconds`; warnings go to standard error as `command`'s.
private func printPeerListing(browseSeconds seconds: Double, command: String) {
    let (text, warnings) = PeerListing.report(browseSeconds: seconds)
    var standardError = StandardError()
    for warning in warnings { print("jambridge \(command): \(warning)", to: &standardError) }
    print(text, terminator: "")
}

/// `jambridge status [--json] [--watch]`: what the running daemon is doing.
struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show what the running jambridge is doing: peers, ports, OSC controllers, the jam, the drums, counters.",
        discussion: "--json prints the status as one JSON object (see jambridge(1)); --watch shows it again every second, in place on a terminal (elsewhere one after another, a blank line between), until Ctrl-C (with --json, one object a line).")
    @Flag(help: "Print the status as JSON, for scripts.") var json = false
    @Flag(help: "Show the status again every second, in place, until Ctrl-C.") var watch = false
    @OptionGroup var daemon: DaemonOptions

    func run() throws {
        guard watch else {
            print(text(try daemon.send(.status, command: "status"), pretty: true))
            return
        }
        // Ctrl-C ends it (even where the shell had SIGINT ignored, as for a background job), below the last frame.
        signal(SIGINT, SIG_IGN)
        let interrupted = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        interrupted.setEventHandler {
            FileHandleOutput.standardOutput("\n")
            Glibc.exit(0)
        }
        interrupted.resume()
        let terminal = isatty(STDOUT_FILENO) == 1
        while true {
            var frame: String
            do {
                let reply = try ControlClient.send(.status, to: try daemon.socket())
                frame = reply.ok ? text(reply, pretty: false) : "jambridge status: \(reply.message)"
            } catch {
                frame = "jambridge status: \(error)"
            }
            // On a terminal: home, each line cleared to its end, then the rest of the screen: a redraw without flicker.
            // Elsewhere (a pipe, a file): one frame after another, a blank line between them.
            if !json && terminal {
                frame = "\u{1B}[H" + frame.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\u{1B}[K\n") + "\u{1B}[K\u{1B}[J"
            }
            FileHandleOutput.standardOutput(frame + (json ? "\n" : terminal ? "" : "\n\n"))
            sleep(1)
        }
    }

    /// The reply as `jambridge status` prints it: its message and the status's lines, or the status as JSON.
    private func text(_ reply: ControlReply, pretty: Bool) -> String {
        guard let status = reply.status else { return reply.message }
        guard json else { return ([reply.message] + status.lines).joined(separator: "\n") }
        return String(decoding: (try? JSONWriter.status().bytes(status, pretty: pretty)) ?? [], as: UTF8.self)
    }
}

/// `jambridge reload`: the running daemon reloads its route files, as on SIGHUP, and says what changed.
struct Reload: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Reload the running jambridge's route files (as SIGHUP does) and say what changed.",
        discussion: "Endpoints declared as they were keep running; what changed starts again. If the files have mistakes, they are printed as file:line:column: message, the running routes stay and the exit status is 1.")
    @OptionGroup var daemon: DaemonOptions
    func run() throws { try daemon.perform(.reload, command: "reload") }
}

/// `jambridge start`: the running daemon starts the rhythm, if the clock election lets it lead.
struct Start: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start the jam's rhythm from the running jambridge (it becomes clock master if no one leads).")
    @OptionGroup var daemon: DaemonOptions
    func run() throws { try daemon.perform(.command(.jam(.start)), command: "start") }
}

/// `jambridge stop`: the running daemon stops the rhythm it leads.
struct Stop: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Stop the rhythm the running jambridge leads.")
    @OptionGroup var daemon: DaemonOptions
    func run() throws { try daemon.perform(.command(.jam(.stop)), command: "stop") }
}

/// `jambridge tempo BPM`: the running daemon's clock tempo.
struct Tempo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Set the tempo of the running jambridge's clock (from the next beat while it runs).")
    @Argument(help: "Beats a minute, 20-300.")
    var bpm: Double
    @OptionGroup var daemon: DaemonOptions
    func run() throws { try daemon.perform(.command(.jam(.tempo(bpm))), command: "tempo") }
}

/// `jambridge drums style|level|mute|unmute ...`: the running daemon's drum sequencer.
struct Drums: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Change the running jambridge's drums: style, level, muted voices.",
        discussion: "style NAME|PATH: a built-in style (rock, funk, bossa, six-eight) or a style file, from the next bar line. level N|follow: keep level N, or follow the session's activity. mute VOICE...|unmute VOICE...: silence voices or hear them again.")
    @Argument(help: "style, level, mute or unmute.")
    var action: String
    @Argument(help: "The style, the level, or the voices.")
    var values: [String]
    @OptionGroup var daemon: DaemonOptions

    func validate() throws {
        guard ["style", "level", "mute", "unmute"].contains(action) else {
            throw ValidationError("'\(action)' is not a drums command: style, level, mute or unmute")
        }
        guard !values.isEmpty, action == "mute" || action == "unmute" || values.count == 1 else {
            throw ValidationError(action == "style" ? "give one style" : action == "level" ? "give one level, or 'follow'" : "give the voices")
        }
        if action == "level", values[0] != "follow", Int(values[0]).map({ $0 >= 1 }) != true {
            throw ValidationError("the level is a number from 1, or 'follow'")
        }
    }

    func run() throws {
        let command: DrumsCommand
        switch action {
        case "style": command = .style(StyleFile.isPath(values[0]) ? absolute(values[0]) : values[0])
        case "level": command = .level(Int(values[0]))
        default: command = .mute(values, action == "mute")
        }
        try daemon.perform(.command(.drums(command)), command: "drums \(action)")
    }

    /// `path` made absolute against the working directory, for the daemon, which runs elsewhere.
    private func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FilePaths.currentDirectory() + "/" + path
    }
}

/// `jambridge render ROUTES... --bars N --activity CURVE --out FILE.wav`: the drums, offline.
struct Render: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Render the route files' drums to a WAV file, offline, with the daemon's sequencer and mixer.",
        discussion: "The activity CURVE is N (0-127 throughout), A-B (from A to B along the render) or BAR:VALUE,BAR:VALUE,... (straight lines between the points). The tempo is the clock block's unless --tempo says otherwise.")

    @OptionGroup var global: GlobalOptions
    @Option(help: "Bars to render.") var bars: Int = 8
    @Option(help: "The session's total activity along the render.") var activity: String = "0"
    @Option(help: "Beats a minute (default: the route files' clock tempo).") var tempo: Double?
    @Option(help: "The WAV file to write (48 kHz stereo).") var out: String
    @Option(help: ArgumentHelp("The WAV's samples: 16 or 24 (bit integer PCM, which every tool reads) or float (32-bit, exact, which Python's wave cannot read).", valueName: "16|24|float"))
    var format: SoundFile.WAVEncoding = .pcm24
    @Argument(help: "Route files (YAML) with a 'drums' block.") var routes: [String]

    func validate() throws {
        guard !routes.isEmpty else { throw ValidationError("give at least one route file") }
        guard (1...10_000).contains(bars) else { throw ValidationError("--bars takes 1-10000") }
        guard ActivityCurve(activity) != nil else {
            throw ValidationError("--activity is N (0-127), A-B (a ramp) or BAR:VALUE,BAR:VALUE,... , not '\(activity)'")
        }
        if let tempo, !(20...300).contains(tempo) { throw ValidationError("--tempo takes 20-300 beats a minute") }
    }

    func run() throws {
        _ = global.bootstrapLogging()
        let configuration: RouteConfiguration
        do {
            configuration = try RouteConfiguration.load(files: routes)
        } catch {
            report(error)
            throw ExitCode(1)
        }
        guard let drums = configuration.drums else {
            throw renderFailure("the route files have no 'drums' block: nothing to render")
        }
        let styleFile = StyleFile.isPath(drums.styleName) ? [drums.styleName] : []
        let kitPath: [String] = if case .path(let path) = drums.kit { [path] } else { [] }
        if let input = file(among: routes + styleFile + kitPath + configuration.songs.keys.sorted(), sameAs: out) {
            throw renderFailure("--out '\(out)' is '\(input)', which the render reads: write the WAV to another file")
        }
        let kit: LoadedKit
        do {
            kit = try loadKit(of: drums)
        } catch {
            throw renderFailure("\(error)")
        }
        var standardError = StandardError()
        for warning in kit.warnings { print("jambridge render: \(warning)", to: &standardError) }
        let bpm = tempo ?? configuration.jam?.tempo ?? 120
        let clock = ContinuousClock()
        let started = clock.now
        let result: DrumRender.Result
        do {
            result = try renderDrums(drums, kit: kit.kit, tempo: bpm, bars: bars, activity: ActivityCurve(activity)!, to: out, encoding: format)
        } catch {
            throw renderFailure("\(error)")
        }
        let elapsed = started.duration(to: clock.now)
        let seconds = Double(result.frames) / Double(Kit.sampleRate)
        let took = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let shown = (0..<bars).map { result.levels[$0].map(String.init) ?? "-" }.joined(separator: " ")
        print("\(out) (\(format.name) WAV, 48 kHz stereo): \(bars) bars of \(drums.style.name) at \(bpm) BPM on \(kit.kit.name == "built-in" ? "the built-in kit" : "the kit '\(kit.kit.name)'"), \(seconds.decimal(1)) s, "
              + "\(result.hits) hits (\((seconds / max(took, 1e-6)).decimal(0))x real time); levels by bar: \(shown)")
    }
}

/// Says what stops `render` on standard error, as every command does; the exit status to throw.
private func renderFailure(_ problem: String) -> ExitCode {
    var standardError = StandardError()
    print("jambridge render: \(problem)", to: &standardError)
    return ExitCode(1)
}

extension SoundFile.WAVEncoding: ExpressibleByArgument {
    /// `24-bit PCM`, `32-bit float`: as `render` says what it wrote.
    var name: String { self == .float ? "32-bit float" : "\(rawValue)-bit PCM" }
}

/// `jambridge styles [NAME]`: the built-in drum styles, or one's style file to start a style of your own from.
struct Styles: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the built-in drum styles, or print one as a style file to start your own from.")
    @Argument(help: "A built-in style's name.") var name: String?

    func run() throws {
        guard let name else {
            for name in BuiltinStyles.names {
                let style = BuiltinStyles.style(name)!
                print("\(name): \(style.time), \(style.levels) levels, \(style.groove.bars)-bar groove, "
                      + "fill every \(style.phrase) bars, voices \(style.voices.sorted().map(\.rawValue).joined(separator: " "))")
            }
            return
        }
        guard let text = BuiltinStyles.text(of: name) else {
            var standardError = StandardError()
            print("jambridge styles: no built-in style '\(name)'; they are \(BuiltinStyles.names.joined(separator: ", "))", to: &standardError)
            throw ExitCode(1)
        }
        print(text)
    }
}
