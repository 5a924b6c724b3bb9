import Foundation
@testable import JamBridge
import JSON
import MIDI
import RouteFile
import Testing
import Transport

/// The status page's rules alone (`StatusPageRules`): which `Host:` and `Origin:` a command may come with, and to
/// whom SSRCs and addresses are shown; and how they are withheld in the page's JSON.
@Suite struct StatusPageRulesTests {
    private let location = SourceLocation(file: "r.yaml", line: 1, column: 1)

    private func rules(_ host: String, hosts: [String] = []) -> StatusPageRules {
        StatusPageRules(HTTPDeclaration(host: host, port: 8080, control: true, hosts: hosts, location: location))
    }

    @Test func hostHeadersAreReadWithTheirPorts() {
        #expect(StatusPageRules.parseHost("Rack.Local:8080")! == ("rack.local", 8080))
        #expect(StatusPageRules.parseHost("rack.local")! == ("rack.local", nil))
        #expect(StatusPageRules.parseHost("[::1]:8080")! == ("::1", 8080))
        #expect(StatusPageRules.parseHost("[fe80::1]")! == ("fe80::1", nil))
        for bad in [nil, "", ":8080", "rack.local:http", "rack.local:99999", "[::1", "[::1]x", "::1"] {
            #expect(StatusPageRules.parseHost(bad) == nil, "\(String(describing: bad))")
        }
    }

    @Test func onLoopbackEveryRequestNamesALoopbackHost() {
        let loopback = rules("127.0.0.1")
        #expect(loopback.loopbackOnly && !rules("0.0.0.0").loopbackOnly && rules("::1").loopbackOnly && !rules("::").loopbackOnly)
        for host in ["127.0.0.1:8080", "localhost", "LOCALHOST:8080", "[::1]:8080", "127.1.2.3"] { #expect(loopback.isLoopbackHost(host), "\(host)") }
        for host in ["evil.example", "127.0.0.1:9", "10.0.0.2:8080", "localhost.evil.example"] { #expect(!loopback.isLoopbackHost(host), "\(host)") }
    }

    @Test func aCommandNamesThisMachineOrAListedNameAndComesFromThatPage() {
        let lan = rules("0.0.0.0", hosts: ["rack.local"])
        let addresses = { [NetworkAddress(ipv4: 127, 0, 0, 1, port: 0), NetworkAddress(numeric: "192.168.1.20", port: 0)!, NetworkAddress(numeric: "fe80::1%2", port: 0)!] }
        let accepted: [(String?, String?)] = [
            ("rack.local:8080", "http://rack.local:8080"), ("rack.local:8080", nil), ("192.168.1.20:8080", "http://192.168.1.20:8080"),
            ("[fe80::1]:8080", nil), ("localhost:8080", "http://localhost:8080"), ("127.0.0.1", nil),
        ]
        for (host, origin) in accepted { #expect(lan.acceptsCommand(host: host, origin: origin, addresses: addresses), "\(host!) \(origin ?? "-")") }
        let refused: [(String?, String?)] = [
            ("evil.example:8080", "http://evil.example:8080"), ("evil.example", nil), ("rack.local:8080", "http://evil.example"),
            ("192.168.1.20:8080", "null"), ("192.168.1.21:8080", nil), ("rack.local:9090", nil), (nil, nil), ("rack.local:8080", "https://rack.local:8080"),
        ]
        for (host, origin) in refused { #expect(!lan.acceptsCommand(host: host, origin: origin, addresses: addresses), "\(host ?? "-") \(origin ?? "-")") }
        // The machine's addresses are looked up only when the host is not a name already known.
        #expect(lan.acceptsCommand(host: "rack.local", origin: nil) { Issue.record("looked up"); return [] })
    }

    @Test func ssrcsAndAddressesAreShownOnlyOnLoopbackAtALoopbackName() {
        let lan = rules("0.0.0.0")
        #expect(lan.showsNetworkIdentities(to: NetworkAddress(ipv4: 127, 0, 0, 1, port: 40000), host: "127.0.0.1:8080"))
        #expect(lan.showsNetworkIdentities(to: NetworkAddress(numeric: "::1", port: 40000), host: "localhost:8080"))
        #expect(!lan.showsNetworkIdentities(to: NetworkAddress(ipv4: 192, 168, 1, 5, port: 40000), host: "127.0.0.1:8080"))
        #expect(!lan.showsNetworkIdentities(to: NetworkAddress(ipv4: 127, 0, 0, 1, port: 40000), host: "evil.example:8080"))
        #expect(!lan.showsNetworkIdentities(to: nil, host: "127.0.0.1:8080"))
    }

    @Test func withheldIdentitiesAreNullInTheJSONAndReadBackAsNone() throws {
        var status = DaemonStatus(pid: 1, routeFiles: ["r.yaml"])
        status.session = DaemonStatus.Session(name: "rack", port: 5004, ssrc: 0xDEAD_BEEF, peers: [
            DaemonStatus.Peer(name: "mac", ssrc: 0x1234_5678, address: "192.168.1.30:5004", weInvited: true, journalRepairs: 0),
        ], counters: [:])
        status.osc["phone"] = DaemonStatus.OSC(listen: "0.0.0.0:8000", controllers: [DaemonStatus.Controller(address: "192.168.1.40:9000", heardSecondsAgo: 1)],
                                               targets: ["192.168.1.40:9001"])
        status.jam = DaemonStatus.Jam(role: "follower", master: "mac", masterSSRC: 0x1234_5678, tempo: 120, songBeat: 1, total: 0, totalFromMaster: true,
                                      players: [], refused: 0)
        let shown = String(decoding: try JSONWriter.status().bytes(status), as: UTF8.self)
        let withheld = String(decoding: try JSONWriter.status(withholding: true).bytes(status), as: UTF8.self)
        for identity in ["\(0xDEAD_BEEF as UInt32)", "\(0x1234_5678 as UInt32)", "192.168.1.30", "192.168.1.40"] {
            #expect(shown.contains(identity) && !withheld.contains(identity), "\(identity)")
        }
        #expect(withheld.contains(#""masterSSRC":null"#) && withheld.contains(#""targets":null"#) && withheld.contains(#""name":"mac""#))
        // Read back by Foundation's decoder (what a script's JSON library sees) and by jambridge's own.
        #expect(try JSONDecoder().decode(DaemonStatus.self, from: Data(shown.utf8)) == status)
        #expect(try JSONReader().value(DaemonStatus.self, from: Array(shown.utf8)) == status)
        let read = try JSONDecoder().decode(DaemonStatus.self, from: Data(withheld.utf8))
        #expect(read.session?.ssrc == 0 && read.session?.peers.first?.address == "" && read.jam?.masterSSRC == nil && read.osc["phone"]?.targets == [])
        #expect(read.session?.peers.first?.name == "mac" && read.jam?.master == "mac")
    }
}
