import Foundation
import RouteFile
import Testing
import Transport

/// The settings of the only endpoint of `endpoints:\n  phone: { osc: VALUE }`, VALUE written as `value`.
private func oscSettings(_ value: String) throws -> OSCEndpointSettings? {
    guard case .osc(let settings)? = try parse("endpoints:\n  phone: { osc: \(value) }\n").endpoints.first?.kind else {
        return nil
    }
    return settings
}

/// A route file whose one route, from the OSC endpoint `phone` to the session, has the `osc:` block `lines`
/// (written from line 7, column 7; the `osc` key is at 6:5).
private func oscRoute(_ lines: [String]) -> String {
    """
    endpoints:
      phone: { osc: { listen: 8000 } }
    routes:
      - from: phone
        to: session
        osc:

    """ + lines.map { "      \($0)\n" }.joined()
}

/// `oscRoute` with the block's lines as arguments.
private func oscRoute(_ lines: String...) -> String {
    oscRoute(lines)
}

/// The entries of the one route of `oscRoute(lines)`.
private func entries(_ lines: String...) throws -> [OSCMappingEntry] {
    try parse(oscRoute(lines)).routes.first?.osc?.entries ?? []
}

/// The control the one entry `line` of an `osc:` block maps to.
private func control(_ line: String) throws -> OSCControlMapping? {
    guard case .control(let control)? = try entries(line).first?.action else { return nil }
    return control
}

/// The motion mapping the one entry `line` of an `osc:` block maps to.
private func motion(_ line: String) throws -> MotionActivityMapping? {
    guard case .motion(let motion)? = try entries(line).first?.action else { return nil }
    return motion
}

@Suite struct RouteFileOSCTests {
    // MARK: - Endpoints

