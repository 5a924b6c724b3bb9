import Testing
import Transport

/// The sender `text` (a numeric address) at an arbitrary port.
private func sender(_ text: String) -> NetworkAddress {
    NetworkAddress(numeric: text, port: 9000)!
}

/// The prefix `text`, which the test expects to parse.
private func prefix(_ text: String) throws -> NetworkPrefix {
    try NetworkPrefix(parsing: text)
}

@Suite struct NetworkPrefixTests {
    @Test func ipv4NetworksAndSingleAddresses() throws {
        let lan = try prefix("192.168.1.0/24")
        #expect(lan.contains(sender("192.168.1.0")) && lan.contains(sender("192.168.1.255")))
        #expect(!lan.contains(sender("192.168.2.1")) && !lan.contains(sender("192.168.0.255")))
        let host = try prefix("10.0.0.2")
        #expect(host == (try prefix("10.0.0.2/32")))
        #expect(host.contains(sender("10.0.0.2")) && !host.contains(sender("10.0.0.3")))
        #expect(try prefix("172.16.0.0/12").contains(sender("172.31.255.255")))
        #expect(try !prefix("172.16.0.0/12").contains(sender("172.32.0.0")))
        // /0 is every IPv4 address, and no IPv6 one.
        let all = try prefix("0.0.0.0/0")
        #expect(all.contains(sender("255.255.255.255")) && all.contains(sender("0.0.0.0")))
        #expect(!all.contains(sender("::1")) && !all.contains(sender("fe80::1")))
    }

    @Test func ipv6NetworksAndSingleAddresses() throws {
        let loopback = try prefix("::1")
        #expect(loopback == (try prefix("::1/128")))
        #expect(loopback.contains(sender("::1")) && !loopback.contains(sender("::2")) && !loopback.contains(sender("127.0.0.1")))
        let ula = try prefix("fc00::/7")
        #expect(ula.contains(sender("fd12:3456::1")) && ula.contains(sender("fc00::")))
        #expect(!ula.contains(sender("fe00::1")) && !ula.contains(sender("2001:db8::1")))
        // A prefix boundary inside the low half, and one inside a group.
        let low = try prefix("2001:db8::8:0:0/97")
        #expect(low.contains(sender("2001:db8::8:7fff:ffff")) && !low.contains(sender("2001:db8::8:8000:0")))
        #expect(try prefix("2001:db8:8000::/33").contains(sender("2001:db8:ffff::1")))
        #expect(try !prefix("2001:db8:8000::/33").contains(sender("2001:db8:7fff::1")))
        // A link-local sender's zone does not matter.
        #expect(try prefix("fe80::/10").contains(sender("fe80::1%3")))
        // ::/0 is every address: IPv4 senders are matched as their IPv4-mapped form.
        #expect(try prefix("::/0").contains(sender("2001:db8::1")) && prefix("::/0").contains(sender("10.0.0.1")))
    }

    @Test func ipv4MappedSendersMatchIPv4Entries() throws {
        // An IPv6 socket can report an IPv4 sender as ::ffff:a.b.c.d.
        let mapped = NetworkAddress(ipv6: 0, 0xFFFF_C0A8_0105, port: 9000)
        #expect(try prefix("192.168.1.0/24").contains(mapped))
        #expect(try prefix("192.168.1.5").contains(mapped))
        #expect(try !prefix("192.168.2.0/24").contains(mapped))
        // And an IPv4-mapped entry matches the IPv4 sender.
        #expect(try prefix("::ffff:192.168.1.0/120").contains(sender("192.168.1.9")))
        #expect(try prefix("::ffff:192.168.1.0/120").description == "::ffff:c0a8:100/120")
    }

    @Test func prefixLengthEdges() throws {
        #expect(try prefix("10.1.2.3/32").length == 128)
        #expect(try prefix("0.0.0.0/0").length == 96)
        #expect(try prefix("2001:db8::1/128").contains(sender("2001:db8::1")))
        #expect(try !prefix("2001:db8::1/128").contains(sender("2001:db8::")))
        #expect(try prefix("2001:db8::/64").contains(sender("2001:db8::ffff:ffff:ffff:ffff")))
        #expect(try !prefix("2001:db8::/64").contains(sender("2001:db8:0:1::")))
        #expect(try prefix("128.0.0.0/1").contains(sender("200.1.1.1")) && !prefix("128.0.0.0/1").contains(sender("127.0.0.1")))
    }

