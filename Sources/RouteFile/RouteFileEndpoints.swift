#if canImport(Glibc)
import Glibc
#endif
import MIDI

/// The reader of the `endpoints:` mapping: each endpoint's name and what it is, one of `file:`, `record:`, `peer:`,
/// `alsa:` or `osc:`, each but a peer's glob read by a reader of its own.
struct EndpointsReader: RouteFileReader {
    let file: String
    var errors: [RouteFileError] = []
    var notes: [RouteFileNote] = []
    /// The endpoints declared, in order.
    private(set) var declarations: [EndpointDeclaration] = []
    /// The names of endpoints whose declaration holds a mistake (reported), so left out.
    private(set) var rejectedNames: [String] = []
    /// The reader of `file:` and `record:` values, which keeps the songs read.
    private(set) var midiFiles: MIDIFileEndpointReader
    /// The reader of `alsa:` values, which keeps the ports they create.
    private(set) var alsa: ALSAEndpointReader
    /// The reader of `osc:` values, which keeps where they listen.
    private(set) var osc: OSCEndpointReader

    /// The reader of the endpoints of the route file `file`, whose MIDI files are found from `directory` and checked on
    /// disk as `checksFiles` and `checkingOnly` say (`MIDIFileEndpointReader`).
    init(file: String, directory: String, checksFiles: Bool, checkingOnly: Bool) {
        self.file = file
        midiFiles = MIDIFileEndpointReader(file: file, directory: directory, checksFiles: checksFiles,
                                           checkingOnly: checkingOnly)
        alsa = ALSAEndpointReader(file: file)
        osc = OSCEndpointReader(file: file)
    }

    /// Reads the `endpoints:` mapping.
    mutating func read(_ node: Node) {
        if Self.isEmpty(node) { return }
        guard let mapping = node.mapping else {
            fail(node, "'endpoints' is a mapping of names to endpoints, such as 'song: { file: demo.mid }', "
                 + "not \(Self.describe(node))")
            return
        }
        for (nameNode, value) in mapping {
            guard let name = scalarKey(nameNode) else { continue }
            guard !name.isEmpty else {
                fail(nameNode, "an endpoint needs a name")
                continue
            }
            if name == RouteFileVocabulary.sessionEndpointName {
                fail(nameNode, "'session' is the reserved name of the network session endpoint; choose another name")
                continue
            }
            if let kind = readEndpointKind(name: name, nameNode: nameNode, value) {
                declarations.append(EndpointDeclaration(name: name, kind: kind, location: location(nameNode)))
            } else {
                rejectedNames.append(name)
            }
        }
    }

    /// Reads one endpoint's mapping, or reports why it is not an endpoint.
    private mutating func readEndpointKind(name: String, nameNode: Node, _ node: Node) -> EndpointKind? {
        let usage = "'file: PATH' (play a MIDI file) or 'record: PATH' (record to a MIDI file)"
        guard let mapping = node.mapping else {
            fail(Self.isEmpty(node) ? nameNode : node, "endpoint '\(name)' needs a mapping with \(usage)")
            return nil
        }
        var filePath: String??
        var recordPath: String??
        var peerGlob: String??
        // What an `alsa:` or `osc:` value makes, nil inside if it had a mistake.
        var adapterKind: EndpointKind??
        var kindKey: String?
        var loop: Bool? = false
        var loopKey: Node?
        var valid = true
        for (keyNode, value) in mapping {
            guard let key = scalarKey(keyNode) else { valid = false; continue }
            switch key {
            case "file", "record", "peer", "alsa", "osc":
                switch key {
                case "file":
                    filePath = midiFiles.readSong(value, key: keyNode)
                    midiFiles.report(into: &errors, &notes)
                case "record":
                    recordPath = midiFiles.readRecording(value, key: keyNode)
                    midiFiles.report(into: &errors, &notes)
                case "peer": peerGlob = readPeerGlob(value, key: keyNode)
                case "osc":
                    adapterKind = osc.read(value, key: keyNode, endpoint: name)
                    osc.report(into: &errors, &notes)
                default:
                    adapterKind = alsa.read(value, key: keyNode, endpoint: name)
                    alsa.report(into: &errors, &notes)
                }
                if let earlier = kindKey {
                    if [earlier, key].contains("osc") {
                        fail(keyNode, "'\(earlier)' and '\(key)' together: an endpoint is one of 'alsa' (ALSA "
                             + "ports), 'osc' (OSC controllers), 'peer' (a session peer), 'file' (play a MIDI file) "
                             + "or 'record' (record to a MIDI file)")
                    } else if [earlier, key].contains("alsa") {
                        fail(keyNode, "'\(earlier)' and '\(key)' together: an endpoint is one of 'alsa' (ALSA "
                             + "ports), 'peer' (a session peer), 'file' (play a MIDI file) or 'record' (record to "
                             + "a MIDI file)")
                    } else if [earlier, key].contains("peer") {
                        fail(keyNode, "'\(earlier)' and '\(key)' together: an endpoint is one of 'peer' "
                             + "(a session peer), 'file' (play a MIDI file) or 'record' (record to a MIDI file)")
                    } else {
                        fail(keyNode, "an endpoint is either 'file' (a source) or 'record' (a sink), not both")
                    }
                    valid = false
                } else {
                    kindKey = key
                }
            case "loop":
                loopKey = keyNode
                loop = readBool(value, key: "loop")
            default:
                failUnknownKey(keyNode, key, known: RouteFileVocabulary.endpointKeys, in: "an endpoint")
                valid = false
            }
        }
        if let loopKey, filePath == nil {
            if kindKey == nil {
                fail(nameNode, "endpoint '\(name)' has 'loop' but no 'file:', the MIDI file to play; write it, such as "
                     + "'\(name): { file: song.mid, loop: true }'")
            } else {
                fail(loopKey, "'loop' applies to 'file' endpoints only")
            }
            valid = false
        }
        guard valid, let loop else { return nil }
        switch (filePath, recordPath, peerGlob, adapterKind) {
        case (.some(.some(let path)), nil, nil, nil):
            return .midiFile(path: path, loop: loop)
        case (nil, .some(.some(let path)), nil, nil):
            return .recorder(path: path)
        case (nil, nil, .some(.some(let glob)), nil):
            return .peer(glob: glob)
        case (nil, nil, nil, .some(.some(let kind))):
            return kind
        case (nil, nil, nil, nil):
            fail(nameNode, "endpoint '\(name)' needs \(usage)")
            return nil
        default:
            return nil
        }
    }

