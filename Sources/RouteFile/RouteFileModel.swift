#if canImport(Glibc)
import Glibc
#endif
import Jam
import MIDI
import OSC
import Routing

/// What an endpoint declared in a route file is.
public enum EndpointKind: Hashable, Sendable {
    /// A Standard MIDI File played in time (`file:`); a source only. `path` is absolute.
    case midiFile(path: String, loop: Bool)
    /// A recorder (`record:`) writing what reaches it as a Standard MIDI File, at `path` or the first free
    /// numbered name beside it; a sink only.
    case recorder(path: String)
    /// The RTP-MIDI session (the reserved name `session`): every peer merged; sends and receives.
    case session
    /// The session peers whose names match `glob` (`peer:`); sends and receives.
    case peer(glob: String)
    /// Existing ALSA sequencer ports (`alsa: "CLIENT"` or `alsa: "CLIENT:PORT"`), followed across hot-plug;
    /// `client` is a client name glob. Sends and receives.
    case alsaPorts(client: String, port: ALSAPortPattern)
    /// An ALSA sequencer port jambridge creates on its own client (`alsa: { create: NAME }`); sends and receives.
    case alsaCreated(name: String)
    /// OSC controllers sending to a UDP port (`osc: { listen: PORT, ... }`); sends what they send, receives
    /// MIDI as feedback for them.
    case osc(OSCEndpointSettings)
    /// The drum sequencer's notes (the name `drums`, there when the `drums:` block is); a source only.
    case drums
    /// The jam (the name `jam`, there when a `clock:`, `activity:` or `drums:` block is): routes cannot name it;
    /// it hears every source's clock, transport and activity levels, and sends to the session and the clock's
    /// `to:` endpoints, through routes of its own (`RouteConfiguration.jamRoutes`).
    case jam

    /// True for an OSC endpoint.
    var isOSC: Bool {
        if case .osc = self { return true }
        return false
    }

    /// True if the endpoint can be a route's `from`.
    public var canSend: Bool {
        switch self {
        case .midiFile, .session, .peer, .alsaPorts, .alsaCreated, .osc, .drums: true
        case .recorder, .jam: false
        }
    }

    /// True if the endpoint can be a route's `to`.
    public var canReceive: Bool {
        switch self {
        case .midiFile, .drums, .jam: false
        case .recorder, .session, .peer, .alsaPorts, .alsaCreated, .osc: true
        }
    }
}

/// One named endpoint from a route file's `endpoints:` mapping.
public struct EndpointDeclaration: Sendable {
    /// The endpoint's name, unique across all loaded route files.
    public var name: String
    /// What the endpoint is.
    public var kind: EndpointKind
    /// Where the name is written.
    public var location: SourceLocation
    /// True if routes may read from it (`from:`).
    public var canSend: Bool
    /// True if routes may write to it (`to:`).
    public var canReceive: Bool

    /// An endpoint called `name` of `kind`, declared at `location`.
    public init(name: String, kind: EndpointKind, location: SourceLocation) {
        self.name = name
        self.kind = kind
        self.location = location
        self.canSend = kind.canSend
        self.canReceive = kind.canReceive
    }
}

/// One entry of a route file's `routes:` list: sources, stages in their fixed order, sinks.
public struct RouteDeclaration: Sendable {
    /// Names of the endpoints whose messages enter the route (merged).
    public var from: [String]
    /// Names of the endpoints that receive what leaves the route (fan-out).
    public var to: [String]
    /// The stages, in the fixed order jambridge-routes(5) documents.
    public var stages: [any RouteStage]
    /// How the OSC endpoints at the route's ends translate: the `osc:` block, the MIDI-over-OSC family alone when
    /// the route has an OSC endpoint but no block; nil when it has no OSC endpoint.
    public var osc: OSCRouteMapping?
    /// `echo: true`: a player of a shared endpoint (a session peer, an ALSA port) also receives what it sent
    /// when the route delivers back to that endpoint. False by default: everyone but the sender does.
    public var echo: Bool
    /// `control: true`: the jam's activity level and total controllers pass (by default a route leaves them out).
    public var control: Bool
    /// Where the route's list entry starts.
    public var location: SourceLocation