    @Test func mistakes() {
        #expect(throws: NetworkPrefix.ParseError.lengthOutOfRange(33, maximum: 32)) { try prefix("10.0.0.0/33") }
        #expect(throws: NetworkPrefix.ParseError.lengthOutOfRange(129, maximum: 128)) { try prefix("fe80::/129") }
        #expect(throws: NetworkPrefix.ParseError.malformedAddress("studio.local")) { try prefix("studio.local") }
        #expect(throws: NetworkPrefix.ParseError.malformedAddress("10.0.0")) { try prefix("10.0.0/8") }
        #expect(throws: NetworkPrefix.ParseError.malformedAddress("256.0.0.1")) { try prefix("256.0.0.1") }
        #expect(throws: NetworkPrefix.ParseError.malformedAddress("fe80::1%eth0")) { try prefix("fe80::1%eth0") }
        #expect(throws: NetworkPrefix.ParseError.malformedAddress("")) { try prefix("/8") }
        #expect(throws: NetworkPrefix.ParseError.malformedLength("")) { try prefix("10.0.0.0/") }
        #expect(throws: NetworkPrefix.ParseError.malformedLength("+8")) { try prefix("10.0.0.0/+8") }
        #expect(throws: NetworkPrefix.ParseError.malformedLength("8/8")) { try prefix("10.0.0.0/8/8") }
        #expect(throws: NetworkPrefix.ParseError.malformedLength("0008")) { try prefix("10.0.0.0/0008") }
        #expect(throws: NetworkPrefix.ParseError.hostBitsSet(network: try! prefix("192.168.1.0/24"))) { try prefix("192.168.1.5/24") }
        #expect(throws: NetworkPrefix.ParseError.hostBitsSet(network: try! prefix("fe80::/10"))) { try prefix("fe80::1/10") }
    }

    @Test func descriptionsAreCIDR() throws {
        #expect(try prefix("10.0.0.0/8").description == "10.0.0.0/8")
        #expect(try prefix("10.0.0.2").description == "10.0.0.2/32")
        #expect(try prefix("FE80::/10").description == "fe80::/10")
        #expect(try prefix("::1").description == "::1/128")
        #expect(try prefix("0.0.0.0/0").description == "0.0.0.0/0")
        #expect(try prefix("::/0").description == "::/0")
    }

    @Test func localNetworksAreLoopbackLinkLocalAndPrivate() {
        let local = AddressAcceptance.local
        for inside in ["127.0.0.1", "127.255.0.9", "10.9.8.7", "172.16.0.1", "172.31.9.9", "192.168.178.20", "169.254.3.4",
                       "::1", "fd00::20", "fc00::1", "fe80::1%2", "febf::1"] {
            #expect(local.accepts(sender(inside)), "\(inside)")
        }
        for outside in ["8.8.8.8", "172.32.0.1", "192.169.0.1", "100.64.0.1", "11.0.0.1", "2001:db8::1", "::2", "fec0::1"] {
            #expect(!local.accepts(sender(outside)), "\(outside)")
        }
        #expect(!local.accepts(NetworkAddress(ipv6: 0, 0xFFFF_0808_0808, port: 9000))) // ::ffff:8.8.8.8
        #expect(local.accepts(NetworkAddress(ipv6: 0, 0xFFFF_7F00_0001, port: 9000)))  // ::ffff:127.0.0.1
        #expect(local == .within(NetworkPrefix.localNetworks))
        #expect(NetworkPrefix.localNetworks.map(\.description) == [
            "127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "::1/128", "fc00::/7", "fe80::/10",
        ])
    }

    @Test func acceptance() throws {
        #expect(AddressAcceptance.anyone.accepts(sender("203.0.113.9")) && AddressAcceptance.anyone.accepts(sender("2001:db8::1")))
        #expect(!AddressAcceptance.within([]).accepts(sender("127.0.0.1")))
        let listed = AddressAcceptance.within([try prefix("127.0.0.2"), try prefix("2001:db8::/32")])
        #expect(listed.accepts(sender("127.0.0.2")) && listed.accepts(sender("2001:db8:1::5")))
        #expect(!listed.accepts(sender("127.0.0.1")) && !listed.accepts(sender("::1")))
    }
}