    /// The `peer:` value of an endpoint: a non-empty name glob; nil (reported) otherwise.
    private mutating func readPeerGlob(_ node: Node, key: Node) -> String? {
        guard let glob = node.scalar?.string, !Self.isEmpty(node), !glob.isEmpty else {
            let form = "the peer's session name or a glob such as \"Mike’s *\""
            fail(Self.isEmpty(node) ? key : node,
                 node.scalar != nil ? "'peer' is empty; write \(form)" : "'peer' is \(form), not \(Self.describe(node))")
            return nil
        }
        return glob
    }
}

/// The reader of `file:` and `record:` values: the MIDI files endpoints play and record to, by absolute path; when
/// files are checked, each song is read and timed, and each recording's folder must let it be created.
struct MIDIFileEndpointReader: RouteFileReader {
    let file: String
    var errors: [RouteFileError] = []
    var notes: [RouteFileNote] = []
    /// The route file's directory, which relative paths start from.
    let directory: String
    /// True if the songs and recordings named are checked on disk.
    let checksFiles: Bool
    /// True for `jambridge check`: what only the user who runs the file needs (a folder to record into) is a note.
    let checkingOnly: Bool
    /// The songs read and timed, by path.
    private(set) var songs: [String: TimedSong] = [:]

    /// The song a `file:` value names, read and timed when files are checked; nil (reported) if the path is empty.
    mutating func readSong(_ node: Node, key: Node) -> String? {
        let path = readPath(node, key: key)
        if checksFiles, let path { checkSong(at: path, node) }
        return path
    }

    /// The recording a `record:` value names, checked when files are; nil (reported) if the path is empty.
    mutating func readRecording(_ node: Node, key: Node) -> String? {
        let path = readPath(node, key: key)
        if checksFiles, let path { checkRecording(at: path, node) }
        return path
    }

    /// A path relative to the route file's directory, made absolute; nil (reported) if empty.
    private mutating func readPath(_ node: Node, key: Node) -> String? {
        guard let text = node.scalar?.string, !text.isEmpty else {
            fail(Self.isEmpty(node) ? key : node, "empty path; write the MIDI file's path, relative to this route file")
            return nil
        }
        return FilePaths.absolute(text, in: directory)
    }

    /// Reads and times the song at `path` for `songs`, or reports at `node` why it cannot be played.
    private mutating func checkSong(at path: String, _ node: Node) {
        guard songs[path] == nil else { return }
        do {
            songs[path] = TimedSong(try RegularFile.song(atPath: path))
        } catch {
            fail(node, "cannot play the song '\(path)': \(error)")
        }
    }

    /// Reports at `node` why a recording cannot be made at `path`: it names something other than a file,
    /// or its directory is missing or not writable. (A file already there is kept: the recorder numbers its take.)
    /// When only checking, a directory this user may not write in (an installed example) is a note: whoever runs the
    /// file needs to.
    private mutating func checkRecording(at path: String, _ node: Node) {
        var status = stat()
        if stat(path, &status) == 0, status.st_mode & S_IFMT != S_IFREG {
            fail(node, "cannot record to '\(path)': it is \(RegularFileError.kind(of: status.st_mode)); "
                 + "write the path of a MIDI file to create, such as 'take.mid'")
            return
        }
        let directory = FilePaths.folder(of: path)
        guard stat(directory, &status) == 0 else {
            fail(node, "cannot record to '\(path)': '\(directory)': \(String(cString: strerror(errno)))")
            return
        }
        guard status.st_mode & S_IFMT == S_IFDIR else {
            fail(node, "cannot record to '\(path)': '\(directory)' is not a directory")
            return
        }
        if access(directory, W_OK | X_OK) != 0 {
            let reason = errno
            if checkingOnly, reason == EACCES || reason == EROFS {
                notes.append(RouteFileNote(location: location(node), message:
                    "this user cannot create files in '\(directory)' (\(String(cString: strerror(reason)))), where 'jambridge run' "
                    + "records '\(path)': run it as a user who can, or copy the route file (with the songs it plays) to a folder "
                    + "you can write in"))
            } else {
                fail(node, "cannot record to '\(path)': cannot create files in '\(directory)': \(String(cString: strerror(reason)))")
            }
        }
    }
}