    /// A route from `from` to `to` through `stages`, translating OSC by `osc`, declared at `location`.
    public init(from: [String], to: [String], stages: [any RouteStage], osc: OSCRouteMapping? = nil,
                echo: Bool = false, control: Bool = false, location: SourceLocation) {
        self.control = control
        self.from = from
        self.to = to
        self.stages = stages
        self.osc = osc
        self.echo = echo
        self.location = location
    }
}

/// Everything declared in one or more route files, checked and merged.
public struct RouteConfiguration: Sendable {
    /// Endpoints in declaration order, file after file.
    public var endpoints: [EndpointDeclaration]
    /// Routes in declaration order, file after file.
    public var routes: [RouteDeclaration]
    /// The RTP-MIDI session, or nil if no route file declares or uses one.
    public var session: SessionDeclaration?
    /// jambridge's ALSA sequencer client, or nil if no route file declares it (`alsa:`) or has an `alsa:` endpoint.
    public var alsa: ALSADeclaration?
    /// The songs the `file:` endpoints play, by path, as `load` read them (none after `parse`, which reads no file).
    public var songs: [String: TimedSong]
    /// The jam (`clock:`, `activity:`), or nil if no route file has either block.
    public var jam: JamDeclaration?
    /// The drum sequencer (`drums:`): it plays in the jam, so it also turns the jam on.
    public var drums: DrumsDeclaration?
    /// The live status page (`http:`), or nil if no route file turns it on.
    public var http: HTTPDeclaration?
    /// What `load` found worth saying that is not a mistake, file after file (none after `parse`).
    public var notes: [RouteFileNote] = []
    /// Each route file loaded, once, in the order given, with what it declares itself (`RouteFileSummary`).
    public var files: [RouteFileSummary] = []

    /// A configuration holding `endpoints`, `routes`, `session`, `alsa` and `songs` as given.
    public init(endpoints: [EndpointDeclaration], routes: [RouteDeclaration], session: SessionDeclaration? = nil,
                alsa: ALSADeclaration? = nil, songs: [String: TimedSong] = [:], jam: JamDeclaration? = nil) {
        self.jam = jam
        self.endpoints = endpoints
        self.routes = routes
        self.session = session
        self.alsa = alsa
        self.songs = songs
    }

    /// Reads and merges the route files at `files`; endpoint names must be unique across them, and a file given twice
    /// (by any path) is read once, with a note. The songs (`file:`) are read and must be Standard MIDI Files, each
    /// recording's (`record:`) directory must be writable, and the drums' kit must load (up to its samples' headers):
    /// what `jambridge check` and `run` report as mistakes at the path. `checkingOnly` (`jambridge check`): a
    /// recording's directory this user may not write in, and an ALSA sequencer this machine does not have, are notes.
    public static func load(files: [String], checkingOnly: Bool = false) throws(RouteFileErrors) -> RouteConfiguration {
        var documents: [RouteFileDocument] = []
        documents.reserveCapacity(files.count)
        var notes: [RouteFileNote] = []
        var read: [String: String] = [:]
        for file in files {
            let identity = realpath(file, nil).map { resolved in
                defer { free(resolved) }
                return String(cString: resolved)
            } ?? file
            if let first = read[identity] {
                notes.append(RouteFileNote(location: nil, message: first == file ? "\(file) is given twice; it is read once"
                                            : "\(file) and \(first) are the same file; it is read once"))
                continue
            }
            read[identity] = file
            documents.append(RouteFileDocument(readingFile: file, checkingOnly: checkingOnly))
        }
        var configuration = try merge(documents)
        configuration.drums?.styleFolders = StyleFile.folders(ofRouteFiles: documents.map(\.file))
        if checkingOnly, let firstUse = configuration.firstALSAEndpoint, let problem = ALSADeclaration.sequencerProblem() {
            notes.append(RouteFileNote(location: firstUse.location, message:
                "\(firstUse.name): \(problem.problem), so 'jambridge run' would stop here; \(problem.fix)"))
        }
        // The command line's notes first, then file by file, by position.
        let order = documents.map(\.file)
        configuration.notes = (notes + configuration.notes).enumerated().sorted { a, b in
            let key = { (note: RouteFileNote, index: Int) in
                note.location.map { (order.firstIndex(of: $0.file) ?? order.count, $0.line, $0.column, index) } ?? (-1, 0, 0, index)
            }
            return key(a.element, a.offset) < key(b.element, b.offset)
        }.map(\.element)
        return configuration
    }

