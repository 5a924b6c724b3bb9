import Foundation
@testable import JamBridge
import MIDI
import MIDITestSupport
import Testing

// ALSA endpoints on a real kernel sequencer with snd-virmidi devices: run by
// scripts/alsa-tests.sh, inside a VM when this machine has no /dev/snd/seq (the host's
// `swift test` skips these suites). "Virtual Raw MIDI 0-0" stands in for a USB keyboard:
// bytes played into hw:0,0 with amidi come out of its sequencer port; what is sent to the
// port of "Virtual Raw MIDI 0-1" can be read from hw:0,1. The helpers that are not private serve the other ALSA
// suites (JamClockALSAIntegrationTests) too.

/// `aconnect -l`, to see clients, ports and connections.
func connections() throws -> String { try run("/usr/bin/aconnect", ["-l"]).out }

/// jambridge's client number in `aconnect -l`'s listing, if it is there.
func jambridgeClient(_ listing: String) -> Substring? {
    listing.split(separator: "\n").first { $0.contains("'jambridge'") }?.split(separator: " ").dropFirst().first?.dropLast()
}

/// Waits (up to `seconds`: the VM is slow) until `aconnect -l` shows `count` connections
/// between other clients and jambridge's endpoint ports (port 0 follows announcements).
func waitForConnections(_ count: Int, seconds: Double = 60) throws {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        let listing = try connections()
        if let client = jambridgeClient(listing) {
            // In the other clients' blocks, each connection names us as " CLIENT:PORT".
            let made = listing.split(separator: "\n").filter { $0.contains("Connect") }.map { line in
                line.components(separatedBy: " \(client):").dropFirst().filter { !$0.hasPrefix("0") }.count
            }.reduce(0, +)
            if made >= count { return }
        }
        Thread.sleep(forTimeInterval: 0.5)
    }
    Issue.record("jambridge did not make \(count) connections:\n\(try connections())")
}

/// Starts `amidi` reading hw:0,`device` (clock bytes too: `-c`) until `idleSeconds` of silence, hex-dumping what it gets.
private func startReading(device: Int, idleSeconds: Int = 4, into file: URL? = nil) throws -> JamBridgeProcess {
    let arguments = ["-p", "hw:0,\(device)", "-c", "-t", "\(idleSeconds)"] + (file.map { ["-r", $0.path] } ?? ["-d"])
    let reader = try JamBridgeProcess(arguments, launcher: "/usr/bin/amidi")
    Thread.sleep(forTimeInterval: 1) // it has the device open before anything is played
    return reader
}

/// The bytes `amidi -d` printed (hex, a message a line, e.g. "904864").
func dumpedBytes(_ output: String) -> [UInt8] {
    let digits = Array(output.filter(\.isHexDigit))
    return stride(from: 0, to: digits.count - 1, by: 2).compactMap { UInt8(String(digits[$0...$0 + 1]), radix: 16) }
}

/// Plays hex `bytes` into hw:0,`device`.
func play(_ bytes: String, device: Int = 0) throws {
    let result = try run("/usr/bin/amidi", ["-p", "hw:0,\(device)", "-S", bytes])
    #expect(result.status == 0)
}

/// Writes `routes` to a fresh directory and starts `jambridge run` on it.
func startJamBridge(_ routes: String, seconds: Int) throws -> (JamBridgeProcess, URL) {
    let dir = try temporaryDirectory()
    let file = dir.appendingPathComponent("alsa.yaml")
    try routes.write(to: file, atomically: true, encoding: .utf8)
    return (try JamBridgeProcess(["run", "--stop-after", "\(seconds)", file.path]), dir)
}

/// Starts jambridge forwarding the virtual keyboard (0-0) to the next device (0-1) unchanged, once connected.
private func startForwarding(seconds: Int) throws -> (JamBridgeProcess, URL) {
    let started = try startJamBridge("""
        endpoints:
          keys: { alsa: "Virtual Raw MIDI 0-0" }
          synth: { alsa: "Virtual Raw MIDI 0-1" }
        routes:
          - { from: keys, to: synth }
        """, seconds: seconds)
    try waitForConnections(4) // both devices, both ways
    return started
}

