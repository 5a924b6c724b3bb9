import Drums
import Foundation
import MIDI
import RouteFile
import Testing

/// `drums style PATH` while jambridge runs (issue 29, item 7): only a style file inside the route files' folders is
/// opened, and no refusal quotes a file, whatever it holds.
@Suite struct StyleCommandTests {
    /// A route folder with a route file, a style in it and a valid style beside it (outside); the folder resolved.
    private func setting() throws -> (folder: String, routeFile: String, outside: String) {
        let top = try temporaryDirectory()
        let folder = top.appendingPathComponent("routes")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let routeFile = try write("drums: {}\n", to: "jam.yaml", in: folder)
        let style = "groove:\n  clave: \"1 . . 1 . . 1 . . . 1 . 1 . . .\"\n"
        _ = try write(style, to: "clave.yaml", in: folder)
        let outside = try write(style, to: "elsewhere.yaml", in: top)
        return (StyleFile.folders(ofRouteFiles: [routeFile])[0], routeFile, outside)
    }

    private func load(_ path: String, _ setting: (folder: String, routeFile: String, outside: String)) throws(StyleCommandError) -> Style {
        try StyleFile.load(command: path, besideRouteFile: setting.routeFile, inside: [setting.folder])
    }

    @Test func aStyleInsideTheFoldersPlaysByAbsoluteOrRelativePathOrASymlinkThatStaysInside() throws {
        let setting = try setting()
        #expect(try load(setting.folder + "/clave.yaml", setting).name == "clave")
        #expect(try load("clave.yaml", setting).name == "clave")
        #expect(try load("./sub/../clave.yaml", setting).name == "clave")
        try FileManager.default.createSymbolicLink(atPath: setting.folder + "/link.yaml", withDestinationPath: setting.folder + "/clave.yaml")
        #expect(try load("link.yaml", setting).name == "clave")
    }