    /// Parses `yaml` as the route file `file` (used for messages and to resolve relative paths); reads no
    /// file, so songs and recording paths are not checked.
    public static func parse(yaml: String, file: String) throws(RouteFileErrors) -> RouteConfiguration {
        try merge([RouteFileDocument(yaml: yaml, file: file)])
    }

    /// The routes as the router runs them, the route files' and then the jam's (`allRoutes`), with endpoint names
    /// turned into IDs by `endpointID`; a source for which `sourceID` gives an ID (by name and index in
    /// `allRoutes`: an OSC endpoint's route, the jam's) enters under that one. With a jam, the route files' routes
    /// carry no clock and transport (the jam's alone) and, without `control: true`, first drop the activity level and
    /// total controllers.
    public func compiledRoutes(endpointID: (String) -> EndpointID,
                               sourceID: (_ name: String, _ route: Int) -> EndpointID? = { _, _ in nil }) -> [CompiledRoute] {
        allRoutes.enumerated().map { index, route in
            var sources = route.from.map { sourceID($0, index) ?? endpointID($0) }
            if index == routes.count, jam != nil {
                // An OSC endpoint's MIDI is what each route's `osc:` block makes of it, under that route's ID: the jam
                // hears it there.
                for (other, declared) in routes.enumerated() {
                    for name in declared.from where endpoints.contains(where: { $0.name == name && $0.kind.isOSC }) {
                        if let id = sourceID(name, other) { sources.append(id) }
                    }
                }
            }
            return CompiledRoute(sources: sources, sinks: route.to.map(endpointID),
                          stages: (index < routes.count ? controlStage(for: route) : []) + route.stages, echo: route.echo,
                          countsDrops: index < routes.count, carriesClockAndTransport: jam == nil || index >= routes.count)
        }
    }

    /// The first `alsa:` endpoint, which asks for the ALSA sequencer; nil if there is none.
    public var firstALSAEndpoint: EndpointDeclaration? {
        endpoints.first { declaration in
            switch declaration.kind {
            case .alsaPorts, .alsaCreated: true
            default: false
            }
        }
    }

    /// The route files' routes, then the jam's.
    public var allRoutes: [RouteDeclaration] { routes + jamRoutes }

    /// The jam's routes, after the route files' (none without a jam): into `jam` from every endpoint that sends but
    /// the `peer:` endpoints (the `session` endpoint brings every peer once), the drums and OSC endpoints (heard on
    /// the routes their `osc:` blocks translate for, `compiledRoutes`), its clock, transport and activity controllers; out of it, one route to the session and one to each clock output, each of which the
    /// jam enters under an ID of that route's own, so that it picks where each message goes.
    public var jamRoutes: [RouteDeclaration] {
        guard let jam else { return [] }
        let name = JamDeclaration.endpointName
        let activity = jam.activity
        let heard = endpoints.filter { declaration in
            switch declaration.kind {
            case .peer, .drums, .jam, .osc: false // an OSC endpoint is heard on its routes (`compiledRoutes`)
            default: declaration.kind.canSend
            }
        }
        let into = RouteDeclaration(from: heard.map(\.name), to: [name],
                                    stages: [JamInputFilter((activity.player.channel, activity.player.controller),
                                                            (activity.total.channel, activity.total.controller))],
                                    control: true, location: jam.location)
        let session = endpoints.contains { $0.kind == .session } ? [RouteFileVocabulary.sessionEndpointName] : []
        let out = (session + jam.clockOutputs).map {
            RouteDeclaration(from: [name], to: [$0], stages: [], echo: true, control: true, location: jam.location)
        }
        let drums = drums.map {
            RouteDeclaration(from: [name], to: [DrumsDeclaration.endpointName], stages: [TransportFilter()], echo: true,
                             control: true, location: $0.location)
        }
        return [into] + out + (drums.map { [$0] } ?? [])
    }

