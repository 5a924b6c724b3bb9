import Foundation
import MIDI
import RouteFile
import Testing

@Suite struct RouteFileSessionTests {
    // MARK: - What a session block reads as

    @Test func fullSessionBlock() throws {
        let configuration = try parse("""
            session:
              name: Studio Rack
              port: 5104
              bind: "192.168.1.20"
              accept: ["Mike’s *", iPad]
              invite: ["Jam *", { host: 10.0.0.2, port: 6004 }, { host: studio.local }]
              advertise: no
              timeout: 30
              running-status: yes
            """)
        #expect(configuration.session == SessionDeclaration(
            name: "Studio Rack", port: 5104, bind: "192.168.1.20", accept: .names(["Mike’s *", "iPad"]),
            invite: [.bonjour(glob: "Jam *"), .address(host: "10.0.0.2", port: 6004),
                     .address(host: "studio.local", port: 5004)],
            advertise: false, timeout: 30, runningStatus: true, location: at(1, 1)))
        #expect(configuration.endpoints.isEmpty)
    }

    @Test func defaults() throws {
        let expected = SessionDeclaration(name: nil, port: 5004, bind: nil, accept: .anyone, invite: [],
                                          advertise: true, location: at(2, 1))
        #expect(try parse("endpoints: {}\nsession:\n").session == expected)
        #expect(try parse("endpoints: {}\nsession: {}\n").session == expected)
        #expect(try parse("endpoints: {}\nsession: { name: Rack }\n").session
            == SessionDeclaration(name: "Rack", location: at(2, 1)))
        #expect(SessionDeclaration.defaultPort == 5004)
        #expect(try parse("session: {}\n").session?.playout == [])
        #expect(SessionDeclaration(location: at(1, 1)).playout == [])
    }

    @Test func noSessionWithoutBlockOrUse() throws {
        let configuration = try parse("endpoints:\n  song: { file: s.mid }\n  tape: { record: t.mid }\n"
                                      + "routes:\n  - from: song\n    to: tape\n")
        #expect(configuration.session == nil)
        #expect(!configuration.endpoints.contains { $0.kind == .session })
    }

    @Test func bindTakesIPv4AndIPv6() throws {
        #expect(try parse("session:\n  bind: 10.0.0.1\n").session?.bind == "10.0.0.1")
        #expect(try parse("session:\n  bind: \"::\"\n").session?.bind == "::")
        #expect(try parse("session:\n  bind: fd00::20\n").session?.bind == "fd00::20")
    }

    @Test func portBoundsAreInclusive() throws {
        #expect(try parse("session:\n  port: 1\n").session?.port == 1)
        #expect(try parse("session:\n  port: 65534\n").session?.port == 65534)
    }

    @Test func advertiseIsABoolean() throws {
        #expect(try parse("session:\n  advertise: false\n").session?.advertise == false)
        #expect(try parse("session:\n  advertise: on\n").session?.advertise == true)
        #expect(locatedMistakes("session:\n  advertise: loudly\n") == [
            "r.yaml:2:14: 'advertise' is true or false, not 'loudly'",
        ])
    }

    @Test func timeoutIsWholeSecondsInItsRange() throws {
        #expect(try parse("session:\n  timeout: 15\n").session?.timeout == 15)
        #expect(try parse("session:\n  timeout: 600\n").session?.timeout == 600)
        #expect(try parse("session: {}\n").session?.timeout == 60)
        #expect(locatedMistakes("session:\n  timeout: 5\n") == [
            "r.yaml:2:12: timeout 5 is out of range; 'timeout' is 15-600 seconds without clock sync before a peer is dropped",
        ])
        #expect(locatedMistakes("session:\n  timeout: soon\n") == [
            "r.yaml:2:12: 'soon' is not a number; the peer timeout is 15-600 seconds without clock sync before a peer is dropped",
        ])
    }

    @Test func maxPeersIsACountInItsRange() throws {
        #expect(try parse("session: {}\n").session?.maxPeers == 32)
        #expect(try parse("session:\n  max-peers: 1\n").session?.maxPeers == 1)
        #expect(try parse("session:\n  max-peers: 256\n").session?.maxPeers == 256)
        #expect(locatedMistakes("session:\n  max-peers: 0\n") == [
            "r.yaml:2:14: max-peers 0 is out of range; 'max-peers' is 1-256 peers connected at once",
        ])
        #expect(locatedMistakes("session:\n  max-peers: many\n") == [
            "r.yaml:2:14: 'many' is not a number; the peer limit is 1-256 peers connected at once",
        ])
    }

    @Test func nameOfSixtyThreeBytesIsAllowed() throws {
        let name = String(repeating: "é", count: 31) + "x" // 63 bytes
        #expect(try parse("session:\n  name: \"\(name)\"\n").session?.name == name)
    }

    // MARK: - The session endpoint and peers

    @Test func referencedSessionIsAnImplicitEndpointWithADefaultDeclaration() throws {
        let configuration = try parse("""
            endpoints:
              song: { file: s.mid }
              tape: { record: t.mid }
            routes:
              - from: song
                to: [tape, session]
              - from: session
                to: tape
            """)
        #expect(configuration.endpoints.map(\.name) == ["song", "tape", "session"])
        let session = try #require(configuration.endpoints.last)
        #expect(session.kind == .session)
        #expect(session.location == at(6, 16))
        #expect(session.canSend && session.canReceive)
        #expect(configuration.routes.map(\.from) == [["song"], ["session"]])
        #expect(configuration.routes.map(\.to) == [["tape", "session"], ["tape"]])
        #expect(configuration.session == SessionDeclaration(location: at(6, 16)))
    }

    @Test func sessionBlockInAnotherFileIsTheDeclarationUsed() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let routes = try write("endpoints:\n  tape: { record: t.mid }\nroutes:\n  - from: session\n    to: tape\n",
                               to: "a.yaml", in: directory)
        let session = try write("session:\n  name: Rack\n", to: "b.yaml", in: directory)
        let configuration = try RouteConfiguration.load(files: [routes, session])
        #expect(configuration.session == SessionDeclaration(
            name: "Rack", location: MIDI.SourceLocation(file: session, line: 1, column: 1)))
        #expect(configuration.endpoints.filter { $0.kind == .session }.map(\.location)
            == [MIDI.SourceLocation(file: routes, line: 4, column: 11)])
    }

    @Test func peerEndpoints() throws {
        let configuration = try parse("""
            endpoints:
              mike: { peer: "Mike’s Mac" }
              ipads: { peer: "iPad*" }
            routes:
              - from: mike
                to: [ipads, session]
            """)
        #expect(configuration.endpoints.map(\.kind) == [
            .peer(glob: "Mike’s Mac"), .peer(glob: "iPad*"), .session,
        ])
        #expect(configuration.endpoints.allSatisfy { $0.canSend && $0.canReceive })
        #expect(configuration.routes.count == 1)
        // The first use of the session is the first peer endpoint, before the route naming `session`.
        #expect(configuration.session == SessionDeclaration(location: at(2, 3)))
    }

    @Test func peerEndpointAloneBringsADefaultSession() throws {
        let configuration = try parse("endpoints:\n  mike: { peer: Mike* }\n")
        #expect(configuration.endpoints.map(\.name) == ["mike"])
        #expect(configuration.session == SessionDeclaration(location: at(2, 3)))
    }

    @Test func misspelledSessionEndpointSuggestsSession() {
        #expect(locatedMistakes("endpoints:\n  tape: { record: t.mid }\nroutes:\n  - from: sesion\n    to: tape\n") == [
            "r.yaml:4:11: unknown endpoint 'sesion'; did you mean 'session'? declared endpoints: tape",
        ])
    }

    @Test func sessionStaysAReservedEndpointName() {
        #expect(locatedMistakes("endpoints:\n  session: { peer: Mike }\n") == [
            "r.yaml:2:3: 'session' is the reserved name of the network session endpoint; choose another name",
        ])
    }

    // MARK: - accept

    @Test func acceptWords() throws {
        #expect(try parse("session:\n  accept: anyone\n").session?.accept == .anyone)
        #expect(try parse("session:\n  accept: none\n").session?.accept == SessionAcceptance.none)
        #expect(try parse("session:\n  accept: listed\n  invite: \"Jam *\"\n").session
            == SessionDeclaration(accept: .listed, invite: [.bonjour(glob: "Jam *")], location: at(1, 1)))
    }

    @Test func acceptList() throws {
        #expect(try parse("session:\n  accept: [\"Mike’s *\", \"none\"]\n").session?.accept
            == .names(["Mike’s *", "none"]))
        #expect(try parse("session:\n  accept:\n    - yes\n    - iPad\n").session?.accept == .names(["yes", "iPad"]))
    }

    // MARK: - invite

    @Test func inviteStringsWithColonsStayBonjourGlobs() throws {
        #expect(try parse("session:\n  invite: [\"Studio: Rack\", \"10.0.0.2:5004\", \"[::1]:5004\"]\n").session?.invite == [
            .bonjour(glob: "Studio: Rack"), .bonjour(glob: "10.0.0.2:5004"), .bonjour(glob: "[::1]:5004"),
        ])
    }

    @Test func inviteMappings() throws {
        #expect(try parse("session:\n  invite:\n    - { host: \"::1\" }\n    - host: 10.0.0.2\n      port: 65534\n")
            .session?.invite == [.address(host: "::1", port: 5004), .address(host: "10.0.0.2", port: 65534)])
    }

    @Test func aSingleInviteEntryIsAOneEntryList() throws {
        #expect(try parse("session:\n  invite: Jam *\n").session?.invite == [.bonjour(glob: "Jam *")])
        #expect(try parse("session:\n  invite: { host: studio.local, port: 6000 }\n").session?.invite
            == [.address(host: "studio.local", port: 6000)])
        #expect(try parse("session:\n  invite: []\n").session?.invite == [])
    }

    /// The session example of jambridge-routes(5), kept in step with the page by hand.
    @Test func manPageExample() throws {
        let configuration = try parse("""
            session:
              name: Studio Rack
              accept: listed
              invite: ["Jam *", { host: 10.0.0.2, port: 5004 }]
            endpoints:
              song: { file: songs/demo.mid }
              mike: { peer: "Mike’s Mac" }
              tape: { record: mike.mid }
            routes:
              - from: song
                to: session
              - from: mike
                to: tape
            """)
        #expect(configuration.session == SessionDeclaration(
            name: "Studio Rack", accept: .listed,
            invite: [.bonjour(glob: "Jam *"), .address(host: "10.0.0.2", port: 5004)], location: at(1, 1)))
        #expect(configuration.endpoints.map(\.name) == ["song", "mike", "tape", "session"])
        #expect(configuration.routes.count == 2)
    }

    // MARK: - playout

    @Test func playoutWordAppliesToEveryPeer() throws {
        #expect(try parse("session:\n  playout: timestamp\n").session?.playout
            == [PlayoutRule(glob: "*", mode: .timestamp)])
        #expect(try parse("session:\n  playout: immediate\n").session?.playout
            == [PlayoutRule(glob: "*", mode: .immediate)])
        #expect(try parse("session:\n  playout: \"timestamp\"\n").session?.playout
            == [PlayoutRule(glob: "*", mode: .timestamp)])
    }

    @Test func playoutPerPeerKeepsTheOrderWritten() throws {
        let configuration = try parse("""
            session:
              playout:                        # first match wins
                "Mike’s iPad": timestamp
                "Studio *": immediate
                "*": timestamp
            """)
        #expect(configuration.session == SessionDeclaration(playout: [
            PlayoutRule(glob: "Mike’s iPad", mode: .timestamp),
            PlayoutRule(glob: "Studio *", mode: .immediate),
            PlayoutRule(glob: "*", mode: .timestamp),
        ], location: at(1, 1)))
        #expect(try parse("session:\n  playout: { iPad*: timestamp }\n").session?.playout
            == [PlayoutRule(glob: "iPad*", mode: .timestamp)])
    }

    @Test func playoutWithTheOtherSessionSettings() throws {
        #expect(try parse("session:\n  name: Rack\n  playout: timestamp\n  timeout: 30\n").session
            == SessionDeclaration(name: "Rack", timeout: 30, playout: [PlayoutRule(glob: "*", mode: .timestamp)],
                                  location: at(1, 1)))
    }

    @Test func unknownPlayoutWord() {
        let choices = "'playout' is immediate, timestamp or a mapping of peer names to those such as "
            + "{ \"Mike’s iPad\": timestamp, \"*\": immediate }"
        #expect(locatedMistakes("session:\n  playout: timestamps\n") == [
            "r.yaml:2:12: unknown 'playout' value 'timestamps'; did you mean 'timestamp'? \(choices)",
        ])
        #expect(locatedMistakes("session:\n  playout: immediately\n") == [
            "r.yaml:2:12: unknown 'playout' value 'immediately'; did you mean 'immediate'? \(choices)",
        ])
        #expect(locatedMistakes("session:\n  playout: Mike\n") == [
            "r.yaml:2:12: unknown 'playout' value 'Mike'; \(choices)",
        ])
    }

    @Test func emptyPlayout() {
        let needs = "'playout' needs a value: immediate, timestamp or a mapping of peer names to those such as "
            + "{ \"Mike’s iPad\": timestamp, \"*\": immediate }"
        #expect(locatedMistakes("session:\n  playout:\n") == ["r.yaml:2:3: \(needs)"])
        #expect(locatedMistakes("session:\n  name: Rack\n  playout: ~\n") == ["r.yaml:3:3: \(needs)"])
        #expect(locatedMistakes("session:\n  playout: \"\"\n") == ["r.yaml:2:12: \(needs)"])
        #expect(locatedMistakes("session:\n  playout: {}\n") == [
            "r.yaml:2:12: 'playout' maps no peer names; write 'immediate' or 'timestamp' to play every peer "
                + "one way, or leave 'playout' out",
        ])
    }

    @Test func playoutListInsteadOfMapping() {
        let message = "'playout' per peer is a mapping, not a list: write each peer name with its mode, such as "
            + "{ \"Mike’s iPad\": timestamp, \"*\": immediate }; entries keep the order written and the first "
            + "name matching a peer decides"
        #expect(locatedMistakes("session:\n  playout:\n    - \"Mike’s iPad\": timestamp\n    - \"*\": immediate\n")
            == ["r.yaml:3:5: \(message)"])
        #expect(locatedMistakes("session:\n  playout: [timestamp]\n") == ["r.yaml:2:12: \(message)"])
    }

    @Test func emptyPlayoutPeerName() {
        let message = "an empty peer name in 'playout'; write a name or a glob such as \"Mike’s *\", "
            + "or \"*\" for every other peer"
        #expect(locatedMistakes("session:\n  playout:\n    \"\": timestamp\n") == ["r.yaml:3:5: \(message)"])
        #expect(locatedMistakes("session:\n  playout:\n    \"Mike\": timestamp\n    ~: immediate\n")
            == ["r.yaml:4:5: \(message)"])
    }

    @Test func playoutModeMustBeAWord() {
        let form = "a peer's playout is immediate or timestamp"
        #expect(locatedMistakes("session:\n  playout:\n    Mike: [timestamp]\n") == [
            "r.yaml:3:11: the playout of 'Mike' is a list; \(form)",
        ])
        #expect(locatedMistakes("session:\n  playout:\n    Mike: { mode: timestamp }\n") == [
            "r.yaml:3:11: the playout of 'Mike' is a mapping; \(form)",
        ])
        #expect(locatedMistakes("session:\n  playout:\n    Mike:\n") == [
            "r.yaml:3:5: the playout of 'Mike' needs a value; \(form)",
        ])
        #expect(locatedMistakes("session:\n  playout:\n    \"Studio *\": stamped\n") == [
            "r.yaml:3:17: unknown playout 'stamped' for 'Studio *'; \(form)",
        ])
        #expect(locatedMistakes("session:\n  playout:\n    Mike: immediatly\n") == [
            "r.yaml:3:11: unknown playout 'immediatly' for 'Mike'; did you mean 'immediate'? \(form)",
        ])
    }

    @Test func playoutModeWrittenBeforeThePeerName() {
        #expect(locatedMistakes("session:\n  playout: { timestamp: \"Mike*\" }\n") == [
            "r.yaml:2:25: unknown playout 'Mike*' for 'timestamp'; the peer name comes first, "
                + "such as { \"Mike*\": timestamp }",
        ])
    }

    @Test func duplicatePlayoutPeerName() {
        // A key is its text: a number and the same number quoted are one peer name written twice.
        #expect(locatedMistakes("session:\n  playout:\n    5: timestamp\n    \"5\": immediate\n") == [
            "r.yaml:4:5: key '5' is already written at r.yaml:3:5 in the same mapping; keep one",
        ])
        #expect(locatedMistakes("session:\n  playout:\n    Mike: timestamp\n    \"Mike\": immediate\n") == [
            "r.yaml:4:5: key 'Mike' is already written at r.yaml:3:5 in the same mapping; keep one",
        ])
    }

    @Test func playoutEntryAfterTheCatchAllNeverMatches() {
        #expect(locatedMistakes("""
            session:
              playout:
                "*": timestamp
                "Studio *": immediate
            """) == [
            "r.yaml:4:5: 'Studio *' can never match: '*' at line 3 matches every peer before it; "
                + "move 'Studio *' above it or remove it",
        ])
        // Every mistake in the mapping is reported.
        #expect(locatedMistakes("session:\n  playout:\n    \"*\": timestamp\n    A: immediate\n    B: sometimes\n") == [
            "r.yaml:4:5: 'A' can never match: '*' at line 3 matches every peer before it; "
                + "move 'A' above it or remove it",
            "r.yaml:5:5: 'B' can never match: '*' at line 3 matches every peer before it; "
                + "move 'B' above it or remove it",
            "r.yaml:5:8: unknown playout 'sometimes' for 'B'; a peer's playout is immediate or timestamp",
        ])
    }

    // MARK: - Mistakes

    @Test func portOutOfRangeOrNotANumber() {
        let range = "the session port is 1-65534 (the data port is the next one)"
        #expect(locatedMistakes("session:\n  port: 0\n") == ["r.yaml:2:9: port 0 is out of range; \(range)"])
        #expect(locatedMistakes("session:\n  port: 70000\n") == ["r.yaml:2:9: port 70000 is out of range; \(range)"])
        #expect(locatedMistakes("session:\n  port: 65535\n") == ["r.yaml:2:9: port 65535 is out of range; \(range)"])
        #expect(locatedMistakes("session:\n  port: abc\n") == ["r.yaml:2:9: 'abc' is not a number; \(range)"])
    }

    @Test func bindMustBeNumeric() {
        let form = "'bind' is a numeric IPv4 or IPv6 address such as '192.168.1.20' or 'fd00::20'; "
            + "leave 'bind' out to listen on every interface"
        #expect(locatedMistakes("session:\n  bind: studio.local\n") == [
            "r.yaml:2:9: 'studio.local' is not a numeric address; \(form)",
        ])
        #expect(locatedMistakes("session:\n  bind: 10.0.0.256\n") == [
            "r.yaml:2:9: '10.0.0.256' is not a numeric address; \(form)",
        ])
        #expect(locatedMistakes("session:\n  bind:\n") == ["r.yaml:2:3: \(form)"])
    }

    @Test func emptyName() {
        let message = "the session name is empty; write the name peers see, such as 'Studio Rack', "
            + "or leave 'name' out for 'jambridge on HOSTNAME'"
        #expect(locatedMistakes("session:\n  name: \"\"\n") == ["r.yaml:2:9: \(message)"])
        #expect(locatedMistakes("session:\n  name:\n") == ["r.yaml:2:3: \(message)"])
    }

    @Test func nameOverSixtyThreeBytes() {
        let name = String(repeating: "é", count: 32) // 32 characters, 64 bytes
        #expect(locatedMistakes("session:\n  name: \(name)\n") == [
            "r.yaml:2:9: the session name is 64 bytes long; Bonjour names are at most 63 bytes (UTF-8), so shorten it",
        ])
    }

    @Test func unknownSessionKey() {
        #expect(locatedMistakes("session:\n  ports: 5004\n") == ["r.yaml:2:3: unknown key 'ports'; did you mean 'port'?"])
        #expect(locatedMistakes("session:\n  acept: none\n") == ["r.yaml:2:3: unknown key 'acept'; did you mean 'accept'?"])
        #expect(locatedMistakes("session:\n  colour: red\n") == [
            "r.yaml:2:3: unknown key 'colour' in the session; the keys are name, port, bind, accept, invite, advertise, "
                + "timeout, max-peers, running-status, playout",
        ])
    }

    @Test func unknownAcceptWord() {
        let form = "'accept' is anyone, none, listed or a list of peer names such as [\"Mike’s *\"]"
        #expect(locatedMistakes("session:\n  accept: anyon\n") == [
            "r.yaml:2:11: unknown 'accept' value 'anyon'; did you mean 'anyone'? \(form) (a single name goes in a list)",
        ])
        #expect(locatedMistakes("session:\n  accept: Mike\n") == [
            "r.yaml:2:11: unknown 'accept' value 'Mike'; \(form) (a single name goes in a list)",
        ])
        #expect(locatedMistakes("session:\n  accept: []\n") == [
            "r.yaml:2:11: 'accept' lists no peer names; write 'none' to let no peer join",
        ])
    }

    @Test func peerCombinedWithFileOrLoop() {
        #expect(locatedMistakes("endpoints:\n  x: { peer: Mike, file: a.mid }\n") == [
            "r.yaml:2:20: 'peer' and 'file' together: an endpoint is one of 'peer' (a session peer), "
                + "'file' (play a MIDI file) or 'record' (record to a MIDI file)",
        ])
        #expect(locatedMistakes("endpoints:\n  x: { record: a.mid, peer: Mike }\n") == [
            "r.yaml:2:23: 'record' and 'peer' together: an endpoint is one of 'peer' (a session peer), "
                + "'file' (play a MIDI file) or 'record' (record to a MIDI file)",
        ])
        #expect(locatedMistakes("endpoints:\n  x: { peer: Mike, loop: true }\n") == [
            "r.yaml:2:20: 'loop' applies to 'file' endpoints only",
        ])
    }

    @Test func emptyPeer() {
        #expect(locatedMistakes("endpoints:\n  x: { peer: \"\" }\n") == [
            "r.yaml:2:14: 'peer' is empty; write the peer's session name or a glob such as \"Mike’s *\"",
        ])
    }

    @Test func missingPeerGlobPointsAtTheKey() {
        #expect(locatedMistakes("endpoints:\n  x: { peer: }\n") == [
            "r.yaml:2:8: 'peer' is empty; write the peer's session name or a glob such as \"Mike’s *\"",
        ])
        #expect(locatedMistakes("endpoints:\n  x: { peer: [a, b] }\n") == [
            "r.yaml:2:14: 'peer' is the peer's session name or a glob such as \"Mike’s *\", not a list",
        ])
    }

    @Test func badInvitations() {
        #expect(locatedMistakes("session:\n  invite: [{ port: 5004 }]\n") == [
            "r.yaml:2:12: an invitation by address needs 'host:', such as { host: 10.0.0.2, port: 5004 }",
        ])
        #expect(locatedMistakes("session:\n  invite: [{ host: \"10.0.0.2:5004\" }]\n") == [
            "r.yaml:2:20: '10.0.0.2:5004' is not a host; write the port apart: { host: 10.0.0.2, port: 5004 }",
        ])
        #expect(locatedMistakes("session:\n  invite: [{ host: a.b, port: 0 }]\n") == [
            "r.yaml:2:31: port 0 is out of range; the peer's port is 1-65534 (the data port is the next one)",
        ])
        #expect(locatedMistakes("session:\n  invite: [{ hosts: a.b }]\n") == [
            "r.yaml:2:12: an invitation by address needs 'host:', such as { host: 10.0.0.2, port: 5004 }",
            "r.yaml:2:14: unknown key 'hosts'; did you mean 'host'?",
        ])
        #expect(locatedMistakes("session:\n  invite: [{ host: a.b, address: c }]\n") == [
            "r.yaml:2:25: unknown key 'address' in an invitation; the keys are host, port",
        ])
        #expect(locatedMistakes("session:\n  invite: [\"\"]\n") == [
            "r.yaml:2:12: an empty invitation; an invitation is a Bonjour name such as \"Jam *\" "
                + "or { host: 10.0.0.2, port: 5004 }",
        ])
    }

    @Test func twoSessionBlocksInTwoFiles() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try write("endpoints: {}\nsession:\n  name: A\n", to: "a.yaml", in: directory)
        let second = try write("# the other one\nsession: { name: B }\n", to: "b.yaml", in: directory)
        do {
            _ = try RouteConfiguration.load(files: [first, second])
            Issue.record("two session blocks must be an error")
        } catch {
            #expect(error.errors.map(\.description) == [
                "\(second):2:1: the session is already declared at \(first):2:1; "
                    + "all route files together declare one 'session'",
            ])
        }
    }
}