@Suite(.serialized) struct RoutingALSAIntegrationTests {
    @Test func aVirtualKeyboardPlaysThroughATransposeIntoAnotherDeviceAndBack() throws {
        let (daemon, _) = try startJamBridge("""
            endpoints:
              keys: { alsa: "Virtual Raw MIDI 0-0" }
              synth: { alsa: "Virtual Raw MIDI 0-1" }
            routes:
              - { from: keys, to: synth, transpose: 12 }
              - { from: synth, to: keys }
            """, seconds: 40)
        try waitForConnections(4) // both devices, both ways
        let forward = try startReading(device: 1)
        try play("90 3C 64 B0 07 50 80 3C 00")
        let got = forward.finish()
        #expect(dumpedBytes(got.out) == [0x90, 0x48, 0x64, 0xB0, 0x07, 0x50, 0x80, 0x48, 0x00], "\(got.out)")
        let back = try startReading(device: 0)
        try play("C1 05 E1 00 40", device: 1)
        #expect(dumpedBytes(back.finish().out) == [0xC1, 0x05, 0xE1, 0x00, 0x40])
        daemon.interrupt()
        let result = daemon.finish()
        #expect(result.status == 0, "\(result.err)")
        #expect(result.err.contains("connected to keys") && result.err.contains("connected to synth"), "\(result.err)")
    }

    /// Issue 17: one endpoint matching two devices, routed back into itself: each device hears the other and never
    /// itself; when both hold the same note, each release reaches the device that heard that note-on only.
    @Test func twoDevicesOfOneEndpointHearEachOtherNeverThemselves() throws {
        let (daemon, _) = try startJamBridge("""
            endpoints:
              band: { alsa: "Virtual Raw MIDI 0-[01]" }
            routes:
              - { from: band, to: band }
            """, seconds: 40)
        try waitForConnections(4) // both devices, both ways
        let zero = try startReading(device: 0), one = try startReading(device: 1)
        for (bytes, device) in [("90 3C 64", 0), ("B0 01 20", 1), ("90 3C 50", 1), ("80 3C 00", 0), ("80 3C 00", 1)] {
            try play(bytes, device: device)
            Thread.sleep(forTimeInterval: 0.2)
        }
        #expect(dumpedBytes(zero.finish().out) == [0xB0, 0x01, 0x20, 0x90, 0x3C, 0x50, 0x80, 0x3C, 0x00])
        #expect(dumpedBytes(one.finish().out) == [0x90, 0x3C, 0x64, 0x80, 0x3C, 0x00])
        daemon.interrupt()
        #expect(daemon.finish().status == 0)
    }

    @Test func clockTransportAndSystemMessagesKeepTheirOrder() throws {
        let (daemon, _) = try startForwarding(seconds: 40)
        let reader = try startReading(device: 1)
        let bytes = "FA F8 F8 F2 10 00 F8 F1 25 F3 02 F6 FC FB F8 FF"
        try play(bytes)
        #expect(dumpedBytes(reader.finish().out) == dumpedBytes(bytes))
        daemon.interrupt()
        #expect(daemon.finish().status == 0)
    }

