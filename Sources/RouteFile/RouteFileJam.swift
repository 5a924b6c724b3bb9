import Jam
import MIDI

/// The jam a route file's `clock:` and `activity:` blocks declare (either turns it on; the other takes its
/// defaults).
public struct JamDeclaration: Equatable, Sendable {
    /// The name of the jam's endpoint.
    public static let endpointName = "jam"
    /// The tempo jambridge's own clock starts at when `tempo:` is not written.
    public static let defaultTempo = 120.0

    /// Who may lead the rhythm (`first-start`, `fixed:`, `priority:`).
    public var policy: ElectionConfiguration.Policy = .firstStart
    /// What the master leaving does (`on-master-lost:`).
    public var onMasterLost: ElectionConfiguration.MasterLost = .stop
    /// jambridge's own clock's tempo until `jambridge tempo` changes it.
    public var tempo = JamDeclaration.defaultTempo
    /// The endpoints that get the session's clock (`to:`), in the order written.
    public var clockOutputs: [String] = []
    /// The Ableton Link session the jam shares its tempo, beats and transport with (`link:`); nil: none.
    public var link: LinkSettings?
    /// The controllers of the levels and the total, and how levels combine (`activity:`).
    public var activity = ActivityConfiguration()
    /// Where the `clock` block is written, else the `activity` block.
    public var location: SourceLocation

    public init(location: SourceLocation) {
        self.location = location
    }
}

/// The `clock:` and `activity:` blocks of one file, before the files are merged.
struct JamBlocks {
    /// A `clock:` block, with its `to:` names (checked once every file's endpoints are known).
    struct Clock {
        var declaration: JamDeclaration
        var outputs: [EndpointReference]
        var location: SourceLocation { declaration.location }
    }

    /// An `activity:` block and where it is written.
    struct Activity {
        var configuration: ActivityConfiguration
        var location: SourceLocation
    }

    var clock: Clock?
    var activity: Activity?
}

/// The reader of the top-level `clock:` and `activity:` blocks, which declare the jam.
struct JamReader: RouteFileReader {
    let file: String
    var errors: [RouteFileError] = []
    var notes: [RouteFileNote] = []

    /// Reads the `clock:` block written at `key`: `first-start` (or nothing), or a mapping of `fixed:` or
    /// `priority:`, `on-master-lost:`, `tempo:` and `to:`.
    mutating func readClock(_ node: Node, key: Node) -> JamBlocks.Clock {
        var declaration = JamDeclaration(location: location(key))
        var outputs: [EndpointReference] = []
        if Self.isEmpty(node) || node.scalar?.string == "first-start" { return JamBlocks.Clock(declaration: declaration, outputs: outputs) }
        guard let mapping = node.mapping else {
            fail(node, "'clock' is a mapping such as '{ priority: [teacher], to: [drums] }' or 'first-start', not "
                 + Self.describe(node))
            return JamBlocks.Clock(declaration: declaration, outputs: outputs)
        }
        var policyKey: String?
        for (keyNode, value) in mapping {
            guard let name = scalarKey(keyNode) else { continue }
            switch name {
            case "fixed", "priority", "first-start":
                if let earlier = policyKey {
                    fail(keyNode, "'\(earlier)' and '\(name)' together: the clock master is chosen one way, "
                         + "'first-start' (the default), 'fixed: NAME' or 'priority: [NAME, ...]'")
                    continue
                }
                policyKey = name
                if let policy = readPolicy(name, value) { declaration.policy = policy }
            case "on-master-lost":
                switch value.scalar?.string {
                case "stop": declaration.onMasterLost = .stop
                case "next": declaration.onMasterLost = .next
                default:
                    fail(value, "'on-master-lost' is 'stop' (the rhythm ends) or 'next' (this instance continues the song), "
                         + "not '\(value.scalar?.string ?? Self.describe(value))'")
                }
            case "tempo":
                let range = ClockGenerator.tempoRange
                guard let text = value.scalar?.string, let tempo = Double(text), range.contains(tempo) else {
                    let beats = "'tempo' is beats a minute, \(Int(range.lowerBound))-\(Int(range.upperBound)), such as 120"
                    if let (number, unit) = value.scalar.flatMap({ Self.numberAndUnit($0.string) }) {
                        fail(value, "\(beats): write the number alone, 'tempo: \(number)', without '\(unit)'")
                    } else {
                        fail(value, beats)
                    }
                    continue
                }
                declaration.tempo = tempo
            case "to":
                outputs = readReferences(value, key: keyNode, role: .sink)
            case "link":
                declaration.link = readLink(value)
            default:
                failUnknownKey(keyNode, name, known: RouteFileVocabulary.clockKeys, in: "the 'clock' block")
            }
        }
        declaration.clockOutputs = outputs.map(\.name)
        return JamBlocks.Clock(declaration: declaration, outputs: outputs)
    }

    /// Reads `link:`: `true` (bars of 4 beats, every interface), `false`, or `{ quantum: BEATS, interfaces: [NAME, ...] }`.
    private mutating func readLink(_ node: Node) -> LinkSettings? {
        if let mapping = node.mapping {
            var settings = LinkSettings()
            for (keyNode, value) in mapping {
                guard let name = scalarKey(keyNode) else { continue }
                switch name {
                case "quantum":
                    guard let text = value.scalar?.string, let quantum = Int(text), LinkSettings.quantumRange.contains(quantum) else {
                        fail(value, "'quantum' is the beats in a bar that Link apps start on, \(LinkSettings.quantumRange.lowerBound)-\(LinkSettings.quantumRange.upperBound), such as 4")
                        continue
                    }
                    settings.quantum = Double(quantum)
                case "interfaces":
                    settings.interfaces = readLinkInterfaces(value)
                default:
                    failUnknownKey(keyNode, name, known: ["quantum", "interfaces"], in: "'link'")
                }
            }
            return settings
        }
        guard node.scalar != nil, !Self.isEmpty(node) else {
            fail(node, "'link' is true, false or a mapping such as '{ quantum: 4 }', not \(Self.describe(node))")
            return nil
        }
        return readBool(node, key: "link") == true ? LinkSettings() : nil
    }