    @Test func passwdAFileOutsideASymlinkOutAndDotDotAreRefusedUnopenedWithoutQuotingThem() throws {
        let setting = try setting()
        try FileManager.default.createSymbolicLink(atPath: setting.folder + "/passwd.yaml", withDestinationPath: "/etc/passwd")
        try FileManager.default.createSymbolicLink(atPath: setting.folder + "/out.yaml", withDestinationPath: setting.outside)
        try FileManager.default.createSymbolicLink(atPath: setting.folder + "/etc", withDestinationPath: "/etc")
        let passwd = try String(contentsOfFile: "/etc/passwd", encoding: .utf8)
        let firstLine = String(passwd.prefix { $0 != "\n" })
        for path in ["/etc/passwd", "/etc/shadow", setting.outside, "passwd.yaml", "out.yaml", "etc/passwd", "../elsewhere.yaml",
                     setting.folder + "/../elsewhere.yaml", "/etc/no-such-file.yaml", "../no-such-file.yaml"] {
            #expect(throws: StyleCommandError.outside(path: path, folders: [setting.folder]), "\(path)") { try load(path, setting) }
        }
        let refusal = StyleCommandError.outside(path: "/etc/passwd", folders: [setting.folder]).description
        #expect(refusal == "'/etc/passwd' is not a style file in the route files' folders (\(setting.folder)): while jambridge runs, "
                + "'drums style' takes a built-in style (rock, funk, bossa, six-eight) or a style file there")
        #expect(!refusal.contains(firstLine))
        // Inside, nothing there (or a symlink to nothing) is said so.
        try FileManager.default.createSymbolicLink(atPath: setting.folder + "/dangling.yaml", withDestinationPath: "/etc/no-such-file.yaml")
        #expect(throws: StyleCommandError.missing(path: "gone.yaml")) { try load("gone.yaml", setting) }
        #expect(throws: StyleCommandError.missing(path: "dangling.yaml")) { try load("dangling.yaml", setting) }
    }

    @Test func aFileInsideThatIsNoStyleIsRefusedWithWhereAndWhatNeverWhatItSays() throws {
        let setting = try setting()
        // /etc/passwd's and /etc/shadow's shapes, copied inside: one multi-line scalar, and keys ending in ':'.
        let cases: [(yaml: String, mistakes: [String])] = [
            ("root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n",
             ["1:1: a style file is a mapping with 'groove:' and the style's settings, not text"]),
            ("root:*:20228:0:99999:7:::\nsecret:$y$j9T$abc:20228:0:99999:7:::\n",
             ["1:1: unknown key in a style file; the keys are name, time, steps, levels, swing, humanize, phrase, groove, fill",
              "2:1: unknown key in a style file; the keys are name, time, steps, levels, swing, humanize, phrase, groove, fill",
              "1:1: a style has a 'groove:' mapping each voice to its steps, such as 'kick: \"1 . . . 1 . . .\"'"]),
        ]
        for (yaml, mistakes) in cases {
            let path = try write(yaml, to: "secret.yaml", in: URL(fileURLWithPath: setting.folder))
            let expected = StyleCommandError.notAStyle(path: path, mistakes: mistakes.map { mistake in
                let parts = mistake.split(separator: ":", maxSplits: 2)
                return RouteFileError(location: SourceLocation(file: path, line: Int(parts[0])!, column: Int(parts[1])!),
                                      message: String(parts[2].dropFirst()))
            })
            #expect(throws: expected) { try load("secret.yaml", setting) }
            let text = expected.description.replacingOccurrences(of: path, with: "PATH")
            for word in ["root", "daemon", "20228", "nologin", "$y$"] { #expect(!text.contains(word), "\(text)") }
        }
    }

    /// Hostile text in every place a style file has (keys, values, steps, names, duplicates, broken YAML): read on
    /// the command's word, no mistake holds it; read from a route file, the same mistakes quote it, as they should.
    @Test func noMistakeOfAStyleReadOnTheCommandsWordQuotesTheFile() throws {
        let marker = "Zq7Secret"
        let documents = [
            "\(marker)",
            "\(marker):\n",
            "\(marker): 1\ngroove: { kick: \"1 . . .\" }\n",
            "steps: \(marker)\ngroove: { kick: \"1\" }\n",
            "time: \(marker)\ngroove: { kick: \"1\" }\n",
            "swing: \(marker)\ngroove: { kick: \"1\" }\n",
            "humanize: { \(marker): 1, time: \(marker) }\ngroove: { kick: \"1\" }\n",
            "humanize: \(marker)\ngroove: { kick: \"1\" }\n",
            "groove: { \(marker): \"1\" }\n",
            "groove: { kick: \"1 \(marker) .\" }\nsteps: 3\n",
            "groove: { kick: [\(marker)] }\n",
            "groove: \(marker)\n",
            "groove: { kick: \"1\" }\nfill: { \(marker): \"1\" }\nsteps: 1\n",
            "groove: { kick: \"1\" }\ngroove: { kick: \"1\" }\n\(marker): 1\n\(marker): 2\n",
            "groove: { kick: \"1\" }\n\(marker): [unclosed\n",
            "groove: { kick: \"1\" }\nname: *\(marker)\n",
            "\t\(marker): 1\n",
            "- \(marker)\n- \(marker)\n",
            "name: { \(marker): 1 }\ngroove: { kick: \"1\" }\n",
            "phrase: \(marker)\ngroove: { kick: \"1\" }\n",
        ].map { ($0, [marker]) } + [
            ("steps: 4321\ngroove: { kick: \"1\" }\n", ["4321"]),
            ("levels: 8765\ngroove: { kick: \"1\" }\n", ["8765"]),
            ("groove: { kick: \"7\" }\nlevels: 2\nsteps: 1\n", ["level 7"]),
        ]
        var quotedInRouteFiles = 0
        for (yaml, hidden) in documents {
            let sealed: [RouteFileError]
            do {
                _ = try StyleFile.parse(yaml: yaml, file: "s.yaml", quotingText: false)
                Issue.record("\(yaml) was read as a style")
                continue
            } catch {
                sealed = error.errors
            }
            #expect(!sealed.isEmpty)
            for mistake in sealed {
                #expect(!hidden.contains { mistake.message.contains($0) }, "\(yaml): \(mistake.message)")
            }
            do {
                _ = try StyleFile.parse(yaml: yaml, file: "s.yaml")
            } catch {
                #expect(error.errors.map(\.location) == sealed.map(\.location), "\(yaml)")
                if error.errors.contains(where: { mistake in hidden.contains { mistake.message.contains($0) } }) { quotedInRouteFiles += 1 }
            }
        }
        #expect(quotedInRouteFiles >= 10)
    }
}
