// Random text never crashes or hangs the route-file loader, nor the style-file reader (the same YAML
// machinery, the drums' language); whatever either rejects comes with at least one error, each with a
// position inside the text. A style that loads plays two bars through the sequencer and mixer.
import Drums
import FuzzSupport
import MIDI
import RouteFile
import Routing

/// A one-sample kit with every voice: the mixer's arithmetic, not the sound, is what is fuzzed.
let clickKit = Kit(name: "click", instruments: Dictionary(uniqueKeysWithValues: DrumVoice.allCases.map {
    ($0, KitInstrument(name: $0.rawValue, voice: $0, layers: [KitLayer(sample: Sample(left: [1]))], chokeGroup: $0 == .hat ? 1 : nil))
}))

/// Checks that every error of a rejected `text` is located inside it.
func checkLocated(_ errors: RouteFileErrors, in text: String) {
    // YAML breaks lines at LF, CR and CRLF: counting both characters bounds the line count.
    let lines = text.utf8.reduce(1) { $0 + ($1 == 0x0A || $1 == 0x0D ? 1 : 0) }
    precondition(!errors.errors.isEmpty, "rejected without an error")
    for e in errors.errors { precondition(e.location.line >= 1 && e.location.line <= lines + 1 && e.location.column >= 1, "\(e)") }
}

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
                                      from: EndpointID(UInt16(source)), at: MonotonicInstant(nanoseconds: 0))) { _, _, _ in }
        }
        router.releaseAll { _, _, _ in }
    } catch {
        checkLocated(error, in: text)
    }
    do {
        let style = try StyleFile.parse(yaml: text, file: "fuzz.yaml")
        _ = DrumRender.render(DrumSequencer(style: style, seed: UInt64(size)), kit: clickKit, tempo: 300, bars: 2) {
            UInt8(min(127, $0 * 64))
        } write: { frames in
            precondition(frames.allSatisfy { $0.isFinite }, "a style rendered a frame that is not a number")
        }
    } catch {
        checkLocated(error, in: text)
    }
    return 0
}

runFuzzer { fuzzOne($0, $1) }
