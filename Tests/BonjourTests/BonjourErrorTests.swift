import Testing
@testable import Bonjour

@Suite("BonjourError")
struct BonjourErrorTests {
    @Test func noDaemon() {
        let error = BonjourError(code: -65537, operation: "advertise 'Studio Rack'")
        #expect(error.description.hasPrefix(
            "cannot advertise 'Studio Rack': the avahi daemon is not running (dns_sd error -65537)"))
        #expect(error.description.contains("systemctl"))
    }

    @Test func serviceNotRunning() {
        let error = BonjourError(code: -65563, operation: "look for _apple-midi._udp sessions")
        #expect(error.description.contains("the avahi daemon is not running (dns_sd error -65563)"))
    }

    @Test func nameConflict() {
        let error = BonjourError(code: -65548, operation: "advertise 'Studio Rack'")
        #expect(error.description ==
            "cannot advertise 'Studio Rack': another device on the network already uses this name "
            + "(dns_sd error -65548); choose a different session name")
    }

    @Test func noSuchName() {
        let error = BonjourError(code: -65538, operation: "find 'Drums'")
        #expect(error.description == "cannot find 'Drums': no such name on the network (dns_sd error -65538)")
    }

    @Test func badParam() {
        #expect(BonjourError(code: -65540, operation: "advertise 'x'").description.contains("not valid"))
    }

    @Test func unknownCodeKeepsTheNumber() {
        let error = BonjourError(code: -1234, operation: "advertise 'x'")
        #expect(error.description == "cannot advertise 'x': unexpected error (dns_sd error -1234)")
    }

    @Test func everyKnownCodeHasPlainWords() {
        for code in Int32(-65559)...Int32(-65537) where code != -65546 {
            #expect(BonjourError.explanation(of: code) != "unexpected error", "code \(code)")
        }
    }
}

@Suite("Addresses")
struct AddressTests {
    @Test func ipv4() {
        let bytes: [UInt8] = [10, 77, 0, 1]
        let text = bytes.withUnsafeBytes { numericAddress(rrtype: 1, rdata: $0) }
        #expect(text == "10.77.0.1")
    }

    @Test func ipv6() {
        let bytes: [UInt8] = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]
        let text = bytes.withUnsafeBytes { numericAddress(rrtype: 28, rdata: $0) }
        #expect(text == "fe80::1")
    }

    @Test func malformedRecordsAreIgnored() {
        let three: [UInt8] = [10, 77, 0]
        #expect(three.withUnsafeBytes { numericAddress(rrtype: 1, rdata: $0) } == nil)
        let four: [UInt8] = [10, 77, 0, 1]
        #expect(four.withUnsafeBytes { numericAddress(rrtype: 28, rdata: $0) } == nil)
        #expect(numericAddress(rrtype: 1, rdata: UnsafeRawBufferPointer(start: nil, count: 0)) == nil)
    }

    @Test func linkLocalGetsAZone() {
        #expect(scoped("fe80::1", interfaceIndex: 1) == "fe80::1%lo")
        #expect(scoped("10.0.0.1", interfaceIndex: 1) == "10.0.0.1")
        #expect(scoped("fe80::1", interfaceIndex: 0) == "fe80::1")
    }
}