    @Test func aSixtyFourKiBSysExPassesByteExact() throws {
        let (daemon, dir) = try startForwarding(seconds: 120)
        let received = dir.appendingPathComponent("received.syx")
        let reader = try startReading(device: 1, idleSeconds: 10, into: received)
        // A keyboard's cable: 512 bytes every 10 ms into the device, as a USB interface would deliver them.
        let data: [UInt8] = (0..<65_536).map { (index: Int) -> UInt8 in UInt8((index * 37 + index / 256) % 128) }
        let framed: [UInt8] = [0xF0] + data + [0xF7]
        let sent = dir.appendingPathComponent("sent.syx")
        try Data(framed).write(to: sent)
        let player = try run("/usr/bin/python3", ["-c", """
            import sys, time
            data = open(sys.argv[1], 'rb').read()
            with open('/dev/snd/midiC0D0', 'wb', buffering=0) as device:
                for start in range(0, len(data), 512):
                    device.write(data[start:start + 512])
                    time.sleep(0.01)
            """, sent.path])
        #expect(player.status == 0, "\(player.out)")
        // jambridge sends it on at the MIDI wire's pace (about 21 s), then the reader waits for 10 s of silence.
        #expect(reader.finish().status == 0)
        let got = try [UInt8](Data(contentsOf: received))
        let firstDifference = zip(got, framed).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        #expect(got.count == framed.count && firstDifference == nil,
                "\(got.count) of \(framed.count) bytes arrived, the first difference at \(firstDifference ?? -1)")
        daemon.interrupt()
        #expect(daemon.finish().status == 0)
    }

    /// Issue 34: who listens to a port is asked once, not for every event, and asked again once a connection is undone
    /// or made (aconnect's too): a device disconnected from the endpoint's port hears nothing more from the next event
    /// on, and hears again once connected again; the player is left out throughout.
    @Test func aConnectionUndoneOrMadeWithAconnectCountsFromTheNextEvent() throws {
        let (daemon, _) = try startJamBridge("""
            endpoints:
              band: { alsa: "Virtual Raw MIDI 0-[012]" }
            routes:
              - { from: band, to: band }
            """, seconds: 90)
        try waitForConnections(6) // three devices, both ways
        let listing = try connections()
        let client = try #require(jambridgeClient(listing))
        let portLine = try #require(listing.split(separator: "\n").first { $0.contains("'band") }, "\(listing)")
        let band = "\(client):\(try #require(portLine.split(separator: " ").first))"
        // virmidi drops what is sent to a port nobody is connected to write to: 0-3 stays connected to 0-2, so that an
        // event sent to 0-2 by address after the disconnection would be heard.
        #expect(try run("/usr/bin/aconnect", ["Virtual Raw MIDI 0-3", "Virtual Raw MIDI 0-2"]).status == 0)
        defer { _ = try? run("/usr/bin/aconnect", ["-d", "Virtual Raw MIDI 0-3", "Virtual Raw MIDI 0-2"]) }
        let readers = try (0...2).map { try startReading(device: $0, idleSeconds: 10) }
        try play("90 3C 64", device: 0)
        Thread.sleep(forTimeInterval: 0.2)
        #expect(try run("/usr/bin/aconnect", ["-d", band, "Virtual Raw MIDI 0-2"]).status == 0)
        try play("91 3D 64", device: 0) // another channel each: no running status in what the devices hear
        Thread.sleep(forTimeInterval: 0.2)
        #expect(try run("/usr/bin/aconnect", [band, "Virtual Raw MIDI 0-2"]).status == 0)
        try play("92 3E 64", device: 1)
        let heard = readers.map { dumpedBytes($0.finish().out) }
        #expect(heard[0] == [0x92, 0x3E, 0x64], "\(heard)")
        #expect(heard[1] == [0x90, 0x3C, 0x64, 0x91, 0x3D, 0x64], "\(heard)")
        #expect(heard[2] == [0x90, 0x3C, 0x64, 0x92, 0x3E, 0x64], "\(heard)")
        daemon.interrupt()
        #expect(daemon.finish().status == 0)
    }

    @Test func aPortJambridgeCreatesCanBeConnectedWithAconnect() throws {
        let (daemon, _) = try startJamBridge("""
            endpoints:
              keys: { alsa: "Virtual Raw MIDI 0-0" }
              out: { alsa: { create: "jam out" } }
            routes:
              - { from: keys, to: out, channel: 5 }
            """, seconds: 40)
        try waitForConnections(2)
        let listing = try connections()
        let number = try #require(jambridgeClient(listing))
        let portLine = try #require(listing.split(separator: "\n").first { $0.contains("'jam out") }, "\(listing)")
        let port = try #require(portLine.split(separator: " ").first)
        #expect(try run("/usr/bin/aconnect", ["\(number):\(port)", "Virtual Raw MIDI 0-2"]).status == 0)
        let reader = try startReading(device: 2)
        try play("90 40 7F")
        #expect(dumpedBytes(reader.finish().out) == [0x94, 0x40, 0x7F])
        daemon.interrupt()
        #expect(daemon.finish().status == 0)
    }
}

@Suite(.serialized) struct HotplugALSAIntegrationTests {
    private let unbind = "/sys/bus/platform/drivers/snd_virmidi/unbind"
    private let bind = "/sys/bus/platform/drivers/snd_virmidi/bind"

    @Test func unpluggingReleasesTheHeldNoteAndReplugReconnectsWithoutARestart() throws {
        let (daemon, dir) = try startJamBridge("""
            endpoints:
              keys: { alsa: "Virtual Raw MIDI 0-0" }
              tape: { record: take.mid }
            routes:
              - { from: keys, to: tape }
            """, seconds: 120)
        try waitForConnections(2)
        try play("90 3C 64 B0 40 7F") // a note and the sustain pedal held
        Thread.sleep(forTimeInterval: 2)
        try "snd_virmidi.0".write(toFile: unbind, atomically: false, encoding: .utf8) // unplugged
        Thread.sleep(forTimeInterval: 3)
        try "snd_virmidi.0".write(toFile: bind, atomically: false, encoding: .utf8) // plugged back in
        try waitForConnections(2) // matched by name: its client number may have changed
        try play("90 3E 50 80 3E 00")
        Thread.sleep(forTimeInterval: 2)
        daemon.interrupt()
        let result = daemon.finish()
        #expect(result.status == 0, "\(result.err)")
        #expect(result.err.contains("went away; 2 held notes and pedals released"), "\(result.err)")
        let got = try recorded(dir.appendingPathComponent("take.mid"))
        #expect(got == [noteOn(0, 60, 100), cc(0, 64, 127), noteOff(0, 60, 64), cc(0, 64, 0), noteOn(0, 62, 80), noteOff(0, 62, 0)],
                "\(got)")
    }
}

