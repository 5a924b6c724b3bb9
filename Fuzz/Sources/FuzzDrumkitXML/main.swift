// Random bytes never crash or hang the drumkit.xml reader: what it rejects comes with located mistakes in
// the file, what it accepts is a kit the loader can play (velocities within 0-1, finite gains, a layer per
// instrument), and matching its instruments to voices (names of any text) never traps either.
import DrumKits
import Drums
import FuzzSupport

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let xml = Array(UnsafeBufferPointer(start: data, count: size))
    do {
        let (description, _) = try HydrogenDrumkit.parse(xml: xml, file: "/kits/fuzz/drumkit.xml")
        for instrument in description.instruments {
            precondition(!instrument.layers.isEmpty, "an instrument without a layer")
            precondition(instrument.gain.isFinite && instrument.gain >= 0 && (-1...1).contains(instrument.pan) && instrument.pitch.isFinite)
            for layer in instrument.layers {
                precondition(layer.velocities.lowerBound >= 0 && layer.velocities.upperBound <= 1 && layer.gain.isFinite)
                precondition(layer.file.hasPrefix("/"), "a sample path not resolved: \(layer.file)")
            }
        }
        let assignment = description.assignVoices(overrides: [.kick: description.instruments.first?.name ?? "kick"])
        precondition(assignment.instruments.values.allSatisfy { description.instruments.indices.contains($0) })
        trace("\(description.instruments.count) instruments, voices \(assignment.instruments.keys.sorted())")
    } catch {
        guard case .badDescription(let kit, let mistakes) = error else { preconditionFailure("\(error)") }
        precondition(kit == "/kits/fuzz" && !mistakes.isEmpty, "rejected without a mistake")
        for mistake in mistakes {
            precondition(mistake.hasPrefix("/kits/fuzz/drumkit.xml:"), mistake)
            trace(mistake)
        }
    }
    return 0
}

runFuzzer { fuzzOne($0, $1) }
