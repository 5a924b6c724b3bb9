import Foundation
@testable import JamBridge
import Jam
import Logging
import MIDI
import MIDITestSupport
import RouteFile
import Routing
import Testing

// Assembly's lifecycle (docs/internals.md, "Parts") with stub parts: no socket, no sequencer, no file. The stubs
// write what they and their endpoints do in their bench's journal, and the engine is the real one, so what the
// journal shows of releases is what the router sent.

/// One test's world: what the stub parts and their endpoints did, in order, and the sources they made last, by name.
/// Stub parts find it through the label of the logger they are made with.
final class Bench: @unchecked Sendable {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var benches: [String: Bench] = [:]

    let context: PartContext
    private let lock = NSLock()
    private var journal: [String] = []
    private var sources: [String: StubSource] = [:]
    /// What a part that follows its ports' IDs late (`StubPorts`) routes under the ID of each port gone, when it does.
    private var late: MIDIMessage?
    /// What sinks that keep the time of what they hear (`TimedTape`) heard, in order.
    private var timed: [(sink: String, message: MIDIMessage, time: MonotonicInstant)] = []

    /// The stub parts serve nothing: one loop, never used, for every bench.
    private static let servers = ServerLoop()

    init() {
        let label = "assembly-test-\(UUID())"
        context = PartContext(logger: Logger(label: label) { _ in SwiftLogNoOpLogHandler() }, monitor: nil,
                              daemon: DaemonAccess(answer: { _, _, _ in }), servers: Self.servers)
        Self.lock.withLock { Self.benches[label] = self }
    }

    /// The bench of the test whose assembly makes parts with `context`.
    static func of(_ context: PartContext) -> Bench {
        lock.withLock { benches[context.logger.label]! }
    }

    func note(_ line: String) { lock.withLock { journal.append(line) } }

    /// The journal since the last time it was taken.
    func take() -> [String] {
        lock.withLock {
            defer { journal = [] }
            return journal
        }
    }

    func made(_ source: StubSource) { lock.withLock { sources[source.name] = source } }

    func hear(_ message: MIDIMessage, at time: MonotonicInstant, by sink: String) {
        lock.withLock { timed.append((sink, message, time)) }
    }

    /// What `sink` heard so far, with the instant each was delivered for.
    func heard(by sink: String) -> [(message: MIDIMessage, time: MonotonicInstant)] {
        lock.withLock { timed.filter { $0.sink == sink }.map { ($0.message, $0.time) } }
    }

    /// The source of the endpoint `name` made last.
    func source(_ name: String) -> StubSource { lock.withLock { sources[name]! } }

    var lateMessage: MIDIMessage? {
        get { lock.withLock { late } }
        set { lock.withLock { late = newValue } }
    }
}

/// "on 60", "off 60": what the journal shows of a message.
private func short(_ message: MIDIMessage) -> String {
    switch message {
    case .noteOn(_, let note, let velocity) where velocity.value > 0: "on \(note)"
    case .noteOn(_, let note, _), .noteOff(_, let note, _): "off \(note)"
    default: "\(message)"
    }
}

/// A source the test plays into the engine, routed before `play` returns. One that enters each route under its own
/// ID (as an OSC endpoint does) lets go of a key under the ID it went down under, even once that route is gone.
final class StubSource: SourceEndpoint, @unchecked Sendable {
    let name: String
    private let bench: Bench
    private(set) var id: EndpointID?
    private var engine: EventSink?
    /// By route index, the IDs it enters each route under, as its part last followed them.
    var routeIDs: [Int: EndpointID] = [:]
    /// The ID each key went down under, while it is down.
    private var down: [UInt8: EndpointID] = [:]

    init(_ name: String, bench: Bench) {
        self.name = name
        self.bench = bench
        bench.made(self)
    }

    func start(id: EndpointID, sink: EventSink) {
        self.id = id
        engine = sink
        bench.note("play \(name)")
    }

    func stop() { bench.note("silence \(name)") }