    /// The stage that keeps the jam's controllers off a route file's route, unless it asks for them or there is no jam.
    private func controlStage(for route: RouteDeclaration) -> [any RouteStage] {
        guard let activity = jam?.activity, !route.control else { return [] }
        return [ControllerDrop((activity.player.channel, activity.player.controller),
                               (activity.total.channel, activity.total.controller))]
    }

    /// The first of `documents` to declare the block at `declaration`; every later one is a mistake, added to
    /// `errors` (by file) as "`name` is already declared ...; all route files together declare one `block`".
    private static func onlyDeclaration<Block>(
        of declaration: KeyPath<RouteFileDocument, Block?>, at location: KeyPath<Block, SourceLocation>,
        in documents: [RouteFileDocument], named name: String, block: String, errors: inout [[RouteFileError]]
    ) -> Block? {
        var first: Block?
        for (fileIndex, document) in documents.enumerated() {
            guard let declared = document[keyPath: declaration] else { continue }
            if let first {
                errors[fileIndex].append(RouteFileError(
                    location: declared[keyPath: location],
                    message: "\(name) is already declared at \(first[keyPath: location]); "
                        + "all route files together declare one \(block)"))
            } else {
                first = declared
            }
        }
        return first
    }

    /// Checks names across `documents`, then returns the merged configuration or every error.
    private static func merge(_ documents: [RouteFileDocument]) throws(RouteFileErrors) -> RouteConfiguration {
        var errorsByFile: [[RouteFileError]] = documents.map(\.errors)
        var session = onlyDeclaration(of: \.session, at: \.location, in: documents, named: "the session",
                                      block: "'session'", errors: &errorsByFile)
        var alsa = onlyDeclaration(of: \.alsa, at: \.location, in: documents, named: "the ALSA client",
                                   block: "'alsa' block", errors: &errorsByFile)
        // Where the ALSA client is first needed (an `alsa:` endpoint), in file order.
        var firstALSAUse: SourceLocation?
        // Ports created by `alsa: { create: NAME }` endpoints, by name: one client cannot create two with one name.
        var createdPorts: [String: (endpoint: String, location: SourceLocation)] = [:]
        // Where the session is first needed (a `peer:` endpoint or a route naming `session`), in file order.
        var firstUse: (file: Int, location: SourceLocation)?
        func used(at location: SourceLocation, inFile file: Int) {
            if let earlier = firstUse,
               (earlier.file, earlier.location.line, earlier.location.column) <= (file, location.line, location.column) {
                return
            }
            firstUse = (file, location)
        }
        var endpoints: [EndpointDeclaration] = []
        var endpointIndex: [String: Int] = [:]
        for (fileIndex, document) in documents.enumerated() {
            for endpoint in document.endpoints.declarations {
                if let earlier = endpointIndex[endpoint.name] {
                    let first = endpoints[earlier].location
                    errorsByFile[fileIndex].append(RouteFileError(
                        location: endpoint.location,
                        message: "endpoint '\(endpoint.name)' is already declared at \(first); "
                            + "endpoint names must be unique across all route files"))
                } else {
                    endpointIndex[endpoint.name] = endpoints.count
                    endpoints.append(endpoint)
                    switch endpoint.kind {
                    case .peer:
                        used(at: endpoint.location, inFile: fileIndex)
                    case .alsaPorts, .alsaCreated:
                        if firstALSAUse == nil { firstALSAUse = endpoint.location }
                    case .midiFile, .recorder, .session, .osc, .drums, .jam:
                        break
                    }
                }
            }
        }
        let drums = onlyDeclaration(of: \.drums, at: \.location, in: documents, named: "the drum sequencer",
                                    block: "'drums' block", errors: &errorsByFile)
        /// Declares the endpoint a block brings (`drums`, `jam`), or reports the route files' endpoint of that name.
        func reserve(_ name: String, _ kind: EndpointKind, at location: SourceLocation, as what: String, when blocks: String) {
            if let earlier = endpointIndex[name], let fileIndex = documents.firstIndex(where: { $0.endpoints.declarations.contains { $0.name == name } }) {
                errorsByFile[fileIndex].append(RouteFileError(location: endpoints[earlier].location, message:
                    "'\(name)' is \(what) when \(blocks) is written (at \(location)); give this endpoint another name"))
            } else {
                endpointIndex[name] = endpoints.count
                endpoints.append(EndpointDeclaration(name: name, kind: kind, location: location))
            }
        }
        if let drums {
            reserve(RouteFileVocabulary.drumsEndpointName, .drums, at: drums.location, as: "the drum sequencer's notes",
                    when: "a 'drums' block")
        }
        for (fileIndex, document) in documents.enumerated() {
            for created in document.endpoints.alsa.createdPorts {
                if let first = createdPorts[created.name] {
                    errorsByFile[fileIndex].append(RouteFileError(
                        location: created.location,
                        message: "port '\(created.name)' is already created by endpoint '\(first.endpoint)' at "
                            + "\(first.location); give each created port its own name"))
                } else {
                    createdPorts[created.name] = (created.endpoint, created.location)
                }
            }
        }
        for (fileIndex, error) in OSCListener.conflicts(in: documents.map(\.endpoints.osc.listeners)) {
            errorsByFile[fileIndex].append(error)
        }
        let declaredNames = endpoints.map(\.name)
        // A route naming an endpoint whose declaration was reported is left out without a second message.
        let rejectedNames = Set(documents.flatMap(\.endpoints.rejectedNames))
        var routes: [RouteDeclaration] = []
        for (fileIndex, document) in documents.enumerated() {
            for route in document.routes {
                var valid = route.isValid
                for reference in route.from + route.to {
                    if reference.name == RouteFileVocabulary.sessionEndpointName {
                        used(at: reference.location, inFile: fileIndex)
                        if endpointIndex[reference.name] == nil {
                            endpointIndex[reference.name] = endpoints.count
                            endpoints.append(EndpointDeclaration(name: reference.name, kind: .session,
                                                                 location: reference.location))
                        }
                    }
                    if endpointIndex[reference.name] == nil, rejectedNames.contains(reference.name) {
                        valid = false
                        continue
                    }
                    if let problem = reference.problem(endpoints: endpoints, index: endpointIndex,
                                                       declaredNames: declaredNames) {
                        errorsByFile[fileIndex].append(RouteFileError(location: reference.location, message: problem))
                        valid = false
                    }
                }
                guard valid else { continue }
                do {
                    let osc = try route.resolvedOSCMapping { name in endpointIndex[name].map { endpoints[$0].kind } }
                    routes.append(RouteDeclaration(from: route.from.map(\.name), to: route.to.map(\.name),
                                                   stages: route.stages, osc: osc, echo: route.echo,
                                                   control: route.control, location: route.location))
                } catch {
                    errorsByFile[fileIndex].append(error)
                }
            }
        }
        if session == nil, let firstUse {
            session = SessionDeclaration(location: firstUse.location)
        }
        if let session {
            for (fileIndex, document) in documents.enumerated() {
                for listener in document.endpoints.osc.listeners where listener.clashes(with: session) {
                    errorsByFile[fileIndex].append(RouteFileError(
                        location: listener.location,
                        message: "endpoint '\(listener.endpoint)' cannot listen on \(listener.address): the session "
                            + "(at \(session.location)) uses UDP ports \(session.port) and \(session.port &+ 1); "
                            + "give the OSC endpoint another 'listen' port"))
                }
            }
        }
        let jam = mergedJam(documents, endpoints: endpoints, index: endpointIndex, declaredNames: declaredNames,
                            errors: &errorsByFile) ?? drums.map { JamDeclaration(location: $0.location) }
        if let jam {
            // The jam is an endpoint of its own, and hears the session's peers through the `session` endpoint.
            reserve(JamDeclaration.endpointName, .jam, at: jam.location, as: "the jam's own endpoint",
                    when: "a 'clock', 'activity' or 'drums' block")
            let sessionName = RouteFileVocabulary.sessionEndpointName
            if let session, endpointIndex[sessionName] == nil {
                endpointIndex[sessionName] = endpoints.count
                endpoints.append(EndpointDeclaration(name: sessionName, kind: .session, location: session.location))
            }
        }
        if alsa == nil, let firstALSAUse {
            alsa = ALSADeclaration(location: firstALSAUse)
        }
        let http = onlyDeclaration(of: \.http, at: \.location, in: documents, named: "the status page",
                                   block: "'http' block", errors: &errorsByFile)
        // Each file's mistakes by position, then those found in the files it names (a style file, a kit.yaml), file by file.
        let errors = zip(documents, errorsByFile).flatMap { document, fileErrors in
            var order = [document.file]
            for file in fileErrors.map(\.location.file) where !order.contains(file) { order.append(file) }
            return fileErrors.sorted {
                (order.firstIndex(of: $0.location.file)!, $0.location.line, $0.location.column)
                    < (order.firstIndex(of: $1.location.file)!, $1.location.line, $1.location.column)
            }
        }
        guard errors.isEmpty else { throw RouteFileErrors(errors: errors) }
        let songs = documents.reduce(into: [String: TimedSong]()) { $0.merge($1.endpoints.midiFiles.songs) { first, _ in first } }
        var configuration = RouteConfiguration(endpoints: endpoints, routes: routes, session: session, alsa: alsa,
                                               songs: songs, jam: jam)
        configuration.drums = drums
        configuration.http = http
        configuration.notes = documents.flatMap(\.notes)
        configuration.files = documents.map(RouteFileSummary.init)
        return configuration
    }

