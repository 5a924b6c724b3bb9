import Foundation
import MIDI
import RouteFile
import Testing

/// The kind of the only endpoint of `endpoints:\n  x: { alsa: VALUE }`, VALUE written as `value`.
private func alsaKind(_ value: String) throws -> EndpointKind? {
    try parse("endpoints:\n  x: { alsa: \(value) }\n").endpoints.first?.kind
}

@Suite struct RouteFileALSATests {
    // MARK: - The forms

    @Test func everyForm() throws {
        let configuration = try parse("""
            alsa:
              client: jambridge rack
            endpoints:
              keys: { alsa: "USB Keyboard*" }
              drums: { alsa: "TR-8:0" }
              synth: { alsa: "FLUID Synth*:Synth input*" }
              out: { alsa: { create: "jam out" } }
            routes:
              - from: [keys, drums]
                to: [synth, out]
            """)
        #expect(configuration.endpoints.map(\.name) == ["keys", "drums", "synth", "out"])
        #expect(configuration.endpoints.map(\.kind) == [
            .alsaPorts(client: "USB Keyboard*", port: .all),
            .alsaPorts(client: "TR-8", port: .number(0)),
            .alsaPorts(client: "FLUID Synth*", port: .name("Synth input*")),
            .alsaCreated(name: "jam out"),
        ])
        #expect(configuration.alsa == ALSADeclaration(client: "jambridge rack", location: at(1, 1)))
        #expect(configuration.session == nil)
        #expect(configuration.routes.count == 1)
    }

    @Test func everyALSAEndpointSendsAndReceives() throws {
        let configuration = try parse("""
            endpoints:
              keys: { alsa: "USB Keyboard*" }
              out: { alsa: { create: "jam out" } }
            routes:
              - from: [keys, out]
                to: [out, keys]
            """)
        #expect(configuration.endpoints.allSatisfy { $0.canSend && $0.canReceive })
        #expect(EndpointKind.alsaPorts(client: "a", port: .all).canSend)
        #expect(EndpointKind.alsaPorts(client: "a", port: .number(1)).canReceive)
        #expect(EndpointKind.alsaCreated(name: "a").canSend && EndpointKind.alsaCreated(name: "a").canReceive)
        #expect(configuration.routes.map(\.from) == [["keys", "out"]])
    }

    @Test func portNumbersAndTheirBounds() throws {
        #expect(try alsaKind("\"TR-8:0\"") == .alsaPorts(client: "TR-8", port: .number(0)))
        #expect(try alsaKind("\"TR-8:255\"") == .alsaPorts(client: "TR-8", port: .number(255)))
        #expect(try alsaKind("\"TR-8:007\"") == .alsaPorts(client: "TR-8", port: .number(7)))
        #expect(try parse("endpoints:\n  x:\n    alsa: TR-8:1\n").endpoints.first?.kind
            == .alsaPorts(client: "TR-8", port: .number(1)))
    }

    @Test func theSplitIsAtTheLastColon() throws {
        #expect(try alsaKind("\"Studio: Rack:Out*\"") == .alsaPorts(client: "Studio: Rack", port: .name("Out*")))
        // A client whose name has a colon is reached with ":*" (every port).
        #expect(try alsaKind("\"Studio: Rack:*\"") == .alsaPorts(client: "Studio: Rack", port: .all))
        #expect(try alsaKind("\"Studio: Rack\"") == .alsaPorts(client: "Studio", port: .name(" Rack")))
    }

    @Test func aStarPortIsEveryPort() throws {
        #expect(try alsaKind("\"USB*:*\"") == .alsaPorts(client: "USB*", port: .all))
        #expect(try alsaKind("\"USB*:**\"") == .alsaPorts(client: "USB*", port: .all))
        #expect(try alsaKind("\"USB*:MIDI ?\"") == .alsaPorts(client: "USB*", port: .name("MIDI ?")))
    }

    @Test func aNamedPortThatLooksLikeANumberIsAGlob() throws {
        #expect(try alsaKind("\"TR-8:-1\"") == .alsaPorts(client: "TR-8", port: .name("-1")))
        #expect(try alsaKind("\"TR-8:1?\"") == .alsaPorts(client: "TR-8", port: .name("1?")))
    }

    @Test func createdPortNames() throws {
        #expect(try alsaKind("{ create: jam out }") == .alsaCreated(name: "jam out"))
        #expect(try alsaKind("{ create: 5 }") == .alsaCreated(name: "5"))
        let name = String(repeating: "é", count: 31) + "x" // 63 bytes
        #expect(try alsaKind("{ create: \"\(name)\" }") == .alsaCreated(name: name))
        #expect(try parse("endpoints:\n  out:\n    alsa:\n      create: jam out\n").endpoints.first?.kind
            == .alsaCreated(name: "jam out"))
    }

    @Test func portPatternsMatch() {
        #expect(ALSAPortPattern.all.matches(number: 3, name: "anything"))
        #expect(ALSAPortPattern.number(0).matches(number: 0, name: "TR-8 MIDI 1"))
        #expect(!ALSAPortPattern.number(0).matches(number: 1, name: "TR-8 MIDI 1"))
        #expect(ALSAPortPattern.name("Synth input*").matches(number: 0, name: "Synth input port (1234:0)"))
        #expect(!ALSAPortPattern.name("Synth input*").matches(number: 0, name: "Midi Through Port-0"))
    }

    // MARK: - The alsa block

    @Test func defaultClientName() throws {
        #expect(ALSADeclaration.defaultClientName == "jambridge")
        #expect(ALSADeclaration(location: at(1, 1)).client == "jambridge")
        #expect(try parse("alsa:\n").alsa == ALSADeclaration(client: "jambridge", location: at(1, 1)))
        #expect(try parse("endpoints: {}\nalsa: {}\n").alsa == ALSADeclaration(location: at(2, 1)))
    }

    @Test func anALSAEndpointAloneBringsTheDefaultClient() throws {
        let configuration = try parse("endpoints:\n  song: { file: s.mid }\n  keys: { alsa: USB* }\n"
                                      + "  out: { alsa: { create: out } }\n")
        #expect(configuration.alsa == ALSADeclaration(client: "jambridge", location: at(3, 3)))
        #expect(try parse("endpoints:\n  out: { alsa: { create: out } }\n").alsa
            == ALSADeclaration(location: at(2, 3)))
    }

    @Test func noClientWithoutBlockOrEndpoint() throws {
        #expect(try parse("endpoints:\n  song: { file: s.mid }\n").alsa == nil)
        #expect(try parse("endpoints:\n  mike: { peer: Mike }\n").alsa == nil)
    }

    @Test func clientNameOfSixtyThreeBytesIsAllowed() throws {
        let name = String(repeating: "é", count: 31) + "x" // 63 bytes
        #expect(try parse("alsa:\n  client: \"\(name)\"\n").alsa?.client == name)
        #expect(try parse("alsa: { client: 12 }\n").alsa?.client == "12")
    }

    @Test func alsaBlockInAnotherFileIsTheDeclarationUsed() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let endpoints = try write("endpoints:\n  keys: { alsa: \"USB*\" }\n", to: "a.yaml", in: directory)
        let block = try write("# the rack\nalsa:\n  client: rack\n", to: "b.yaml", in: directory)
        let configuration = try RouteConfiguration.load(files: [endpoints, block])
        #expect(configuration.alsa == ALSADeclaration(
            client: "rack", location: MIDI.SourceLocation(file: block, line: 2, column: 1)))
    }

    // MARK: - Mistakes in the alsa block

    @Test func unknownALSABlockKey() {
        #expect(locatedMistakes("alsa:\n  clinet: rack\n") == ["r.yaml:2:3: unknown key 'clinet'; did you mean 'client'?"])
        #expect(locatedMistakes("alsa:\n  name: rack\n") == [
            "r.yaml:2:3: unknown key 'name' in the 'alsa' block; the keys are client",
        ])
    }

    @Test func emptyClientName() {
        let message = "the ALSA client name is empty; write the name other programs see, such as 'jambridge rack', "
            + "or leave 'client' out for 'jambridge'"
        #expect(locatedMistakes("alsa:\n  client: \"\"\n") == ["r.yaml:2:11: \(message)"])
        #expect(locatedMistakes("alsa:\n  client:\n") == ["r.yaml:2:3: \(message)"])
        #expect(locatedMistakes("alsa:\n  client: ~\n") == ["r.yaml:2:3: \(message)"])
    }

    @Test func clientNameOverSixtyThreeBytes() {
        let name = String(repeating: "é", count: 32) // 32 characters, 64 bytes
        #expect(locatedMistakes("alsa:\n  client: \(name)\n") == [
            "r.yaml:2:11: the ALSA client name is 64 bytes long; ALSA names are at most 63 bytes (UTF-8), so shorten it",
        ])
    }

    @Test func clientNameMustBeText() {
        #expect(locatedMistakes("alsa:\n  client: [a, b]\n") == [
            "r.yaml:2:11: 'client' is the ALSA client's name as text, such as 'jambridge rack', not a list",
        ])
    }

    @Test func alsaBlockMustBeAMapping() {
        #expect(locatedMistakes("alsa: jambridge rack\n") == [
            "r.yaml:1:7: 'alsa' is a mapping such as '{ client: jambridge rack }', not 'jambridge rack'",
        ])
        #expect(locatedMistakes("alsa: [a]\n") == [
            "r.yaml:1:7: 'alsa' is a mapping such as '{ client: jambridge rack }', not a list",
        ])
    }

    @Test func twoALSABlocksInTwoFiles() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try write("alsa:\n  client: A\n", to: "a.yaml", in: directory)
        let second = try write("# the other one\nalsa: { client: B }\n", to: "b.yaml", in: directory)
        do {
            _ = try RouteConfiguration.load(files: [first, second])
            Issue.record("two alsa blocks must be an error")
        } catch {
            #expect(error.errors.map(\.description) == [
                "\(second):2:1: the ALSA client is already declared at \(first):1:1; "
                    + "all route files together declare one 'alsa' block",
            ])
        }
    }

    // MARK: - Mistakes in alsa endpoints

    @Test func emptyALSAValue() {
        let forms = "a client name or glob such as \"USB Keyboard*\", \"CLIENT:PORT\" such as \"TR-8:0\", "
            + "or { create: NAME } for a port jambridge creates"
        #expect(locatedMistakes("endpoints:\n  x: { alsa: \"\" }\n") == ["r.yaml:2:14: 'alsa' is empty; write \(forms)"])
        #expect(locatedMistakes("endpoints:\n  x: { alsa: }\n") == ["r.yaml:2:8: 'alsa' is empty; write \(forms)"])
        #expect(locatedMistakes("endpoints:\n  x:\n    alsa:\n") == ["r.yaml:3:5: 'alsa' is empty; write \(forms)"])
    }

    @Test func alsaValueThatIsAList() {
        #expect(locatedMistakes("endpoints:\n  x: { alsa: [USB*, TR-8] }\n") == [
            "r.yaml:2:14: 'alsa' is a client name or glob such as \"USB Keyboard*\", \"CLIENT:PORT\" such as "
                + "\"TR-8:0\", or { create: NAME } for a port jambridge creates, not a list",
        ])
    }

    @Test func emptyClientBeforeTheColon() {
        #expect(locatedMistakes("endpoints:\n  x: { alsa: \":0\" }\n") == [
            "r.yaml:2:14: no ALSA client before ':' in ':0'; write the client's name or a glob, such as \"TR-8:0\"",
        ])
    }

    @Test func emptyPortAfterTheColon() {
        #expect(locatedMistakes("endpoints:\n  x: { alsa: \"TR-8:\" }\n") == [
            "r.yaml:2:14: no port after ':' in 'TR-8:'; write a port number 0-255 or a port name glob, "
                + "such as \"TR-8:0\", or leave ':' out for every port of the client",
        ])
    }

    @Test func portNumberOutOfRange() {
        let rest = "ALSA port numbers are 0-255 (see 'aconnect -l'), or write a port name glob"
        #expect(locatedMistakes("endpoints:\n  x: { alsa: \"TR-8:256\" }\n") == [
            "r.yaml:2:14: port 256 is out of range; \(rest)",
        ])
        #expect(locatedMistakes("endpoints:\n  x: { alsa: \"TR-8:99999999999999999999999\" }\n") == [
            "r.yaml:2:14: port 99999999999999999999999 is out of range; \(rest)",
        ])
    }

    @Test func clientNumbersAreRefused() {
        let rest = "which changes when devices are plugged in; write the client's name or a glob instead, "
            + "such as \"USB Keyboard*\" (see 'aconnect -l')"
        #expect(locatedMistakes("endpoints:\n  x: { alsa: \"20:0\" }\n") == [
            "r.yaml:2:14: '20' is an ALSA client number, \(rest)",
        ])
        #expect(locatedMistakes("endpoints:\n  x: { alsa: 20 }\n") == ["r.yaml:2:14: '20' is an ALSA client number, \(rest)"])
    }

    @Test func emptyCreatedPortName() {
        let message = "the port name is empty; write the name other programs see, such as { create: \"jam out\" }"
        #expect(locatedMistakes("endpoints:\n  x: { alsa: { create: \"\" } }\n") == ["r.yaml:2:24: \(message)"])
        #expect(locatedMistakes("endpoints:\n  x: { alsa: { create: } }\n") == ["r.yaml:2:16: \(message)"])
    }

    @Test func createdPortNameOverSixtyThreeBytes() {
        let name = String(repeating: "é", count: 32) // 64 bytes
        #expect(locatedMistakes("endpoints:\n  x: { alsa: { create: \(name) } }\n") == [
            "r.yaml:2:24: the port name is 64 bytes long; ALSA names are at most 63 bytes (UTF-8), so shorten it",
        ])
    }

    @Test func createdPortNameMustBeText() {
        #expect(locatedMistakes("endpoints:\n  x: { alsa: { create: [a] } }\n") == [
            "r.yaml:2:24: 'create' is the name of the port jambridge creates, such as \"jam out\", not a list",
        ])
    }

    @Test func unknownKeyInAnALSAMapping() {
        #expect(locatedMistakes("endpoints:\n  x: { alsa: { creat: out } }\n") == [
            "r.yaml:2:16: unknown key 'creat'; did you mean 'create'?",
        ])
        #expect(locatedMistakes("endpoints:\n  x: { alsa: { create: out, port: 3 } }\n") == [
            "r.yaml:2:29: unknown key 'port' in an 'alsa' mapping; the keys are create",
        ])
    }

    @Test func alsaMappingWithoutCreate() {
        #expect(locatedMistakes("endpoints:\n  x: { alsa: {} }\n") == [
            "r.yaml:2:14: an 'alsa' mapping needs 'create: NAME', the name of the port jambridge creates, "
                + "such as { create: \"jam out\" }",
        ])
    }

    @Test func twoEndpointsCreatingOnePort() {
        #expect(locatedMistakes("""
            endpoints:
              a: { alsa: { create: "jam out" } }
              b: { alsa: { create: "jam in" } }
              c: { alsa: { create: "jam out" } }
            """) == [
            "r.yaml:4:24: port 'jam out' is already created by endpoint 'a' at r.yaml:2:24; "
                + "give each created port its own name",
        ])
    }

    @Test func twoFilesCreatingOnePort() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try write("endpoints:\n  a: { alsa: { create: out } }\n", to: "a.yaml", in: directory)
        let second = try write("endpoints:\n  b: { alsa: { create: out } }\n", to: "b.yaml", in: directory)
        do {
            _ = try RouteConfiguration.load(files: [first, second])
            Issue.record("two endpoints creating one port must be an error")
        } catch {
            #expect(error.errors.map(\.description) == [
                "\(second):2:24: port 'out' is already created by endpoint 'a' at \(first):2:24; "
                    + "give each created port its own name",
            ])
        }
    }

    @Test func alsaCombinedWithAnotherKind() {
        let rest = "an endpoint is one of 'alsa' (ALSA ports), 'peer' (a session peer), 'file' (play a MIDI file) "
            + "or 'record' (record to a MIDI file)"
        #expect(locatedMistakes("endpoints:\n  x: { alsa: USB*, file: a.mid }\n") == [
            "r.yaml:2:20: 'alsa' and 'file' together: \(rest)",
        ])
        #expect(locatedMistakes("endpoints:\n  x: { peer: Mike, alsa: USB* }\n") == [
            "r.yaml:2:20: 'peer' and 'alsa' together: \(rest)",
        ])
        #expect(locatedMistakes("endpoints:\n  x: { alsa: USB*, loop: true }\n") == [
            "r.yaml:2:20: 'loop' applies to 'file' endpoints only",
        ])
    }

    @Test func misspelledALSAKeys() {
        #expect(locatedMistakes("endpoints:\n  x: { als: USB* }\n") == ["r.yaml:2:8: unknown key 'als'; did you mean 'alsa'?"])
        #expect(locatedMistakes("als:\n  client: rack\n") == [
            "r.yaml:1:1: unknown top-level key 'als'; did you mean 'alsa'? the known keys are "
                + "'session', 'alsa', 'clock', 'activity', 'drums', 'http', 'endpoints' and 'routes'",
        ])
    }

    /// The ALSA example of jambridge-routes(5), kept in step with the page by hand.
    @Test func manPageExample() throws {
        let configuration = try parse("""
            alsa:
              client: Studio Rack
            endpoints:
              keys: { alsa: "Launchkey*" }
              drums: { alsa: "TR-8:0" }
              synth: { alsa: "FLUID Synth*:Synth input*" }
              out: { alsa: { create: "jam out" } }
            routes:
              - from: keys
                to: [synth, out]
                channel: 1
              - from: drums
                to: out
                except: [clock, active-sensing]
              - from: session
                to: synth
            """)
        #expect(configuration.alsa == ALSADeclaration(client: "Studio Rack", location: at(1, 1)))
        #expect(configuration.endpoints.map(\.name) == ["keys", "drums", "synth", "out", "session"])
        #expect(configuration.routes.count == 3)
    }
}
