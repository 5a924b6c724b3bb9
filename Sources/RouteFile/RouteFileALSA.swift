#if canImport(Glibc)
import Glibc
#endif
import MIDI

/// Which ports of the matching ALSA clients an `alsa: "CLIENT:PORT"` endpoint means.
public enum ALSAPortPattern: Hashable, Sendable {
    /// Every port of the client (`alsa: "CLIENT"`, or `"CLIENT:*"`).
    case all
    /// The port with this number, 0-255 (`alsa: "TR-8:0"`).
    case number(Int)
    /// The ports whose names match this glob (`alsa: "FLUID Synth*:Synth input*"`).
    case name(String)

    /// True if the port numbered `number` and called `name` is one this pattern means.
    public func matches(number: Int, name: String) -> Bool {
        switch self {
        case .all: true
        case .number(let wanted): number == wanted
        case .name(let glob): NameGlob(glob).matches(name)
        }
    }
}

/// jambridge's own ALSA sequencer client, as the top-level `alsa:` block declares it.
public struct ALSADeclaration: Equatable, Sendable {
    /// The client name when `client:` is not written.
    public static let defaultClientName = "jambridge"

    /// The sequencer client's name other programs see (`aconnect -l`), 1-63 UTF-8 bytes.
    public var client: String
    /// Where the `alsa` block is written, or the first `alsa:` endpoint when no file declares the block.
    public var location: SourceLocation

    /// The client called `client`, declared at `location`.
    public init(client: String = ALSADeclaration.defaultClientName, location: SourceLocation) {
        self.client = client
        self.location = location
    }
}

extension ALSADeclaration {
    /// The ALSA sequencer's device, which `alsa:` endpoints need.
    public static let sequencerDevice = "/dev/snd/seq"
    /// ALSA's limit on a client or port name (a 64-byte C string), in UTF-8 bytes.
    static let maximumNameBytes = 63

    /// What to do when the sequencer cannot be opened for the reason `code` (an errno).
    public static func remedy(forErrno code: Int32) -> String {
        let remove = "or remove the alsa: endpoints"
        switch code {
        case ENOENT, ENODEV, ENXIO:
            return "this machine has no ALSA sequencer: load it with 'sudo modprobe snd-seq' (in a VM or a container, the "
                + "host must give it \(sequencerDevice)), \(remove)"
        case EACCES, EPERM:
            return "this user may not use the ALSA sequencer: add the user to the 'audio' group ('sudo usermod -aG audio "
                + "USER', then log in again), \(remove)"
        default:
            return "load the sequencer with 'sudo modprobe snd-seq' and make sure the user is in the 'audio' group, \(remove)"
        }
    }

    /// Why this user cannot open the sequencer here, as far as access(2) tells without opening it, and what to do;
    /// nil if it looks fine.
    public static func sequencerProblem() -> (problem: String, fix: String)? {
        guard access(sequencerDevice, R_OK | W_OK) != 0 else { return nil }
        let code = errno
        return ("cannot open the ALSA sequencer (\(sequencerDevice)): \(String(cString: strerror(code)))", remedy(forErrno: code))
    }
}

/// The reader of the top-level `alsa:` block: jambridge's own sequencer client.
struct ALSAClientReader: RouteFileReader {
    let file: String
    var errors: [RouteFileError] = []
    var notes: [RouteFileNote] = []

    /// Reads the top-level `alsa:` mapping written at `key`; a `client:` with a mistake keeps the default.
    mutating func read(_ node: Node, key: Node) -> ALSADeclaration {
        var declaration = ALSADeclaration(location: location(key))
        if Self.isEmpty(node) { return declaration }
        guard let mapping = node.mapping else {
            fail(node, "'alsa' is a mapping such as '{ client: jambridge rack }', not \(Self.describe(node))")
            return declaration
        }
        for (keyNode, value) in mapping {
            guard let name = scalarKey(keyNode) else { continue }
            switch name {
            case "client":
                if let client = readBoundedName(
                    value, key: keyNode, maximumBytes: ALSADeclaration.maximumNameBytes, what: "the ALSA client name",
                    limits: "ALSA names",
                    notText: "'client' is the ALSA client's name as text, such as 'jambridge rack'",
                    ifEmpty: "write the name other programs see, such as 'jambridge rack', or leave 'client' out for "
                        + "'\(ALSADeclaration.defaultClientName)'") {
                    declaration.client = client
                }
            default:
                failUnknownKey(keyNode, name, known: RouteFileVocabulary.alsaKeys, in: "the 'alsa' block")
            }
        }
        return declaration
    }
}

/// The reader of `alsa:` endpoints: ports of existing clients, or ports jambridge creates, whose names it keeps (one
/// client cannot create two ports with one name).
struct ALSAEndpointReader: RouteFileReader {
    /// The highest port number a sequencer client can have here.
    static let maximumPortNumber = 255