    @Test func everyEndpointKey() throws {
        let settings = try oscSettings("""
            { listen: 8000, reply: 9000, host: 127.0.0.1, send: ["127.0.0.1:57120", "studio.local:9001", "[::1]:9000"], \
            forget: 4 }
            """)
        #expect(settings == OSCEndpointSettings(
            listenHost: "127.0.0.1", listenPort: 8000, replyPort: 9000,
            targets: [OSCTarget(host: "127.0.0.1", port: 57120), OSCTarget(host: "studio.local", port: 9001),
                      OSCTarget(host: "::1", port: 9000)],
            forgetAfter: 4))
    }

    @Test func endpointDefaults() throws {
        let configuration = try parse("endpoints:\n  phone: { osc: { listen: 8000 } }\n")
        #expect(configuration.endpoints.first?.kind == .osc(OSCEndpointSettings(listenPort: 8000)))
        #expect(OSCEndpointSettings(listenPort: 8000).listenHost == "0.0.0.0")
        #expect(OSCEndpointSettings(listenPort: 8000).forgetAfter == OSCEndpointSettings.defaultForgetAfter)
        #expect(configuration.endpoints.allSatisfy { $0.canSend && $0.canReceive })
        #expect(configuration.session == nil && configuration.alsa == nil)
    }

    @Test func endpointValueForms() throws {
        #expect(try oscSettings("{ listen: 65535, host: \"::1\" }")?.listenHost == "::1")
        #expect(try oscSettings("{ listen: 1, send: \"10.0.0.2:9000\" }")?.targets == [OSCTarget(host: "10.0.0.2", port: 9000)])
        #expect(try oscSettings("{ listen: 8000, forget: 1.5s }")?.forgetAfter == 1.5)
        #expect(try oscSettings("{ listen: 8000, forget: 250ms }")?.forgetAfter == 0.25)
        #expect(try oscSettings("{ listen: 8000, forget: \"2 s\" }")?.forgetAfter == 2)
        #expect(try parse("endpoints:\n  phone:\n    osc:\n      listen: 8000\n      reply: 9000\n").endpoints.first?.kind
            == .osc(OSCEndpointSettings(listenPort: 8000, replyPort: 9000)))
    }

    @Test func endpointNeedsListen() {
        #expect(locatedMistakes("endpoints:\n  phone: { osc: { reply: 9000 } }\n") == [
            "r.yaml:2:17: an 'osc' endpoint needs 'listen: PORT', the UDP port controllers send to, such as "
                + "{ listen: 8000, reply: 9000 }",
        ])
        #expect(locatedMistakes("endpoints:\n  phone: { osc: 8000 }\n") == [
            "r.yaml:2:17: 'osc' is a mapping with the port controllers send to, such as { listen: 8000, reply: 9000 }, "
                + "not '8000'",
        ])
    }

    @Test func misspeltListenIsReportedOnce() {
        #expect(locatedMistakes("endpoints:\n  phone: { osc: { lisen: 8000 } }\n") == [
            "r.yaml:2:19: unknown key 'lisen'; did you mean 'listen'?",
        ])
        // Another mistake does not hide the missing 'listen'.
        #expect(locatedMistakes("endpoints:\n  phone: { osc: { reply: 0 } }\n") == [
            "r.yaml:2:17: an 'osc' endpoint needs 'listen: PORT', the UDP port controllers send to, such as "
                + "{ listen: 8000, reply: 9000 }",
            "r.yaml:2:26: 0 is out of range; 'reply' is a UDP port, 1-65535",
        ])
    }

    @Test func portsOutOfRange() {
        #expect(locatedMistakes("endpoints:\n  phone: { osc: { listen: 0, reply: 65536 } }\n") == [
            "r.yaml:2:27: 0 is out of range; 'listen' is a UDP port, 1-65535",
            "r.yaml:2:37: 65536 is out of range; 'reply' is a UDP port, 1-65535",
        ])
        #expect(locatedMistakes("endpoints:\n  phone: { osc: { listen: eight } }\n") == [
            "r.yaml:2:27: 'eight' is not a number; 'listen' is a UDP port, 1-65535",
        ])
    }

    @Test func listenHostIsNumeric() {
        let form = "the numeric address to listen on, such as 127.0.0.1 or ::1; leave 'host' out to listen on "
            + "every IPv4 interface (0.0.0.0)"
        #expect(locatedMistakes("endpoints:\n  phone: { osc: { listen: 8000, host: studio.local } }\n") == [
            "r.yaml:2:39: 'studio.local' is not a numeric address; 'host' is \(form)",
        ])
        #expect(locatedMistakes("endpoints:\n  phone: { osc: { listen: 8000, host: } }\n") == [
            "r.yaml:2:33: 'host' is empty; write \(form)",
        ])
    }

    @Test func acceptForms() throws {
        func accept(_ value: String) throws -> AddressAcceptance? {
            try oscSettings("{ listen: 8000, accept: \(value), send: \"127.0.0.1:9000\" }")?.accept
        }
        func prefixes(_ texts: String...) throws -> AddressAcceptance {
            .within(try texts.map { try NetworkPrefix(parsing: $0) })
        }
        #expect(try oscSettings("{ listen: 8000 }")?.accept == .local)
        #expect(try accept("anyone") == .anyone)
        #expect(try accept("none") == .within([]))
        #expect(try accept("local") == .local)
        #expect(try accept("192.168.1.0/24") == prefixes("192.168.1.0/24"))
        #expect(try accept("\"::1\"") == prefixes("::1"))
        #expect(try accept("[10.0.0.0/8, \"fd00::/8\", 127.0.0.2, \"2001:db8::7\", 0.0.0.0/0, \"::/0\"]")
            == prefixes("10.0.0.0/8", "fd00::/8", "127.0.0.2", "2001:db8::7", "0.0.0.0/0", "::/0"))
        #expect(try accept("[local, 100.64.0.0/10]") == .within(NetworkPrefix.localNetworks + [try NetworkPrefix(parsing: "100.64.0.0/10")]))
        #expect(try oscSettings("{ listen: 8000, accept: none, send: [\"127.0.0.1:9000\"] }")?.accept == .within([]))
    }

    @Test func acceptMistakesAreLocated() {
        let yaml = """
            endpoints:
              phone:
                osc:
                  listen: 8000
                  accept:
                    - studio.local
                    - 10.0.0.0/33
                    - "fe80::/129"
                    - 300.1.2.3
                    - 192.168.1.5/24
                    - 10.0.0.0/x
                    - "fe80::1%eth0"
                    - anyone
                    - [10.0.0.1]
                    -
              pad: { osc: { listen: 8001, accept: [] } }
              pd: { osc: { listen: 8002, accept: none } }
              tablet: { osc: { listen: 8003, accept: lokal } }
              ipad: { osc: { listen: 8004, accept: } }
            """
        #expect(locatedMistakes(yaml) == [
            "r.yaml:6:11: 'studio.local' is a host name, which 'accept' cannot match: senders are known by their "
                + "address; write its numeric address or its network, such as 192.168.1.0/24",
            "r.yaml:7:11: '10.0.0.0/33': /33 is out of range; an IPv4 prefix length is 0-32",
            "r.yaml:8:11: 'fe80::/129': /129 is out of range; an IPv6 prefix length is 0-128",
            "r.yaml:9:11: '300.1.2.3' is not a numeric IPv4 or IPv6 address; an 'accept' entry is an address or a "
                + "network such as 192.168.1.0/24 or fd00::/8",
            "r.yaml:10:11: '192.168.1.5/24' has address bits set beyond its /24 prefix; write the network "
                + "192.168.1.0/24, or 192.168.1.5 for that one address",
            "r.yaml:11:11: '10.0.0.0/x' has 'x' after '/', not a prefix length; an 'accept' entry is an address or a "
                + "network such as 192.168.1.0/24 or fd00::/8",
            "r.yaml:12:11: 'fe80::1%eth0' has a zone ('%eth0'), which 'accept' cannot match; write the address without it",
            "r.yaml:13:11: 'anyone' is a whole 'accept' value, not a list entry; write 'accept: anyone' alone",
            "r.yaml:14:11: an 'accept' entry is an address, a network such as 192.168.1.0/24, or local; not a list",
            "r.yaml:15:10: an 'accept' entry is an address, a network such as 192.168.1.0/24, or local; not empty",
            "r.yaml:16:39: 'accept' lists no senders; write 'none' to take from no sender",
            "r.yaml:17:38: with 'accept: none' and no 'send' targets the endpoint neither hears nor tells anyone; "
                + "'none' is for feedback to 'send' targets only, so add them or accept senders such as 'local'",
            "r.yaml:18:42: unknown 'accept' value 'lokal'; did you mean 'local'? 'accept' is anyone, none, local (this "
                + "machine and the local networks), an address or a network such as 192.168.1.0/24 or fd00::/8, "
                + "or a list of addresses, networks and local",
            "r.yaml:19:32: 'accept' needs a value: anyone, none, local (this machine and the local networks), an "
                + "address or a network such as 192.168.1.0/24 or fd00::/8, or a list of addresses, networks and local",
        ])
    }

    @Test func sendTargetMistakes() {
        let form = "a target is \"HOST:PORT\" such as \"127.0.0.1:57120\" or \"studio.local:9001\", "
            + "with an IPv6 address in brackets: \"[::1]:9000\""
        let yaml = """
            endpoints:
              phone:
                osc:
                  listen: 8000
                  send:
                    - studio.local
                    - "::1"
                    - "fd00::1:9000"
                    - "studio:local:9000"
                    - "[10.0.0.1]:9000"
                    - "studio_.-:9000"
                    - "studio.local:0"
                    - [a]
            """
        #expect(locatedMistakes(yaml) == [
            "r.yaml:6:11: 'studio.local' is not HOST:PORT; \(form)",
            "r.yaml:7:11: '::1' is an IPv6 address without a port; \(form)",
            "r.yaml:8:11: 'fd00::1:9000' is ambiguous; write the IPv6 address in brackets, such as \"[fd00::1]:9000\"",
            "r.yaml:9:11: 'studio:local' is not a numeric address or a host name; \(form)",
            "r.yaml:10:11: '10.0.0.1' in brackets is not an IPv6 address; \(form)",
            "r.yaml:11:11: 'studio_.-' is not a numeric address or a host name; \(form)",
            "r.yaml:12:11: '0' is not a port 1-65535; \(form)",
            "r.yaml:13:11: \(form), not a list",
        ])
        #expect(locatedMistakes("endpoints:\n  phone: { osc: { listen: 8000, send: } }\n") == [
            "r.yaml:2:33: 'send' is empty; write \"HOST:PORT\" or a list such as [\"127.0.0.1:57120\", \"[::1]:9000\"], "
                + "or leave 'send' out",
        ])
    }

    @Test func forgetIsADurationAboveZero() {
        let form = "'forget' is seconds such as 0.08, or a text such as \"80ms\" or \"1.5s\""
        #expect(locatedMistakes("endpoints:\n  phone: { osc: { listen: 8000, forget: 0 } }\n") == [
            "r.yaml:2:41: '0' is not a duration above 0, up to an hour; \(form)",
        ])
        #expect(locatedMistakes("endpoints:\n  phone: { osc: { listen: 8000, forget: soon } }\n") == [
            "r.yaml:2:41: 'soon' is not a duration above 0, up to an hour; \(form)",
        ])
        #expect(locatedMistakes("endpoints:\n  phone: { osc: { listen: 8000, forget: -1s } }\n") == [
            "r.yaml:2:41: '-1s' is not a duration above 0, up to an hour; \(form)",
        ])
        #expect(locatedMistakes("endpoints:\n  phone: { osc: { listen: 8000, forget: 3601 } }\n") == [
            "r.yaml:2:41: '3601' is not a duration above 0, up to an hour; \(form)",
        ])
    }

    @Test func oscCombinedWithAnotherKind() {
        #expect(locatedMistakes("endpoints:\n  x: { alsa: USB*, osc: { listen: 8000 } }\n") == [
            "r.yaml:2:20: 'alsa' and 'osc' together: an endpoint is one of 'alsa' (ALSA ports), 'osc' (OSC "
                + "controllers), 'peer' (a session peer), 'file' (play a MIDI file) or 'record' (record to a MIDI file)",
        ])
    }

    @Test func twoEndpointsCannotListenOnOnePort() throws {
        #expect(locatedMistakes("""
            endpoints:
              phone: { osc: { listen: 8000 } }
              tablet: { osc: { listen: 8000, host: 127.0.0.1 } }
              pad: { osc: { listen: 8000, host: "::1" } }
              pd: { osc: { listen: 8001, host: 127.0.0.1 } }
            """) == [
            "r.yaml:3:28: endpoint 'tablet' cannot listen on 127.0.0.1:8000: endpoint 'phone' at r.yaml:2:27 "
                + "listens on 0.0.0.0:8000; give each OSC endpoint its own 'listen' port",
        ])
        let directory = try temporaryDirectory()
        let first = try write("endpoints:\n  phone: { osc: { listen: 8000, host: \"::1\" } }\n", to: "a.yaml", in: directory)
        let second = try write("endpoints:\n  pad: { osc: { listen: 8000, host: \"::\" } }\n", to: "b.yaml", in: directory)
        #expect(throws: RouteFileErrors.self) { try RouteConfiguration.load(files: [first, second]) }
        do {
            _ = try RouteConfiguration.load(files: [first, second])
        } catch {
            #expect(error.errors.map(\.description) == [
                "\(second):2:25: endpoint 'pad' cannot listen on [::]:8000: endpoint 'phone' at \(first):2:27 "
                    + "listens on [::1]:8000; give each OSC endpoint its own 'listen' port",
            ])
        }
    }

    @Test func anEndpointCannotListenOnTheSessionsPorts() {
        #expect(locatedMistakes("""
            session: { port: 6000, bind: 127.0.0.1 }
            endpoints:
              phone: { osc: { listen: 6001 } }
              tablet: { osc: { listen: 6000, host: "::1" } }
              pad: { osc: { listen: 6002 } }
            """) == [
            "r.yaml:3:27: endpoint 'phone' cannot listen on 0.0.0.0:6001: the session (at r.yaml:1:1) uses UDP ports "
                + "6000 and 6001; give the OSC endpoint another 'listen' port",
        ])
        // A session no file declares, used by a route, takes the default ports on every address.
        #expect(locatedMistakes("""
            endpoints:
              phone: { osc: { listen: 5004, host: 127.0.0.1 } }
            routes:
              - { from: phone, to: session }
            """) == [
            "r.yaml:2:27: endpoint 'phone' cannot listen on 127.0.0.1:5004: the session (at r.yaml:4:24) uses UDP "
                + "ports 5004 and 5005; give the OSC endpoint another 'listen' port",
        ])
    }

    // MARK: - The osc block's forms

    @Test func aRouteWithoutABlockSpeaksMIDIOverOSC() throws {
        let configuration = try parse("""
            endpoints:
              phone: { osc: { listen: 8000 } }
              keys: { alsa: "USB*" }
            routes:
              - from: phone
                to: session
              - from: session
                to: phone
              - from: keys
                to: session
            """)
        #expect(configuration.routes.map(\.osc) == [
            OSCRouteMapping(entries: [], midi: true, location: at(5, 5)),
            OSCRouteMapping(entries: [], midi: true, location: at(7, 5)),
            nil,
        ])
    }

    @Test func midiShorthandAndFlag() throws {
        let shorthand = try parse(oscRoute().replacingOccurrences(of: "osc:\n", with: "osc: midi\n"))
        #expect(shorthand.routes.first?.osc == OSCRouteMapping(entries: [], midi: true, location: at(6, 5)))
        let flagged = try parse(oscRoute("midi: true", "/volume: { cc: 7 }")).routes.first?.osc
        #expect(flagged?.midi == true && flagged?.entries.count == 1)
        let entriesAlone = try parse(oscRoute("/volume: { cc: 7 }")).routes.first?.osc
        #expect(entriesAlone?.midi == false)
        let neither = try parse(oscRoute("midi: false")).routes.first?.osc
        #expect(neither == OSCRouteMapping(entries: [], midi: false, location: at(6, 5)))
    }

    @Test func templates() throws {
        let found = try entries("/1/fader<n>: { cc: n }", "/1/push<n:1-16>/z: { note: n }", "/accxyz: { activity: motion }")
        #expect(found.map(\.template.pieces) == [
            [.literal("/1/fader"), .capture(name: "n", range: nil)],
            [.literal("/1/push"), .capture(name: "n", range: 1...16), .literal("/z")],
            [.literal("/accxyz")],
        ])
        #expect(found.map(\.template.description) == ["/1/fader<n>", "/1/push<n:1-16>/z", "/accxyz"])
        #expect(found.map(\.location) == [at(7, 7), at(8, 7), at(9, 7)])
        let two = try entries("/pad<row:0-3>/<col:0-3>: { note: \"row + 36\", channel: \"col + 1\" }")
        #expect(two.first?.template.captureNames == ["row", "col"])
    }

    @Test func controlDefaults() throws {
        let volume = try control("/volume: { cc: 7 }")
        #expect(volume == OSCControlMapping(target: .controllers([.constant(7)]), output: (0, 127)))
        #expect(volume?.channel == .constant(1) && volume?.arguments == [0] && volume?.input == 0...1)
        #expect(volume?.exponent == 1 && volume?.smoothing == 0)
        #expect(try control("/pitch: { pitchbend: true }")
            == OSCControlMapping(target: .pitchBend, output: (-8192, 8191)))
        #expect(try control("/program: { program: yes }") == OSCControlMapping(target: .program, output: (0, 127)))
        #expect(try control("/touch: { pressure: true }")
            == OSCControlMapping(target: .channelPressure, output: (0, 127)))
        #expect(try control("/kick: { note: 36 }")
            == OSCControlMapping(target: .note(.constant(36), velocity: OSCControlTarget.defaultNoteVelocity),
                                 output: (0, 127)))
    }

    @Test func everyControlKey() throws {
        #expect(try control("""
            /1/fader<n:1-8>: { cc: "n + 20", channel: 2, arg: 1, from: [-1, 1.5], to: [127, 0], curve: 2, smooth: 80ms }
            """) == OSCControlMapping(target: .controllers([OSCNumber(capture: "n", offset: 20)]), channel: .constant(2),
                                      arguments: [1], input: -1...1.5, output: (127, 0), exponent: 2, smoothing: 0.08))
        #expect(try control("/1/xy: { cc: [12, 13] }")
            == OSCControlMapping(target: .controllers([.constant(12), .constant(13)]), arguments: [0, 1], output: (0, 127)))
        #expect(try control("/1/xy: { cc: [12, 13], args: [1, 0] }")?.arguments == [1, 0])
        #expect(try control("/1/push<n>: { note: \"n + 35\", velocity: 90, channel: 10 }")
            == OSCControlMapping(target: .note(OSCNumber(capture: "n", offset: 35), velocity: 90), channel: .constant(10),
                                 output: (0, 127)))
        #expect(try control("/kick: { note: C2 }")?.target == .note(.constant(36), velocity: 100))
        #expect(try control("/ch<c:1-16>/vol: { cc: 7, channel: c }")?.channel == OSCNumber(capture: "c", offset: 0))
        #expect(try control("/ch<c:0-15>/vol: { cc: 7, channel: c+1 }")?.channel == OSCNumber(capture: "c", offset: 1))
        #expect(try control("/k<n:2-9>: { cc: n - 2 }")?.target == .controllers([OSCNumber(capture: "n", offset: -2)]))
        #expect(try control("/pitch: { pitchbend: true, to: [-4096, 4095], smooth: 0 }").map { [$0.output.low, $0.output.high] } == [-4096, 4095])
        #expect(try control("/fader: { cc: 1, smooth: 0.25 }")?.smoothing == 0.25)
    }

    @Test func motionDefaultsAndKeys() throws {
        #expect(try motion("/accxyz: { activity: motion }") == MotionActivityMapping())
        #expect(try motion("""
            /accxyz: { activity: motion, axes: [2, 0], units: m/s2, high-pass: 1, attack: 20ms, release: 2, \
            range: [0.1, 0.9], cc: 12, channel: 3 }
            """) == MotionActivityMapping(axes: [2, 0], unitsPerG: 9.80665, highPass: 1, attack: 0.02, release: 2,
                                          range: 0.1...0.9, controller: 12, channel: 3))
        #expect(try motion("/gyro: { activity: motion, units: g }")?.unitsPerG == 1)
    }

    /// The TouchOSC example of jambridge-routes(5), kept in step with the page by hand.
    @Test func theManPageExample() throws {
        let configuration = try parse("""
            endpoints:
              phone: { osc: { listen: 8000, reply: 9000 } }
            routes:
              - from: phone
                to: session
                osc:
                  /1/fader<n:1-8>: { cc: "n + 20" }
                  /1/push<n:1-16>: { note: "n + 35", channel: 10 }
                  /3/xy: { cc: [12, 13] }
                  /accxyz: { activity: motion }
              - from: session
                to: phone
                only: [cc]
                osc: { midi: false }
            """)
        #expect(configuration.endpoints.first?.kind == .osc(OSCEndpointSettings(listenPort: 8000, replyPort: 9000)))
        #expect(configuration.routes.map { $0.osc?.entries.count } == [4, 0])
        #expect(configuration.routes.map { $0.osc?.midi } == [false, false])
    }

    /// jambridge-routes(5) states the defaults of `activity: motion`; they are tuned in `MotionActivityMapping`.
    @Test func theManPageStatesTheMotionDefaults() throws {
        let page = try String(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("man/jambridge-routes.5"),
                              encoding: .utf8)
        let section = try #require(page.range(of: ".Ss OSC mappings")).upperBound
        let usual = MotionActivityMapping()
        let stated = [
            ("high-pass : Ar hertz", "The default is \(usual.highPass)."),
            ("attack : Ar duration", "The default is \(usual.attack) seconds."),
            ("release : Ar duration", "The default is \(usual.release) seconds."),
            ("range : Li", "[\(usual.range.lowerBound), \(usual.range.upperBound)]"),
            ("cc : Ar controller", "The default is \(usual.controller),"),
            ("channel : Ar channel", "The default is \(usual.channel)."),
        ]
        for (item, text) in stated {
            // The lines of the item `.It Ic KEY ...` up to the next item.
            let start = try #require(page.range(of: ".It Ic \(item)", range: section..<page.endIndex),
                                     "no '\(item)' item")
            let rest = page[start.upperBound...]
            let entry = rest[..<(rest.range(of: "\n.It ")?.lowerBound ?? rest.endIndex)]
            #expect(entry.contains(text), "jambridge-routes(5) '\(item)' should say \(text)")
        }
        #expect(usual.axes == [0, 1, 2] && usual.unitsPerG == 1)
    }

    // MARK: - Mistakes in the osc block

    @Test func aBlockNeedsAnOSCEndpoint() {
        let rest = "so route from or to an 'osc' endpoint or remove the block"
        let base = "endpoints:\n  keys: { alsa: USB* }\n  song: { file: a.mid }\nroutes:\n"
        #expect(locatedMistakes(base + "  - from: keys\n    to: keys\n    osc: midi\n") == [
            "r.yaml:7:5: the 'osc' block translates for an OSC endpoint at either end of the route; 'keys' is not one, \(rest)",
        ])
        #expect(locatedMistakes(base + "  - from: keys\n    to: session\n    osc: midi\n") == [
            "r.yaml:7:5: the 'osc' block translates for an OSC endpoint at either end of the route; "
                + "neither 'keys' nor 'session' is one, \(rest)",
        ])
        #expect(locatedMistakes(base + "  - from: [keys, song]\n    to: session\n    osc: midi\n") == [
            "r.yaml:7:5: the 'osc' block translates for an OSC endpoint at either end of the route; "
                + "none of 'keys', 'song' and 'session' is one, \(rest)",
        ])
    }

    @Test func blockForms() {
        let forms = "'midi' (the MIDI-over-OSC family) or a mapping of OSC addresses such as { /1/fader1: { cc: 74 } }"
        #expect(locatedMistakes(oscRoute().replacingOccurrences(of: "osc:\n", with: "osc: mdi\n")) == [
            "r.yaml:6:10: unknown 'osc' value 'mdi'; 'osc' is \(forms)",
        ])
        #expect(locatedMistakes(oscRoute().replacingOccurrences(of: "osc:\n", with: "osc: {}\n")) == [
            "r.yaml:6:10: an empty 'osc' block; 'osc' is \(forms), or { midi: false } for neither",
        ])
        #expect(locatedMistakes(oscRoute()) == [
            "r.yaml:6:5: an empty 'osc' block; 'osc' is \(forms), or { midi: false } for neither",
        ])
        #expect(locatedMistakes(oscRoute().replacingOccurrences(of: "osc:\n", with: "osc: [midi]\n")) == [
            "r.yaml:6:10: 'osc' is \(forms), not a list",
        ])
    }

    @Test func unknownBlockKeys() {
        #expect(locatedMistakes(oscRoute("mid: true", "1/fader1: { cc: 7 }", "midi: maybe")) == [
            "r.yaml:7:7: unknown key 'mid'; did you mean 'midi'?",
            "r.yaml:8:7: '1/fader1' is neither an OSC address (addresses start with '/', such as /1/fader1) nor 'midi'",
            "r.yaml:9:13: 'midi' is true or false, not 'maybe'",
        ])
    }

    @Test func patternCharactersInTemplates() {
        let reason = "an OSC pattern character: patterns match several addresses; write a capture such as <n> instead"
        #expect(locatedMistakes(oscRoute("/1/fader*: { cc: 7 }", "\"/1/{a,b}\": { cc: 8 }", "/1/push?: { cc: 9 }",
                                         "/1/[12]: { cc: 10 }")) == [
            "r.yaml:7:7: '/1/fader*' has '*', \(reason)",
            "r.yaml:8:7: '/1/{a,b}' has '{', \(reason)",
            "r.yaml:9:7: '/1/push?' has '?', \(reason)",
            "r.yaml:10:7: '/1/[12]' has '[', \(reason)",
        ])
    }

    @Test func charactersAnAddressCannotHold() {
        #expect(locatedMistakes(oscRoute("/my fader: { cc: 7 }", "/a#b: { cc: 8 }", "/a,b: { cc: 9 }",
                                         "/fadér: { cc: 10 }", "/a>b: { cc: 11 }")) == [
            "r.yaml:7:7: '/my fader' has a space; OSC addresses have none",
            "r.yaml:8:7: '/a#b' has '#', which OSC addresses cannot hold ('#' marks a bundle, ',' starts the type tags)",
            "r.yaml:9:7: '/a,b' has ',', which OSC addresses cannot hold ('#' marks a bundle, ',' starts the type tags)",
            "r.yaml:10:7: '/fadér' has 'é'; OSC addresses are printable ASCII",
            "r.yaml:11:7: '/a>b' has '>' without '<'; a capture is written <n> or <n:1-8>",
        ])
    }

    @Test func emptyAddressParts() {
        let rest = "has an empty part; write one '/' between parts and none at the end (OSC 1.1 reads '//' as a wildcard)"
        #expect(locatedMistakes(oscRoute("//fader: { cc: 7 }", "/1/fader/: { cc: 8 }", "/: { cc: 9 }")) == [
            "r.yaml:7:7: '//fader' \(rest)",
            "r.yaml:8:7: '/1/fader/' \(rest)",
            "r.yaml:9:7: '/' \(rest)",
        ])
    }

    @Test func captureMistakes() {
        #expect(locatedMistakes(oscRoute("/fader<n: { cc: 7 }", "/fader<N>: { cc: 8 }", "/f<>: { cc: 9 }",
                                         "/<n>/<n>: { cc: 10 }", "/f<n:8-1>: { cc: 11 }", "/f<n:1..8>: { cc: 12 }",
                                         "/f<n:-1-8>: { cc: 13 }", "/f<a><b>: { cc: 14 }")) == [
            "r.yaml:7:7: '<' in '/fader<n' opens a capture that is never closed; write <n> or <n:1-8>",
            "r.yaml:8:7: '<N>' in '/fader<N>' needs a name in lowercase letters, digits and '_' starting with a letter, "
                + "such as <n> or <pad:1-4>",
            "r.yaml:9:7: '<>' in '/f<>' needs a name in lowercase letters, digits and '_' starting with a letter, "
                + "such as <n> or <pad:1-4>",
            "r.yaml:10:7: capture <n> appears twice in '/<n>/<n>'; give each capture its own name",
            "r.yaml:11:7: the range of '<n:8-1>' in '/f<n:8-1>' goes down; write <n:1-8>",
            "r.yaml:12:7: '<n:1..8>' in '/f<n:1..8>' has no range LOW-HIGH of whole numbers; write such as <n:1-8>",
            "r.yaml:13:7: '<n:-1-8>' in '/f<n:-1-8>' has no range LOW-HIGH of whole numbers; write such as <n:1-8>",
            "r.yaml:14:7: captures <a> and <b> side by side in '/f<a><b>' cannot tell where one number ends and the "
                + "next begins; put text between them, such as <a>/<b>",
        ])
    }

    @Test func anEntryNeedsAMapping() {
        #expect(locatedMistakes(oscRoute("/volume: 7", "/pan:")) == [
            "r.yaml:7:16: '/volume' needs what it becomes, such as { cc: 74 }, { note: 36 } or { activity: motion }",
            "r.yaml:8:7: '/pan' needs what it becomes, such as { cc: 74 }, { note: 36 } or { activity: motion }",
        ])
    }

    @Test func exactlyOneTarget() {
        let choices = "cc, note, pitchbend, program or pressure"
        #expect(locatedMistakes(oscRoute("/volume: { channel: 2 }", "/both: { cc: 7, note: 36, program: true }")) == [
            "r.yaml:7:16: '/volume' becomes no MIDI; write one of \(choices), or 'activity: motion'",
            "r.yaml:8:23: 'cc' and 'note' together: an OSC control becomes one of \(choices)",
            "r.yaml:8:33: 'cc' and 'program' together: an OSC control becomes one of \(choices)",
        ])
        #expect(locatedMistakes(oscRoute("/bend: { pitchbend: false }", "/p: { program: 3 }")) == [
            "r.yaml:7:27: 'pitchbend: false' becomes nothing; write 'pitchbend: true' or another target",
            "r.yaml:8:22: 'program' is true or false, not '3'",
        ])
    }

    @Test func unknownControlKeys() {
        #expect(locatedMistakes(oscRoute("/volume: { cc: 7, chanel: 2 }", "/acc: { activty: motion }",
                                         "/x: { cc: 1, banana: 2 }")) == [
            "r.yaml:7:25: unknown key 'chanel'; did you mean 'channel'?",
            "r.yaml:8:15: unknown key 'activty'; did you mean 'activity'?",
            "r.yaml:9:20: unknown key 'banana' in an OSC control; the keys are cc, note, velocity, pitchbend, program, "
                + "pressure, channel, arg, args, from, to, curve, smooth, activity",
        ])
        #expect(locatedMistakes(oscRoute("/volume: { chanel: 2 }")) == [
            "r.yaml:7:16: '/volume' becomes no MIDI; write one of cc, note, pitchbend, program or pressure, "
                + "or 'activity: motion'",
            "r.yaml:7:18: unknown key 'chanel'; did you mean 'channel'?",
        ])
    }

    @Test func expressionsNameTheTemplatesCaptures() {
        #expect(locatedMistakes(oscRoute("/1/fader<n>: { cc: \"m + 20\" }", "/volume: { cc: n }",
                                         "/pad<row>/<col>: { note: x, channel: \"row * 2\" }")) == [
            "r.yaml:7:26: 'm' is not a capture of '/1/fader<n>'; its captures are n",
            "r.yaml:8:22: 'n' is not a capture: '/volume' has none; write a number 0-127, or a capture such as <n> "
                + "in the address",
            "r.yaml:9:32: 'x' is not a capture of '/pad<row>/<col>'; its captures are row, col",
            "r.yaml:9:44: 'row * 2' is not a number or a capture expression; 'channel' is a number 1-16, a capture "
                + "such as row, or \"row + 20\" or \"row - 1\"",
        ])
    }

    @Test func numbersOutOfRange() {
        #expect(locatedMistakes(oscRoute("/a: { cc: 128 }", "/b: { note: -1, channel: 17 }",
                                         "/c<n:1-8>: { cc: \"n + 120\" }", "/d<n:0-15>: { cc: 1, channel: n }",
                                         "/e: { cc: 1 + 2 }")) == [
            "r.yaml:7:17: cc 128 is out of range; 'cc' is 0-127",
            "r.yaml:8:19: note -1 is out of range; 'note' is 0-127",
            "r.yaml:8:32: channel 17 is out of range; 'channel' is 1-16",
            "r.yaml:9:24: 'cc: n + 120' gives 121-128 for <n:1-8>; 'cc' is 0-127",
            "r.yaml:10:37: 'channel: n' gives 0-15 for <n:0-15>; 'channel' is 1-16",
            "r.yaml:11:17: '1 + 2' is not a number or a capture expression; 'cc' is a number 0-127, a capture such "
                + "as n, or \"n + 20\" or \"n - 1\"",
        ])
    }

    @Test func keysThatDoNotApplyToTheTarget() {
        let button = "does not apply to 'note': a button is on above the middle of 'from' and off at or below it"
        #expect(locatedMistakes(oscRoute("/a: { cc: 7, velocity: 90 }",
                                         "/b: { note: 36, to: [0, 127], curve: 2, smooth: 0.1, velocity: 0 }")) == [
            "r.yaml:7:20: 'velocity' applies to 'note' only; a cc has none",
            "r.yaml:8:23: 'to' \(button)",
            "r.yaml:8:37: 'curve' \(button)",
            "r.yaml:8:47: 'smooth' \(button)",
            "r.yaml:8:70: 0 is out of range; 'velocity' is 1-127 (0 would be a note-off)",
        ])
    }

    @Test func argumentSelection() {
        #expect(locatedMistakes(oscRoute("/a: { cc: 7, arg: 1, args: [1] }", "/b: { cc: [1, 2], arg: 0 }",
                                         "/c: { cc: [1, 2], args: [0] }", "/d: { cc: 1, arg: -1 }",
                                         "/e: { cc: 1, args: 0 }")) == [
            "r.yaml:7:28: 'arg' and 'args' together: write 'arg: I' for one argument or 'args: [I, J]' for several",
            "r.yaml:8:25: 'arg' selects one argument for 2 controllers; write 'args' with one index per controller, "
                + "such as args: [0, 1]",
            "r.yaml:9:31: 'args' needs one argument index per value sent (2 here), not 1 index; a list such as [0, 1]",
            "r.yaml:10:25: -1 is out of range; 'arg' is an argument index, 0 for the first",
            "r.yaml:11:26: 'args' needs one argument index per value sent (1 here), not no list; a list such as [0]",
        ])
    }

    @Test func inputAndOutputRanges() {
        #expect(locatedMistakes(oscRoute("/a: { cc: 1, from: [1, 0] }", "/b: { cc: 1, from: [0.5, 0.5] }",
                                         "/c: { cc: 1, from: [0, nan] }", "/d: { cc: 1, from: 1 }",
                                         "/e: { cc: 1, to: [0, 128] }", "/f: { pitchbend: true, to: [-8193, 0] }")) == [
            "r.yaml:7:26: the input range [1, 0] goes down; write [0, 1] and invert with 'to'",
            "r.yaml:8:26: the input range [0.5, 0.5] is empty; write [low, high] with low below high",
            "r.yaml:9:30: 'nan' is not a number; 'from' takes numbers such as 0.5",
            "r.yaml:10:26: 'from' is a list of two, [LOW, HIGH] such as [0, 1], not '1'",
            "r.yaml:11:28: 128 is out of range; 'to' is two values 0-127",
            "r.yaml:12:35: -8193 is out of range; 'to' is two values -8192-8191",
        ])
    }

    @Test func curvesAndSmoothing() {
        #expect(locatedMistakes(oscRoute("/a: { cc: 1, curve: 0 }", "/b: { cc: 1, smooth: -0.1 }",
                                         "/c: { cc: 1, smooth: fast }")) == [
            "r.yaml:7:27: 'curve' is a number above 0 (1 is straight, 2 bends slowly up, 0.5 quickly up), not '0'",
            "r.yaml:8:28: '-0.1' is not a duration 0 or more, up to an hour; 'smooth' is seconds such as 0.08, or a text such as "
                + "\"80ms\" or \"1.5s\"",
            "r.yaml:9:28: 'fast' is not a duration 0 or more, up to an hour; 'smooth' is seconds such as 0.08, or a text such as "
                + "\"80ms\" or \"1.5s\"",
        ])
    }

    // MARK: - Mistakes in motion entries

    @Test func motionMistakes() {
        let usual = MotionActivityMapping()
        #expect(locatedMistakes(oscRoute(
            "/a: { activity: moton }",
            "/b: { activity: motion, axes: [0, 0] }",
            "/c: { activity: motion, axes: [0, 1, 2, 3], units: ms2 }",
            "/d: { activity: motion, high-pass: 0, attack: 0, release: never }",
            "/e: { activity: motion, range: [1, 0.5], cc: 128, channel: 0, smooth: 1 }")) == [
            "r.yaml:7:23: unknown activity 'moton'; did you mean 'motion'? this version reads 'activity: motion' "
                + "(an accelerometer)",
            "r.yaml:8:37: 'axes' names an argument twice; list each axis once, such as [0, 1, 2]",
            "r.yaml:9:37: 'axes' lists the indexes of the x, y and z arguments, one to three, such as [0, 1, 2]",
            "r.yaml:9:58: unknown units 'ms2'; did you mean 'm/s2'? 'units' is g or m/s2",
            "r.yaml:10:42: 'high-pass' is a cutoff in Hz above 0, such as \(usual.highPass), not 0",
            "r.yaml:10:53: '0' is not a duration above 0, up to an hour; 'attack' is seconds such as 0.08, or a text such as "
                + "\"80ms\" or \"1.5s\"",
            "r.yaml:10:65: 'never' is not a duration above 0, up to an hour; 'release' is seconds such as 0.08, or a text such as "
                + "\"80ms\" or \"1.5s\"",
            "r.yaml:11:38: 'range' is [LOW, HIGH] in g with 0 <= LOW < HIGH, such as "
                + "[\(usual.range.lowerBound), \(usual.range.upperBound)], not [1, 0.5]",
            "r.yaml:11:52: controller 128 does not exist; controllers are 0-127",
            "r.yaml:11:66: channel 0 does not exist; channels are 1-16",
            "r.yaml:11:69: unknown key 'smooth' in 'activity: motion'; the keys are activity, axes, units, high-pass, "
                + "attack, release, range, cc, channel",
        ])
    }

    @Test func everyMistakeIsReportedOnce() {
        // The route from the endpoint with mistakes is checked too, without repeating them as an unknown endpoint.
        #expect(locatedMistakes("""
            endpoints:
              phone: { osc: { listen: 0, forget: 0 } }
            routes:
              - from: phone
                to: session
                osc:
                  /a*: { cc: 1 }
                  /b: { cc: 200, channel: 0 }
            """).map { $0.split(separator: ":").prefix(3).joined(separator: ":") } == [
            "r.yaml:2:27", "r.yaml:2:38", "r.yaml:7:7", "r.yaml:8:17", "r.yaml:8:31",
        ])
    }
}
