import Jam
import MIDI
import RouteFile
import Routing
import Testing

/// The `clock:` and `activity:` blocks and the routes' `control:` key.
@Suite struct RouteFileJamTests {
    private let endpoints = """
        endpoints:
          drums: { alsa: "TR-8" }
          synth: { alsa: "FLUID*" }
        routes:
          - { from: drums, to: synth }

        """

    @Test func noBlockNoJam() throws {
        #expect(try parse(endpoints).jam == nil)
    }

    @Test func eitherBlockTurnsTheJamOnWithTheOthersDefaults() throws {
        let clock = try #require(try parse("clock: first-start\n" + endpoints).jam)
        #expect(clock.policy == .firstStart && clock.onMasterLost == .stop && clock.tempo == 120 && clock.clockOutputs.isEmpty)
        #expect(clock.activity == ActivityConfiguration())
        #expect(clock.location == at(1, 1))
        let activity = try #require(try parse("activity: { combine: max }\n" + endpoints).jam)
        #expect(activity.activity.combine == .max && activity.policy == .firstStart && activity.location == at(1, 1))
    }

    @Test func everyClockKey() throws {
        let jam = try #require(try parse("""
            clock:
              priority: [teacher, "ipad*"]
              on-master-lost: next
              tempo: 96.5
              to: [drums, synth]
            activity:
              level: { cc: 1, channel: 2 }
              total: { cc: 70 }
              combine: mean

            """ + endpoints).jam)
        #expect(jam.policy == .priority([NameGlob("teacher"), NameGlob("ipad*")]))
        #expect(jam.onMasterLost == .next && jam.tempo == 96.5 && jam.clockOutputs == ["drums", "synth"])
        #expect(jam.activity.player == ControllerAddress(channel: UInt4(masking: 1), controller: UInt7(masking: 1)))
        #expect(jam.activity.total == ControllerAddress(channel: UInt4(masking: 0), controller: UInt7(masking: 70)))
        #expect(jam.activity.combine == .mean)
        #expect(try parse("clock: { fixed: drums }\n" + endpoints).jam?.policy == .fixed(NameGlob("drums")))
    }

    /// `link:` shares the jam with an Ableton Link session: off unless written, bars of 4 beats unless `quantum:` says.
    @Test func linkIsOffUnlessWritten() throws {
        #expect(try parse("clock: {}\n" + endpoints).jam?.link == nil)
        #expect(try parse("clock: { link: false }\n" + endpoints).jam?.link == nil)
        #expect(try parse("clock: { link: true }\n" + endpoints).jam?.link == LinkSettings(quantum: 4))
        #expect(try parse("clock: { link: {} }\n" + endpoints).jam?.link == LinkSettings(quantum: 4))
        #expect(try parse("clock: { link: { quantum: 3 } }\n" + endpoints).jam?.link == LinkSettings(quantum: 3))
        #expect(locatedMistakes("clock: { link: { quantum: 0, phase: 1 } }\n" + endpoints) == [
            "r.yaml:1:27: 'quantum' is the beats in a bar that Link apps start on, 1-16, such as 4",
            "r.yaml:1:30: unknown key 'phase' in 'link'; the keys are quantum, interfaces",
        ])
        #expect(locatedMistakes("clock: { link: [4] }\n" + endpoints) == [
            "r.yaml:1:16: 'link' is true, false or a mapping such as '{ quantum: 4 }', not a list",
        ])
    }

    /// `link: { interfaces: [...] }` names where Link may listen and send (issue 41): each an interface name, once.
    @Test func linkInterfacesAreNamesEachOnce() throws {
        #expect(try parse("clock: { link: { interfaces: [eth0, lo] } }\n" + endpoints).jam?.link
                == LinkSettings(quantum: 4, interfaces: ["eth0", "lo"]))
        #expect(locatedMistakes("clock: { link: { interfaces: [eth0, \"a/b\", averyveryverylongname, eth0] } }\n" + endpoints) == [
            "r.yaml:1:37: 'interfaces' lists the network interfaces Link may use, by name, such as [eth0] or [wlan0, lo]; "
                + "'a/b' is not an interface name (1-15 characters, no '/', ':' or spaces)",
            "r.yaml:1:44: 'interfaces' lists the network interfaces Link may use, by name, such as [eth0] or [wlan0, lo]; "
                + "'averyveryverylongname' is not an interface name (1-15 characters, no '/', ':' or spaces)",
            "r.yaml:1:67: 'eth0' is listed twice in 'interfaces'",
        ])
        #expect(locatedMistakes("clock: { link: { interfaces: eth0 } }\n" + endpoints) == [
            "r.yaml:1:30: 'interfaces' lists the network interfaces Link may use, by name, such as [eth0] or [wlan0, lo], "
                + "not 'eth0' (a single name goes in a list)",
        ])
        #expect(locatedMistakes("clock: { link: { interfaces: [] } }\n" + endpoints) == [
            "r.yaml:1:30: 'interfaces' lists the network interfaces Link may use, by name, such as [eth0] or [wlan0, lo]; "
                + "leave it out for every interface",
        ])
    }

    @Test func mistakesAreLocated() {
        #expect(locatedMistakes("clock: { fixed: a, priority: [b] }\n" + endpoints) == [
            "r.yaml:1:20: 'fixed' and 'priority' together: the clock master is chosen one way, 'first-start' (the "
                + "default), 'fixed: NAME' or 'priority: [NAME, ...]'",
        ])
        #expect(locatedMistakes("clock: { tempo: 0, on-master-lost: later, to: [drumz, session] }\n" + endpoints) == [
            "r.yaml:1:17: 'tempo' is beats a minute, 20-300, such as 120",
            "r.yaml:1:36: 'on-master-lost' is 'stop' (the rhythm ends) or 'next' (this instance continues the song), not 'later'",
            "r.yaml:1:48: unknown endpoint 'drumz'; did you mean 'drums'? declared endpoints: drums, synth",
            "r.yaml:1:55: the session gets the clock whenever this instance leads; list only local outputs in the clock's 'to'",
        ])
        #expect(locatedMistakes("activity: { level: { cc: 7 }, combine: median, speed: 3 }\n" + endpoints) == [
            "r.yaml:1:11: the level and the total are the same controller; give the total another ('total: { cc: 7 }')",
            "r.yaml:1:40: 'combine' is 'sum' (held at 127), 'mean' or 'max', not 'median'",
            "r.yaml:1:48: unknown key 'speed' in the 'activity' block; the keys are level, total, combine",
        ])
        #expect(locatedMistakes("activity: { total: { cc: 128, channel: 17 } }\n" + endpoints) == [
            "r.yaml:1:26: controller 128 does not exist; controllers are 0-127",
            "r.yaml:1:40: channel 17 does not exist; channels are 1-16",
        ])
    }

    @Test func oneClockAndOneActivityAcrossFiles() throws {
        let directory = try temporaryDirectory()
        let first = try write("clock: {}\nactivity: {}\n" + endpoints, to: "a.yaml", in: directory)
        let second = try write("clock: { tempo: 90 }\nactivity: {}\n", to: "b.yaml", in: directory)
        #expect(throws: RouteFileErrors.self) { try RouteConfiguration.load(files: [first, second]) }
        do {
            _ = try RouteConfiguration.load(files: [first, second])
        } catch {
            #expect(error.errors.map(\.message) == [
                "the clock is already declared at \(first):1:1; all route files together declare one 'clock' block",
                "the activity is already declared at \(first):2:1; all route files together declare one 'activity' block",
            ])
        }
    }

    /// With a jam, routes leave the level and total controllers out unless they say `control: true`.
    @Test func routesCarryTheJamsControllersOnlyWhenAsked() throws {
        let yaml = """
            activity: { level: { cc: 11 }, total: { cc: 7 } }
            endpoints:
              a: { alsa: A }
              b: { alsa: B }
            routes:
              - { from: a, to: b }
              - { from: b, to: a, control: true }

            """
        let configuration = try parse(yaml)
        let routes = configuration.compiledRoutes { $0 == "a" ? EndpointID(0) : EndpointID(1) }
        func passes(_ route: CompiledRoute, _ message: MIDIMessage) -> Bool {
            var message = message
            return route.stages.allSatisfy { $0.apply(&message) }
        }
        let level = MIDIMessage.controlChange(channel: UInt4(masking: 0), controller: UInt7(masking: 11), value: UInt7(masking: 90))
        let total = MIDIMessage.controlChange(channel: UInt4(masking: 0), controller: UInt7(masking: 7), value: UInt7(masking: 90))
        let otherChannel = MIDIMessage.controlChange(channel: UInt4(masking: 1), controller: UInt7(masking: 7), value: UInt7(masking: 90))
        let note = MIDIMessage.noteOn(channel: UInt4(masking: 0), note: UInt7(masking: 60), velocity: UInt7(masking: 90))
        #expect(!passes(routes[0], level) && !passes(routes[0], total))
        #expect(passes(routes[0], otherChannel) && passes(routes[0], note))
        #expect(passes(routes[1], level) && passes(routes[1], total))
        #expect(configuration.routes[1].control)
        let withoutJam = try parse(yaml.replacingOccurrences(of: "activity: { level: { cc: 11 }, total: { cc: 7 } }\n", with: ""))
        #expect(passes(withoutJam.compiledRoutes { _ in EndpointID(0) }[0], total))
    }
}
