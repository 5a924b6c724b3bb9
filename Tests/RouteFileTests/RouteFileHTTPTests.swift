import Foundation
import MIDI
import RouteFile
import Testing

/// The `http:` block (the live status page): loopback by default, every other address written out, with located
/// mistakes.
@Suite struct RouteFileHTTPTests {
    @Test func defaultsAreLoopbackPort8080WithoutControl() throws {
        #expect(try parse("routes: []\n").http == nil)
        #expect(try parse("http: {}\n").http == HTTPDeclaration(location: at(1, 1)))
        #expect(try parse("http:\n").http?.listen == "127.0.0.1:8080")
    }

    @Test func listenForms() throws {
        #expect(try parse("http: { listen: 9000 }\n").http?.listen == "127.0.0.1:9000")
        #expect(try parse("http: { listen: \"0.0.0.0:8081\", control: true }\n").http
            == HTTPDeclaration(host: "0.0.0.0", port: 8081, control: true, location: at(1, 1)))
        #expect(try parse("http: { listen: \"[::1]:8082\" }\n").http?.listen == "[::1]:8082")
        #expect(try parse("http: { listen: \"[::]:8083\" }\n").http?.host == "::")
    }

    @Test func hostsNameWhereCommandsMayComeFrom() throws {
        #expect(try parse("http: { listen: \"0.0.0.0:8080\", control: true, hosts: [Rack.local, 192.168.1.20, \"fe80::1\"] }\n").http
            == HTTPDeclaration(host: "0.0.0.0", port: 8080, control: true, hosts: ["rack.local", "192.168.1.20", "fe80::1"], location: at(1, 1)))
        #expect(try parse("http: { hosts: [] }\n").http?.hosts == [])
        let one = try #require(try parse("http: { hosts: [rack.local] }\n").http)
        #expect(!one.isSame(as: HTTPDeclaration(location: at(1, 1))), "a change of hosts restarts the page")
    }

    @Test func mistakesAreLocated() {
        #expect(locatedMistakes("http: { listen: 0 }\n")
            == ["r.yaml:1:17: '0' is not a TCP port 1-65535; 'listen' is a TCP port such as 8080 (on 127.0.0.1), or \"HOST:PORT\" with a numeric address, such as \"0.0.0.0:8080\" for every IPv4 interface or \"[::1]:8080\""])
        #expect(locatedMistakes("http: { listen: \"rack.local:80\" }\n").first?.hasPrefix("r.yaml:1:17: 'rack.local' is not a numeric address; ") == true)
        #expect(locatedMistakes("http: { listen: \"::1:80\" }\n").first?.hasPrefix("r.yaml:1:17: '::1:80' is ambiguous; ") == true)
        #expect(locatedMistakes("http: { listen: \"[1.2.3.4]:80\" }\n").first?.hasPrefix("r.yaml:1:17: '1.2.3.4' in brackets is not an IPv6 address") == true)
        #expect(locatedMistakes("http: { listen: [8080] }\n").first?.hasPrefix("r.yaml:1:17: 'listen' is a TCP port") == true)
        #expect(locatedMistakes("http: { control: maybe }\n") == ["r.yaml:1:18: 'control' is true or false, not 'maybe'"])
        #expect(locatedMistakes("http: { listne: 80 }\n") == ["r.yaml:1:9: unknown key 'listne'; did you mean 'listen'?"])
        #expect(locatedMistakes("http: { hosts: rack.local }\n")
            == ["r.yaml:1:16: 'hosts' lists the names a browser reaches this page by, such as [rack.local, 192.168.1.20], not 'rack.local' (a single name goes in a list)"])
        #expect(locatedMistakes("http: { hosts: [rack.local, \"http://rack.local:8080/\"] }\n")
            == ["r.yaml:1:29: 'http://rack.local:8080/' is not a host name or a numeric address; write the name alone, such as rack.local (no http://, port or path)"])
        #expect(locatedMistakes("http: { hosts: [{ name: rack }] }\n").first?.hasPrefix("r.yaml:1:17: 'hosts' lists the names ") == true)
        #expect(locatedMistakes("http: { hots: [rack.local] }\n") == ["r.yaml:1:9: unknown key 'hots'; did you mean 'hosts'?"])
        #expect(locatedMistakes("http: 8080\n") == ["r.yaml:1:7: 'http' is a mapping such as '{ listen: \"127.0.0.1:8080\" }', not '8080'"])
        #expect(locatedMistakes("htp: {}\n").first?.hasPrefix("r.yaml:1:1: unknown top-level key 'htp'; did you mean 'http'?") == true)
    }

    @Test func oneBlockAcrossFiles() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try write("http: { listen: 8080 }\n", to: "a.yaml", in: directory)
        let second = try write("# the other one\nhttp: { listen: 8081 }\n", to: "b.yaml", in: directory)
        #expect(throws: RouteFileErrors.self) { try RouteConfiguration.load(files: [first, second]) }
        do {
            _ = try RouteConfiguration.load(files: [first, second])
        } catch {
            #expect(error.errors.map(\.description) == ["\(second):2:1: the status page is already declared at \(first):1:1; all route files together declare one 'http' block"])
        }
    }
}