    /// Routes `message` under the endpoint's ID, or the ID of route `route`; a release under the ID its key went down under.
    func play(_ message: MIDIMessage, route: Int? = nil) {
        var under = route.map { routeIDs[$0]! } ?? id!
        switch message {
        case .noteOn(_, let note, let velocity) where velocity.value > 0: down[note.value] = under
        case .noteOn(_, let note, _), .noteOff(_, let note, _): under = down.removeValue(forKey: note.value) ?? under
        default: break
        }
        Self.route(message, under: under, into: engine!)
    }

    static func route(_ message: MIDIMessage, under id: EndpointID, into engine: EventSink) {
        engine.queue.sync { engine.routeOnQueue(MIDIEvent(message, from: id, at: MonotonicClock.now())) }
    }
}

/// A sink that writes what it hears in the journal: "tape <- off 60".
final class StubSink: SinkEndpoint, @unchecked Sendable {
    let name: String
    private let bench: Bench

    init(_ name: String, bench: Bench) {
        self.name = name
        self.bench = bench
    }

    func receive(_ message: MIDIMessage, at time: MonotonicInstant, to recipients: Recipients) {
        bench.note("\(name) <- \(short(message))")
    }

    func stop() { bench.note("close \(name)") }
}

/// As the ALSA client: one part for every `alsa: { create: NAME }` endpoint, taking changes in place; a port (a
/// source and a sink) is kept while it is declared as it was. It follows its ports' IDs when it starts, and until
/// then may route what a port gone had sent under the ID it had (the bench's `lateMessage`). A port created as
/// `broken` cannot be opened; one created as `each` enters each route under its own ID.
final class StubPorts: Part {
    private let bench: Bench
    private var ports: [String: (kind: EndpointKind, source: StubSource, sink: StubSink)] = [:]
    /// The IDs of the ports as it last followed them.
    private var followed: [String: EndpointID] = [:]

    static func blocks(in configuration: RouteConfiguration) -> [(key: String, block: [EndpointDeclaration])] {
        let declared = configuration.endpoints.filter { if case .alsaCreated = $0.kind { true } else { false } }
        return declared.isEmpty ? [] : [("ports", declared)]
    }

    init(_ declared: [EndpointDeclaration], in configuration: RouteConfiguration, context: PartContext) throws(PartFailure) {
        bench = Bench.of(context)
        if let broken = declared.first(where: { $0.kind == .alsaCreated(name: "broken") }) {
            throw PartFailure(problem: "\(broken.name): cannot be opened", consequence: "it stays silent")
        }
        bench.note("make ports")
        update(declared)
    }

    var endpoints: [String: RunningEndpoint] {
        ports.mapValues { RunningEndpoint(source: $0.source, sink: $0.sink, entersEachRoute: $0.kind == .alsaCreated(name: "each")) }
    }

    func apply(_ declared: [EndpointDeclaration], in configuration: RouteConfiguration) -> PartUpdate {
        update(declared)
        return .applied
    }

    private func update(_ declared: [EndpointDeclaration]) {
        ports = declared.reduce(into: [:]) { updated, declaration in
            if let kept = ports[declaration.name], kept.kind == declaration.kind {
                updated[declaration.name] = kept
            } else {
                updated[declaration.name] = (declaration.kind, StubSource(declaration.name, bench: bench), StubSink(declaration.name, bench: bench))
            }
        }
    }

    func start(_ wiring: Wiring) {
        bench.note("start ports")
        if let late = bench.lateMessage {
            for (name, id) in followed where wiring.ids[name] == nil { StubSource.route(late, under: id, into: wiring.engine) }
        }
        followed = wiring.ids.filter { ports[$0.key] != nil }
        for (name, port) in ports { port.source.routeIDs = wiring.routeIDs[name] ?? [:] }
    }

    func report(into status: inout DaemonStatus) {}

    func stop() { bench.note("stop ports") }
}

/// As a song: one part per `file:` endpoint, a source, made again when its path or loop changes. A path with
/// `broken` in it cannot be opened.
final class StubSong: Part {
    private let bench: Bench
    private let kind: EndpointKind
    private let name: String, path: String
    private let source: StubSource

