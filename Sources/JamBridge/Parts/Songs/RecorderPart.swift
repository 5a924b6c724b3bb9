import Dispatch
import RouteFile

/// A `record:` endpoint: what is routed to it recorded as a Standard MIDI File (`MIDIRecorder`), which claims its
/// take when made.
final class RecorderPart: Part {
    private let declaration: EndpointDeclaration
    private let recorder: MIDIRecorder
    private var queue: DispatchQueue?

    static func blocks(in configuration: RouteConfiguration) -> [(key: String, block: Declared<String>)] {
        configuration.endpoints { if case .recorder(let path) = $0 { path } else { nil } }
    }

    init(_ block: Declared<String>, in configuration: RouteConfiguration, context: PartContext) throws(PartFailure) {
        declaration = block.declaration
        do {
            recorder = try MIDIRecorder(name: declaration.name, requested: block.settings, logger: context.logger)
        } catch {
            throw PartFailure(problem: "\(declaration.location): \(declaration.name): cannot record: \(error)",
                              consequence: "this endpoint stays silent")
        }
    }

    var endpoints: [String: RunningEndpoint] { [declaration.name: RunningEndpoint(sink: recorder)] }

    /// Records on into the same take while its `record:` path stays as it is.
    func apply(_ block: Declared<String>, in configuration: RouteConfiguration) -> PartUpdate {
        block.declaration.kind == declaration.kind ? .applied : .replace
    }

    /// Learns the engine's queue, where the recorder counts what it leaves out.
    func start(_ wiring: Wiring) {
        queue = wiring.engine.queue
    }

    func report(into status: inout DaemonStatus) {
        status.recordings[declaration.name] = DaemonStatus.Recording(path: recorder.path)
        if let queue {
            status.endpoints[declaration.name, default: DaemonStatus.Traffic()].dropped = ["systemMessages": queue.sync { recorder.leftOut }]
        }
    }
}