@Suite(.serialized) struct NetworkALSAIntegrationTests {
    @Test func aNoteOnTheVirtualKeyboardReachesAnRTPMIDIPeerAndThePeersNoteComesBack() throws {
        let dir = try temporaryDirectory()
        let port = freshSessionPort()
        // The peer: a second jambridge whose session records what arrives and plays a song into it.
        let ms: UInt64 = 1_000_000
        let peer = try writeSetup(in: dir, song: [.init(offset: 30_000 * ms, message: noteOn(3, 70, 90)),
                                                  .init(offset: 30_100 * ms, message: noteOff(3, 70))], routes: """
            session: { name: Peer, port: \(port + 2), bind: 127.0.0.1, advertise: false }
            endpoints:
              song: { file: song.mid }
              tape: { record: take.mid }
            routes:
              - { from: session, to: tape }
              - { from: song, to: session }
            """)
        let peerProcess = try JamBridgeProcess(["run", "--stop-after", "60", peer])
        let (bridge, _) = try startJamBridge("""
            session: { name: Keys, port: \(port), bind: 127.0.0.1, advertise: false, invite: [ { host: 127.0.0.1, port: \(port + 2) } ] }
            endpoints:
              keys: { alsa: "Virtual Raw MIDI 0-0" }
            routes:
              - { from: keys, to: session }
              - { from: session, to: keys }
            """, seconds: 58)
        try waitForConnections(2)
        Thread.sleep(forTimeInterval: 8) // the invitation and first clock sync, in the slow VM
        try play("90 3C 64 80 3C 00")
        let back = try startReading(device: 0, idleSeconds: 40) // the peer's song note, ~30 s after it started
        #expect(dumpedBytes(back.finish().out) == [0x93, 0x46, 0x5A, 0x83, 0x46, 0x00])
        bridge.interrupt()
        peerProcess.interrupt()
        let bridgeResult = bridge.finish(), peerResult = peerProcess.finish()
        #expect(bridgeResult.status == 0 && peerResult.status == 0, "\(bridgeResult.err)\n\(peerResult.err)")
        #expect(try recorded(dir.appendingPathComponent("take.mid")) == [noteOn(0, 60, 100), noteOff(0, 60, 0)], "\(peerResult.err)")
    }
}

/// The lifecycle of the ALSA part (PartLifecycleTests has the other kinds): a daemon in this process starts from an
/// empty configuration, keeps its client and ports through the same configuration, makes again only the port of an
/// endpoint that changed (releasing the note held through it), and stops.
@Suite(.serialized) struct PartLifecycleALSAIntegrationTests {
    @Test func theClientKeepsItsPortsThroughTheSameConfigurationAndMakesAgainOnlyAChangedOne() throws {
        let dir = try temporaryDirectory()
        let routes = { (keys: String) in """
            endpoints:
              keys: { alsa: "\(keys)" }
              synth: { alsa: "Virtual Raw MIDI 0-1" }
              tape: { record: take.mid }
            routes:
              - { from: keys, to: tape }
            """ }
        let file = dir.appendingPathComponent("alsa.yaml").path
        try routes("Virtual Raw MIDI 0-0").write(toFile: file, atomically: true, encoding: .utf8)
        let daemon = try startedDaemon(file)
        #expect(daemon.status().first == "ALSA client 'jambridge': ports keys, synth", "\(daemon.status())")
        try waitForConnections(4) // both devices, both ways
        try play("90 3C 64")
        Thread.sleep(forTimeInterval: 2) // the VM is slow
        let alsa = try #require(daemon.report()?.alsa)
        #expect(alsa.client == "jambridge" && alsa.clientID > 0 && alsa.failures == 0 && alsa.dropped == 0 && alsa.ports.keys.sorted() == ["keys", "synth"], "\(alsa)")
        for (name, device) in [("keys", "Virtual Raw MIDI 0-0:"), ("synth", "Virtual Raw MIDI 0-1:")] {
            #expect(alsa.ports[name]?.connections.count == 1 && alsa.ports[name]?.connections[0].hasPrefix(device) == true, "\(alsa)")
        }
        #expect(daemon.report()?.endpoints["keys"]?.in == 1)
        #expect(try reload(daemon, file, with: routes("Virtual Raw MIDI 0-0")) == nothingRestarted)
        #expect(try reload(daemon, file, with: routes("Virtual Raw MIDI 0-0:0")) == ReloadOutcome(started: ["keys"], stopped: ["keys"]))
        try waitForConnections(4)
        try play("90 3E 50")
        Thread.sleep(forTimeInterval: 2)
        _ = daemon.stop()
        #expect(jambridgeClient(try connections()) == nil)
        #expect(try recorded(dir.appendingPathComponent("take.mid")) == [noteOn(0, 60), noteOff(0, 60), noteOn(0, 62, 80), noteOff(0, 62)])
    }
}