    static func blocks(in configuration: RouteConfiguration) -> [(key: String, block: Declared<EndpointKind>)] {
        configuration.endpoints { if case .midiFile = $0 { $0 } else { nil } }
    }

    init(_ block: Declared<EndpointKind>, in configuration: RouteConfiguration, context: PartContext) throws(PartFailure) {
        bench = Bench.of(context)
        (kind, name) = (block.settings, block.declaration.name)
        guard case .midiFile(let path, _) = kind, !path.contains("broken") else {
            throw PartFailure(problem: "\(name): cannot be read", consequence: "it stays silent")
        }
        self.path = path
        source = StubSource(name, bench: bench)
        bench.note("make song \(name) \(path)")
    }

    var endpoints: [String: RunningEndpoint] { [name: RunningEndpoint(source: source)] }

    func apply(_ block: Declared<EndpointKind>, in configuration: RouteConfiguration) -> PartUpdate {
        block.settings == kind ? .applied : .replace
    }

    func start(_ wiring: Wiring) { bench.note("start song \(name)") }

    func report(into status: inout DaemonStatus) {}

    func stop() { bench.note("stop song \(name) \(path)") }
}

/// As a recorder: one part per `record:` endpoint, a sink, made again when its path changes.
final class StubTape: Part {
    private let bench: Bench
    private let kind: EndpointKind
    private let name: String
    private let sink: StubSink

    static func blocks(in configuration: RouteConfiguration) -> [(key: String, block: Declared<EndpointKind>)] {
        configuration.endpoints { if case .recorder = $0 { $0 } else { nil } }
    }

    init(_ block: Declared<EndpointKind>, in configuration: RouteConfiguration, context: PartContext) throws(PartFailure) {
        bench = Bench.of(context)
        (kind, name) = (block.settings, block.declaration.name)
        sink = StubSink(name, bench: bench)
        bench.note("make tape \(name)")
    }

    var endpoints: [String: RunningEndpoint] { [name: RunningEndpoint(sink: sink)] }

    func apply(_ block: Declared<EndpointKind>, in configuration: RouteConfiguration) -> PartUpdate {
        block.settings == kind ? .applied : .replace
    }

    func start(_ wiring: Wiring) { bench.note("start tape \(name)") }

    func report(into status: inout DaemonStatus) {}

    func stop() { bench.note("stop tape \(name)") }
}

/// Ports and songs first (they "open ports"), then tapes: as recorders, made only if the first group all opened.
private var stubKinds: [[any Part.Type]] { [[StubPorts.self, StubSong.self], [StubTape.self]] }

private let here = SourceLocation(file: "routes.yaml", line: 1, column: 1)

private func port(_ name: String) -> EndpointKind { .alsaCreated(name: name) }
private func song(_ path: String) -> EndpointKind { .midiFile(path: path, loop: false) }
private func tape(_ path: String) -> EndpointKind { .recorder(path: path) }

private func route(_ from: [String], _ to: [String], _ stages: [any RouteStage] = []) -> RouteDeclaration {
    RouteDeclaration(from: from, to: to, stages: stages, location: here)
}

/// A configuration of `endpoints`, in that order, and `routes`.
private func configuration(_ endpoints: KeyValuePairs<String, EndpointKind>, _ routes: [RouteDeclaration]) -> RouteConfiguration {
    RouteConfiguration(endpoints: endpoints.map { EndpointDeclaration(name: $0.key, kind: $0.value, location: here) }, routes: routes)
}

private func outcome(started: [String] = [], stopped: [String] = [], failures: [String] = []) -> ReloadOutcome {
    ReloadOutcome(started: started, stopped: stopped, failures: failures)
}

extension Assembly.Outcome {
    var reload: ReloadOutcome { ReloadOutcome(started: started, stopped: stopped, failures: failures) }
}

extension Assembly {
    /// What went in and out of each running endpoint, as `jambridge status` shows it.
    var traffic: [String: [Int]] {
        var status = DaemonStatus(pid: 0, routeFiles: [])
        report(into: &status)
        return status.endpoints.mapValues { [$0.in, $0.out] }
    }
}