    let file: String
    var errors: [RouteFileError] = []
    var notes: [RouteFileNote] = []
    /// The ports `{ create: NAME }` values create, with their endpoint and where each name is written.
    private(set) var createdPorts: [(name: String, endpoint: String, location: SourceLocation)] = []

    /// The `alsa:` value of endpoint `endpoint`: "CLIENT", "CLIENT:PORT" or `{ create: NAME }`; nil (reported) otherwise.
    mutating func read(_ node: Node, key: Node, endpoint: String) -> EndpointKind? {
        let forms = "a client name or glob such as \"USB Keyboard*\", \"CLIENT:PORT\" such as \"TR-8:0\", "
            + "or { create: NAME } for a port jambridge creates"
        if let mapping = node.mapping {
            return readALSACreation(mapping, at: node, endpoint: endpoint)
        }
        guard let text = node.scalar?.string, !Self.isEmpty(node), !text.isEmpty else {
            fail(Self.isEmpty(node) ? key : node,
                 node.scalar != nil ? "'alsa' is empty; write \(forms)" : "'alsa' is \(forms), not \(Self.describe(node))")
            return nil
        }
        // Split at the last ':': ALSA client names hardly ever hold one, and "A:B:*" still reaches a client "A:B".
        guard let colon = text.lastIndex(of: ":") else {
            guard let client = checkedALSAClientGlob(text, at: node) else { return nil }
            return .alsaPorts(client: client, port: .all)
        }
        let clientPart = String(text[..<colon])
        let portPart = String(text[text.index(after: colon)...])
        guard !clientPart.isEmpty else {
            fail(node, "no ALSA client before ':' in '\(text)'; write the client's name or a glob, such as \"TR-8:0\"")
            return nil
        }
        guard !portPart.isEmpty else {
            fail(node, "no port after ':' in '\(text)'; write a port number 0-\(Self.maximumPortNumber) or a "
                 + "port name glob, such as \"TR-8:0\", or leave ':' out for every port of the client")
            return nil
        }
        guard let client = checkedALSAClientGlob(clientPart, at: node) else { return nil }
        if portPart.allSatisfy(\.isASCIIDigit) {
            guard let number = Int(portPart), number <= Self.maximumPortNumber else {
                fail(node, "port \(portPart) is out of range; ALSA port numbers are 0-\(Self.maximumPortNumber) "
                     + "(see 'aconnect -l'), or write a port name glob")
                return nil
            }
            return .alsaPorts(client: client, port: .number(number))
        }
        if portPart.allSatisfy({ $0 == "*" }) { return .alsaPorts(client: client, port: .all) }
        return .alsaPorts(client: client, port: .name(portPart))
    }

    /// `glob` as an ALSA client name glob; nil (reported at `node`) if it is a client number.
    private mutating func checkedALSAClientGlob(_ glob: String, at node: Node) -> String? {
        // "20:0" is how aconnect shows a port, but client numbers change when devices come and go.
        guard !glob.allSatisfy(\.isASCIIDigit) else {
            fail(node, "'\(glob)' is an ALSA client number, which changes when devices are plugged in; write the "
                 + "client's name or a glob instead, such as \"USB Keyboard*\" (see 'aconnect -l')")
            return nil
        }
        return glob
    }

    /// An `alsa:` endpoint written as a mapping: `{ create: NAME }`.
    private mutating func readALSACreation(_ mapping: Node.Mapping, at node: Node, endpoint: String) -> EndpointKind? {
        var name: String?
        var sawCreate = false
        var valid = true
        for (keyNode, value) in mapping {
            guard let key = scalarKey(keyNode) else { valid = false; continue }
            switch key {
            case "create":
                sawCreate = true
                name = readBoundedName(
                    value, key: keyNode, maximumBytes: ALSADeclaration.maximumNameBytes, what: "the port name",
                    limits: "ALSA names", notText: "'create' is the name of the port jambridge creates, such as \"jam out\"",
                    ifEmpty: "write the name other programs see, such as { create: \"jam out\" }")
                if let name {
                    createdPorts.append((name: name, endpoint: endpoint, location: location(value)))
                } else {
                    valid = false
                }
            default:
                failUnknownKey(keyNode, key, known: RouteFileVocabulary.alsaEndpointKeys, in: "an 'alsa' mapping")
                valid = false
            }
        }
        if !sawCreate {
            // A misspelt 'create' was reported as such; saying it is missing too would only repeat it.
            if valid {
                fail(node, "an 'alsa' mapping needs 'create: NAME', the name of the port jambridge creates, "
                     + "such as { create: \"jam out\" }")
            }
            return nil
        }
        guard valid, let name else { return nil }
        return .alsaCreated(name: name)
    }
}

extension Character {
    /// True for the ASCII digits 0-9 (not other scripts' digits, which `Int` would not read).
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
