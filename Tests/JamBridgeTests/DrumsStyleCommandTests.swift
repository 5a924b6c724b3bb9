import Foundation
@testable import JamBridge
import Logging
import MIDI
import RouteFile
import Testing

/// `drums style PATH` while jambridge runs (issue 29, item 7): only built-in styles and style files inside the route
/// files' folders play; `/etc/passwd`, a file outside, a symlink out and `..` are refused, and no refusal (nor log
/// line) quotes the file.
@Suite(.serialized) struct DrumsStyleCommandTests {
    /// A route folder (inside a scratch folder) with a route file playing drums, a style file beside it, a valid style
    /// outside it, and symlinks inside pointing at /etc/passwd and at that outside style.
    private struct Setting {
        let routeFile: String
        let outside: String

        init() throws {
            let top = try temporaryDirectory()
            let folder = top.appendingPathComponent("routes")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            routeFile = folder.appendingPathComponent("jam.yaml").path
            try "clock: { tempo: 120 }\ndrums: { style: rock }\n".write(toFile: routeFile, atomically: true, encoding: .utf8)
            let style = "groove:\n  clave: \"1 . . 1 . . 1 . . . 1 . 1 . . .\"\n"
            try style.write(to: folder.appendingPathComponent("clave.yaml"), atomically: true, encoding: .utf8)
            outside = top.appendingPathComponent("elsewhere.yaml").path
            try style.write(toFile: outside, atomically: true, encoding: .utf8)
            try FileManager.default.createSymbolicLink(atPath: folder.appendingPathComponent("passwd.yaml").path, withDestinationPath: "/etc/passwd")
            try FileManager.default.createSymbolicLink(atPath: folder.appendingPathComponent("out.yaml").path, withDestinationPath: outside)
        }

        /// Styles that must be refused, as the command names them, relative ones relative to the route file.
        var hostile: [String] { ["/etc/passwd", "/etc/shadow", outside, "passwd.yaml", "out.yaml", "../elsewhere.yaml"] }
    }

    /// Lines of /etc/passwd (its first, root's, and the user's own): none may reach a refusal or the log.
    private let passwdLines = (try? String(contentsOfFile: "/etc/passwd", encoding: .utf8))?.split(separator: "\n").prefix(3).map(String.init) ?? []

    @Test func thePerformPathRefusesWhatIsOutsideTheRouteFilesFoldersWithoutQuotingIt() throws {
        let setting = try Setting()
        var declaration = DrumsDeclaration(style: BuiltinStyles.style("rock")!, location: SourceLocation(file: setting.routeFile, line: 2, column: 1))
        declaration.styleFolders = StyleFile.folders(ofRouteFiles: [setting.routeFile])
        let player = try DrumsPlayer(declaration, logger: Logger(label: "jambridge-drums-style-test"))
        #expect(!passwdLines.isEmpty)
        for path in setting.hostile {
            let started = ContinuousClock.now
            let result = player.perform(.style(path))
            let elapsed = ContinuousClock.now - started
            guard case .failure(let refusal) = result else {
                Issue.record("\(path) was played: \(result)")
                continue
            }
            print("drums style \(path): refused in \(elapsed)")
            #expect(refusal.reason.hasPrefix("'\(path)' is not a style file in the route files' folders ("), "\(refusal.reason)")
            for line in passwdLines { #expect(!refusal.reason.contains(line)) }
        }
        #expect(player.sequencer.style.name == "rock")
        #expect(player.perform(.style("clave.yaml")) == .success("style clave from the next bar line"))
        #expect(player.perform(.style(URL(fileURLWithPath: setting.routeFile).deletingLastPathComponent().path + "/clave.yaml"))
                == .success("style clave from the next bar line"))
    }

    @Test func theControlSocketOfARunningJambridgeRefusesThemAndNeitherItsAnswersNorItsLogQuoteTheFile() throws {
        let setting = try Setting()
        let control = URL(fileURLWithPath: setting.routeFile).deletingLastPathComponent().appendingPathComponent("control.sock").path
        let daemon = try JamBridgeProcess(["run", "--stop-after", "60", "--control", control, setting.routeFile])
        defer { daemon.interrupt() }
        #expect(daemon.waitForError(containing: "control socket: \(control)"), "\(daemon.errorSoFar)")
        // As the issue sent it: a line of JSON on the socket, relative paths relative to the route file.
        for path in setting.hostile {
            let reply = try controlRequest(control, ["command": "drums-style", "style": path])
            #expect(reply.ok == false && reply.message.hasPrefix("'\(path)' is not a style file in the route files' folders ("),
                    "\(reply)")
            for line in passwdLines { #expect(!reply.message.contains(line)) }
        }
        // And through the command line, which makes a path absolute against its own working directory.
        let refused = try jambridge(["drums", "style", "/etc/passwd", "--control", control], killingAfter: 30)
        #expect(refused.status == 1 && refused.err.contains("'/etc/passwd' is not a style file in the route files' folders"), "\(refused)")
        let played = try jambridge(["drums", "style", URL(fileURLWithPath: setting.routeFile).deletingLastPathComponent().path + "/clave.yaml",
                                    "--control", control], killingAfter: 30)
        #expect(played.status == 0 && played.out.contains("style clave from the next bar line"), "\(played)")
        daemon.interrupt()
        let result = daemon.finish(killingAfter: 30)
        #expect(result.status == 0)
        #expect(result.err.contains("drums: '/etc/passwd' is not a style file in the route files' folders"), "\(result.err)")
        for line in passwdLines { #expect(!result.err.contains(line)) }
    }
}

/// Sends `request` as a line of JSON to the control socket at `path`; the answer's `ok` and `message`.
private func controlRequest(_ path: String, _ request: [String: String]) throws -> (ok: Bool?, message: String) {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    guard connected == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    var timeout = timeval(tv_sec: 30, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    let line = Array(try JSONSerialization.data(withJSONObject: request)) + [10]
    guard send(fd, line, line.count, Int32(MSG_NOSIGNAL)) == line.count else { throw POSIXError(.EIO) }
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while case let count = read(fd, &buffer, buffer.count), count > 0 { received += buffer[..<count] }
    let answer = try JSONSerialization.jsonObject(with: Data(received)) as? [String: Any]
    return (answer?["ok"] as? Bool, answer?["message"] as? String ?? String(decoding: received, as: UTF8.self))
}
