// Random text never crashes or hangs the route-file loader; whatever it rejects comes with
// at least one error, each with a position inside the text.
import FuzzSupport
import MIDI
import RouteFile
import Routing

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    do {
        let configuration = try RouteConfiguration.parse(yaml: text, file: "fuzz.yaml")
        // A loaded configuration compiles into a graph and routes a note without trapping.
        let ids = Dictionary(uniqueKeysWithValues: configuration.endpoints.enumerated().map { ($1.name, EndpointID(UInt16($0))) })
        let graph = RouteGraph(routes: configuration.compiledRoutes { ids[$0] ?? EndpointID(0) }, endpointCount: ids.count)
        let router = Router(graph: graph, heldCapacity: 64)
        for source in 0..<ids.count {
            router.dispatch(MIDIEvent(.noteOn(channel: UInt4(masking: 0), note: UInt7(masking: 60), velocity: UInt7(masking: 100)),
                                      from: EndpointID(UInt16(source)), at: MonotonicInstant(nanoseconds: 0))) { _, _ in }
        }
        router.releaseAll { _, _ in }
    } catch {
        // YAML breaks lines at LF, CR and CRLF: counting both characters bounds the line count.
        let lines = text.utf8.reduce(1) { $0 + ($1 == 0x0A || $1 == 0x0D ? 1 : 0) }
        precondition(!error.errors.isEmpty, "rejected without an error")
        for e in error.errors { precondition(e.location.line >= 1 && e.location.line <= lines + 1 && e.location.column >= 1, "\(e)") }
    }
    return 0
}

runFuzzer { fuzzOne($0, $1) }