    /// The jam the files' `clock:` and `activity:` blocks declare (one of each across all files), with the clock's
    /// outputs checked like a route's sinks.
    private static func mergedJam(_ documents: [RouteFileDocument], endpoints: [EndpointDeclaration], index: [String: Int],
                                  declaredNames: [String], errors: inout [[RouteFileError]]) -> JamDeclaration? {
        let clock = onlyDeclaration(of: \.jam.clock, at: \.location, in: documents, named: "the clock",
                                    block: "'clock' block", errors: &errors)
        let activity = onlyDeclaration(of: \.jam.activity, at: \.location, in: documents, named: "the activity",
                                       block: "'activity' block", errors: &errors)
        if let clock, let fileIndex = documents.firstIndex(where: { $0.jam.clock != nil }) {
            for output in clock.outputs {
                if output.name == RouteFileVocabulary.sessionEndpointName {
                    errors[fileIndex].append(RouteFileError(location: output.location, message:
                        "the session gets the clock whenever this instance leads; list only local outputs in the clock's 'to'"))
                } else if let problem = output.problem(endpoints: endpoints, index: index, declaredNames: declaredNames) {
                    errors[fileIndex].append(RouteFileError(location: output.location, message: problem))
                }
            }
        }
        guard clock != nil || activity != nil else { return nil }
        var jam = clock?.declaration ?? JamDeclaration(location: activity!.location)
        if let activity { jam.activity = activity.configuration }
        return jam
    }
}

/// What one route file declares itself, the same whether it is loaded alone or with others: the endpoints it names
/// under `endpoints:` and those its own blocks and routes make (`drums`, `jam`, `session`), and its routes.
public struct RouteFileSummary: Sendable, Equatable {
    /// The route file's path as given.
    public var file: String
    public var endpoints: Int
    public var routes: Int

    init(_ document: RouteFileDocument) {
        file = document.file
        routes = document.routes.count
        let hasJam = document.drums != nil || document.jam.clock != nil || document.jam.activity != nil
        let namesSession = document.routes.contains { ($0.from + $0.to).contains { $0.name == RouteFileVocabulary.sessionEndpointName } }
        let hasSession = document.session != nil || namesSession || document.endpoints.declarations.contains { if case .peer = $0.kind { true } else { false } }
        endpoints = document.endpoints.declarations.count + (document.drums != nil ? 1 : 0) + (hasJam ? 1 : 0)
            + (namesSession || hasJam && hasSession ? 1 : 0)
    }
}