@Suite struct AssemblyTests {
    @Test func startMakesAndStartsThePartsKindByKindThenStartsTheNewSources() {
        let bench = Bench()
        let assembly = Assembly(context: bench.context, kinds: stubKinds)
        let routes = configuration(["tape": tape("t.mid"), "b": song("b.mid"), "p": port("p"), "a": song("a.mid")],
                                   [route(["b", "p", "a"], ["tape"])])
        #expect(assembly.apply(routes, starting: true).reload == outcome(started: ["tape", "b", "p", "a"]))
        #expect(bench.take() == ["make ports", "make song b b.mid", "make song a a.mid", "make tape tape",
                                 "start ports", "start song b", "start song a", "start tape tape",
                                 "play b", "play p", "play a"])
        // IDs in declaration order.
        #expect(["b", "p", "a"].map { bench.source($0).id } == [1, 2, 3].map { EndpointID($0) })
        bench.source("p").play(noteOn(0, 60))
        #expect(bench.take() == ["tape <- on 60"])
    }

    @Test func aFailureInTheFirstGroupAtStartMakesNothingOfTheSecondAndStartsNothing() {
        let bench = Bench()
        let assembly = Assembly(context: bench.context, kinds: stubKinds)
        let broken = configuration(["p": port("broken"), "a": song("a.mid"), "tape": tape("t.mid")], [route(["a"], ["tape"])])
        #expect(assembly.apply(broken, starting: true).failures == ["p: cannot be opened"])
        #expect(bench.take() == ["make song a a.mid"])
        _ = assembly.stop() // as the daemon does
        #expect(bench.take().filter { $0.hasPrefix("stop") } == ["stop song a a.mid"])

        // A reload runs on with what it could make, the second group included.
        let reloaded = Assembly(context: bench.context, kinds: stubKinds)
        _ = reloaded.apply(configuration(["a": song("a.mid")], []), starting: true)
        _ = bench.take()
        #expect(reloaded.apply(broken, starting: false).reload == outcome(started: ["tape"], failures: ["p: cannot be opened"]))
        #expect(bench.take() == ["make tape tape", "start song a", "start tape tape"])
    }

    @Test func aReloadThatKeepsAPartKeepsItsEndpointsAndTheirIDs() {
        let bench = Bench()
        let assembly = Assembly(context: bench.context, kinds: stubKinds)
        _ = assembly.apply(configuration(["p": port("p"), "q": port("q"), "tape": tape("t.mid")], [route(["p", "q"], ["tape"])]),
                           starting: true)
        let (p, q) = (bench.source("p"), bench.source("q"))
        p.play(noteOn(0, 60))
        _ = bench.take()
        let reloaded = assembly.apply(configuration(["r": port("r"), "p": port("p"), "q": port("q"), "tape": tape("t.mid")],
                                                    [route(["q", "r"], ["tape"]), route(["p"], ["tape"], [Transpose(semitones: 1)])]),
                                      starting: false)
        #expect(reloaded.reload == outcome(started: ["r"]))
        #expect(bench.take() == ["start ports", "start tape tape", "play r"])
        #expect(bench.source("p") === p && bench.source("q") === q && [p.id, q.id, bench.source("r").id] == [0, 1, 3].map { EndpointID($0) })
        // The note held through the reload is released where it went.
        p.play(noteOff(0, 60))
        p.play(noteOn(0, 60))
        #expect(bench.take() == ["tape <- off 60", "tape <- on 61"])
    }

    @Test func aReplacedPartStopsOnceItsEndpointsAreOutOfTheEngineAndBeforeItsSuccessorIsMade() {
        let bench = Bench()
        let assembly = Assembly(context: bench.context, kinds: stubKinds)
        let routes = { (path: String) in configuration(["a": song(path), "tape": tape("t.mid")], [route(["a"], ["tape"])]) }
        _ = assembly.apply(routes("a.mid"), starting: true)
        bench.source("a").play(noteOn(0, 60))
        _ = bench.take()
        #expect(assembly.apply(routes("a2.mid"), starting: false).reload == outcome(started: ["a"], stopped: ["a"]))
        #expect(bench.take() == ["silence a", "tape <- off 60", "stop song a a.mid", "make song a a2.mid",
                                 "start song a", "start tape tape", "play a"])
    }

    @Test func endpointsNoLongerOfferedAreTakenOutWhatTheyHeldReleasedToTheSinksAsTheyWere() {
        let bench = Bench()
        let assembly = Assembly(context: bench.context, kinds: stubKinds)
        _ = assembly.apply(configuration(["p": port("p"), "q": port("q"), "s": song("s.mid"), "tape": tape("t.mid")],
                                         [route(["p"], ["tape"], [Transpose(semitones: 12)]), route(["s"], ["q"])]),
                           starting: true)
        _ = bench.take()
        bench.source("p").play(noteOn(0, 60))
        bench.source("s").play(noteOn(0, 50))
        #expect(bench.take() == ["tape <- on 72", "q <- on 50"])
        // The ports part stays, offering neither port now; the song goes to the tape.
        let reloaded = assembly.apply(configuration(["o": port("o"), "s": song("s.mid"), "tape": tape("t.mid")],
                                                    [route(["s"], ["tape"])]),
                                      starting: false)
        #expect(reloaded.reload == outcome(started: ["o"], stopped: ["p", "q"]))
        #expect(bench.take() == ["silence p", "silence q", "tape <- off 72", "q <- off 50", "close p", "close q",
                                 "start ports", "start song s", "start tape tape", "play o"])
        bench.source("s").play(noteOff(0, 50))
        #expect(bench.take().isEmpty)
    }

    @Test func stopStopsTheSourcesThenReleasesEverythingThenStopsThePartsLastMadeFirst() {
        let bench = Bench()
        let assembly = Assembly(context: bench.context, kinds: stubKinds)
        _ = assembly.apply(configuration(["p": port("p"), "a": song("a.mid"), "tape": tape("t.mid")], [route(["a", "p"], ["tape"])]),
                           starting: true)
        bench.source("a").play(noteOn(0, 60))
        bench.source("p").play(noteOn(0, 61))
        _ = bench.take()
        _ = assembly.stop()
        #expect(bench.take() == ["silence p", "silence a", "tape <- off 61", "tape <- off 60", "close p", "close tape",
                                 "stop tape tape", "stop song a a.mid", "stop ports"])
    }

    @Test func restartingAnEndpoint100000TimesKeepsItsIDsAndTheTablesSmall() {
        let bench = Bench()
        let assembly = Assembly(context: bench.context, kinds: stubKinds)
        let routes = { (cycle: Int) in configuration(["a": song("a\(cycle % 2).mid"), "tape": tape("t.mid")], [route(["a"], ["tape"])]) }
        _ = assembly.apply(routes(0), starting: true)
        var ids: Set<EndpointID> = []
        var unexpected: [String] = []
        for cycle in 1...100_000 {
            bench.source("a").play(noteOn(0, 60))
            if assembly.apply(routes(cycle), starting: false).reload != outcome(started: ["a"], stopped: ["a"]) {
                unexpected.append("cycle \(cycle)")
            }
            ids.insert(bench.source("a").id!)
            if cycle % 10_000 == 0 { _ = bench.take() }
        }
        #expect(unexpected.isEmpty)
        // The song takes back, each time, the ID it had until the reload before (the tape has 1).
        #expect(ids == Set([0, 2].map { EndpointID($0) }))
        #expect(assembly.engine.holding((0..<4).map { EndpointID($0) }).isEmpty)
        #expect(assembly.traffic == ["a": [100_000, 0], "tape": [0, 200_000]])
    }

    @Test func anIDIsNotGivenAgainWhileTheRouterHoldsAnythingUnderIt() {
        let bench = Bench()
        let assembly = Assembly(context: bench.context, kinds: stubKinds)
        _ = assembly.apply(configuration(["e": port("each"), "tape": tape("t.mid"), "s": song("s0.mid")],
                                         [route(["e"], ["tape"]), route(["s"], ["tape"])]),
                           starting: true)
        let e = bench.source("e")
        let held = e.routeIDs[0]!
        e.play(noteOn(0, 60), route: 0)
        // e's route goes: its ID is retired, the key still down under it; the song starts again and again.
        let restarted = { (cycle: Int) in
            assembly.apply(configuration(["e": port("each"), "tape": tape("t.mid"), "s": song("s\(cycle % 2).mid")],
                                         [route(["s"], ["tape"])]), starting: false)
        }
        var given: [EndpointID] = []
        for cycle in 1...4 {
            _ = restarted(cycle)
            given.append(bench.source("s").id!)
        }
        #expect(!given.contains(held), "\(held) given again while held: \(given)")
        e.play(noteOff(0, 60))
        #expect(bench.take().filter { $0.hasPrefix("tape") } == ["tape <- on 60", "tape <- off 60"])
        given = []
        for cycle in 5...6 {
            _ = restarted(cycle)
            given.append(bench.source("s").id!)
        }
        #expect(given.contains(held), "\(held) not given again once released: \(given)")
    }

    @Test func anIDIsNotGivenAgainInTheReloadThatTookItBack() {
        let bench = Bench()
        let assembly = Assembly(context: bench.context, kinds: stubKinds)
        _ = assembly.apply(configuration(["p": port("p"), "tape": tape("t.mid")], [route(["p"], ["tape"])]), starting: true)
        let gone = bench.source("p").id!
        // The ports part routes a note from p, read before it follows the new IDs, under p's ID: if q had it, the
        // note would reach the tape through q's route and be held under q.
        bench.lateMessage = noteOn(0, 60)
        let routes = configuration(["q": port("q"), "tape": tape("t.mid")], [route(["q"], ["tape"])])
        _ = bench.take()
        _ = assembly.apply(routes, starting: false)
        #expect(bench.source("q").id != gone)
        #expect(!bench.take().contains("tape <- on 60"))
        #expect(assembly.engine.holding([gone, bench.source("q").id!]).isEmpty)
        // From the next reload on it is free.
        _ = assembly.apply(configuration(["q": port("q"), "r": port("r"), "tape": tape("t.mid")], [route(["q", "r"], ["tape"])]),
                           starting: false)
        #expect(bench.source("r").id == gone)
    }

    @Test func anIDGivenToAnotherEndpointCountsFromNothingAndAnEndpointStartedAgainKeepsItsCounts() {
        let bench = Bench()
        let assembly = Assembly(context: bench.context, kinds: stubKinds)
        let routes = { (endpoints: KeyValuePairs<String, EndpointKind>) in configuration(endpoints, [route(["a", "b", "c"], ["tape"])]) }
        _ = assembly.apply(routes(["a": song("a.mid"), "b": song("b.mid"), "tape": tape("t.mid")]), starting: true)
        let a = bench.source("a")
        for message in [noteOn(0, 60), noteOff(0, 60), noteOn(0, 61)] { a.play(message) }
        bench.source("b").play(noteOn(0, 62))
        #expect(assembly.traffic == ["a": [3, 0], "b": [1, 0], "tape": [0, 4]])
        // a goes (its note released to the tape), then c takes its ID; b starts again.
        _ = assembly.apply(routes(["b": song("b.mid"), "tape": tape("t.mid")]), starting: false)
        _ = assembly.apply(routes(["c": song("c.mid"), "b": song("b2.mid"), "tape": tape("t.mid")]), starting: false)
        #expect(bench.source("c").id == a.id)
        #expect(assembly.traffic == ["b": [1, 0], "c": [0, 0], "tape": [0, 6]])
        bench.source("c").play(noteOn(0, 63))
        bench.source("b").play(noteOn(0, 64))
        // The ID b had is free from this reload on: its count stays b's.
        _ = assembly.apply(routes(["c": song("c.mid"), "b": song("b2.mid"), "tape": tape("t.mid")]), starting: false)
        #expect(assembly.traffic == ["b": [2, 0], "c": [1, 0], "tape": [0, 8]])
    }
}