    /// `interfaces:`: the network interfaces Link may listen and send on, by name (ip link's), each once; entries with
    /// mistakes are left out.
    private mutating func readLinkInterfaces(_ node: Node) -> [String] {
        let form = "'interfaces' lists the network interfaces Link may use, by name, such as [eth0] or [wlan0, lo]"
        guard let sequence = node.sequence, !sequence.isEmpty else {
            fail(node, Self.isEmpty(node) || node.sequence != nil
                 ? "\(form); leave it out for every interface" : "\(form), not \(Self.describe(node)) (a single name goes in a list)")
            return []
        }
        var names: [String] = []
        for item in sequence {
            // Linux's rule (dev_valid_name): 1-15 bytes, no '/', ':' or white space, not '.' or '..'.
            guard let name = item.scalar?.string, !Self.isEmpty(item), name.utf8.count <= 15, name != ".", name != "..",
                  !name.contains(where: { $0 == "/" || $0 == ":" || $0.isWhitespace }) else {
                fail(item, "\(form); \(Self.describe(item)) is not an interface name "
                     + "(1-15 characters, no '/', ':' or spaces)")
                continue
            }
            guard !names.contains(name) else {
                fail(item, "'\(name)' is listed twice in 'interfaces'")
                continue
            }
            names.append(name)
        }
        return names
    }

    /// The policy `key` sets with `value`: an endpoint or peer name (glob) for `fixed`, a list for `priority`.
    private mutating func readPolicy(_ key: String, _ value: Node) -> ElectionConfiguration.Policy? {
        switch key {
        case "fixed":
            guard let name = value.scalar?.string, !name.isEmpty, !Self.isEmpty(value) else {
                fail(value, "'fixed' names the one endpoint or peer that may start the rhythm, such as 'fixed: tr8'")
                return nil
            }
            return .fixed(NameGlob(name))
        case "priority":
            let items = value.sequence.map(Array.init) ?? []
            let names = items.compactMap { $0.scalar?.string }.filter { !$0.isEmpty }
            guard !items.isEmpty, names.count == items.count else {
                fail(value, "'priority' lists endpoint or peer names (globs), highest first, such as '[teacher, \"ipad*\"]'")
                return nil
            }
            return .priority(names.map(NameGlob.init))
        default:
            guard readBool(value, key: key) == true else {
                if value.scalar?.string.lowercased() == "false" {
                    fail(value, "'first-start: false' chooses nothing; write 'fixed: NAME' or 'priority: [NAME, ...]'")
                }
                return nil
            }
            return .firstStart
        }
    }

    /// Reads the `activity:` block written at `key`: `level:` and `total:` controllers and `combine:`.
    mutating func readActivity(_ node: Node, key: Node) -> ActivityConfiguration {
        var configuration = ActivityConfiguration()
        if Self.isEmpty(node) { return configuration }
        guard let mapping = node.mapping else {
            fail(node, "'activity' is a mapping such as '{ level: { cc: 11 }, total: { cc: 7 }, combine: sum }', not "
                 + Self.describe(node))
            return configuration
        }
        for (keyNode, value) in mapping {
            guard let name = scalarKey(keyNode) else { continue }
            switch name {
            case "level":
                if let address = readControllerAddress(value, key: name, default: configuration.player) {
                    configuration.player = address
                }
            case "total":
                if let address = readControllerAddress(value, key: name, default: configuration.total) {
                    configuration.total = address
                }
            case "combine":
                switch value.scalar?.string {
                case "sum": configuration.combine = .sum
                case "mean": configuration.combine = .mean
                case "max": configuration.combine = .max
                default:
                    fail(value, "'combine' is 'sum' (held at 127), 'mean' or 'max', not '\(value.scalar?.string ?? Self.describe(value))'")
                }
            default:
                failUnknownKey(keyNode, name, known: RouteFileVocabulary.activityKeys, in: "the 'activity' block")
            }
        }
        if configuration.player == configuration.total {
            fail(node, "the level and the total are the same controller; give the total another ('total: { cc: 7 }')")
        }
        return configuration
    }

    /// A controller written as `{ cc: 0-127, channel: 1-16 }` (the channel defaults to `default`'s).
    private mutating func readControllerAddress(_ node: Node, key: String, default address: ControllerAddress) -> ControllerAddress? {
        guard let mapping = node.mapping else {
            fail(node, "'\(key)' is a controller such as '{ cc: 11, channel: 1 }', not \(Self.describe(node))")
            return nil
        }
        var result = address
        for (keyNode, value) in mapping {
            guard let name = scalarKey(keyNode) else { continue }
            switch name {
            case "cc":
                if let controller = readController(value) { result.controller = controller }
            case "channel":
                if let channel = readChannel(value) { result.channel = channel }
            default:
                failUnknownKey(keyNode, name, known: ["cc", "channel"], in: "'\(key)'")
            }
        }
        return result
    }
}
