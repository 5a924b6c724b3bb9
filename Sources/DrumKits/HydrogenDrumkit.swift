import Drums

/// Hydrogen drumkits: a folder with a drumkit.xml and its samples, read into a `KitDescription`. All of Hydrogen's
/// layouts: the current one (an instrument's layers in `instrumentComponent`), the legacy one (layers directly in
/// the instrument) and the oldest (one `filename` in the instrument). Instruments without a sample (Hydrogen's empty
/// slots) are left out.
public enum HydrogenDrumkit {
    /// The description's file name in a kit's folder.
    public static let fileName = "drumkit.xml"
    /// The largest drumkit.xml read, 4 MiB (Debian's largest is 40 KB).
    public static let sizeLimit = 4 << 20

    /// The kit the drumkit.xml at `path` describes, and what of it was left out; its samples are in its folder.
    public static func read(path: String) throws(KitError) -> (description: KitDescription, warnings: [KitWarning]) {
        let bytes: [UInt8]
        do {
            bytes = try KitFileAccess.contents(of: path, limit: sizeLimit)
        } catch {
            throw KitError.badDescription(kit: folder(of: path), mistakes: ["\(path): cannot be read: \(error.reason)"])
        }
        return try parse(xml: bytes, file: path)
    }

    /// Reads `xml` as the drumkit.xml at `file` (which is not opened: its folder is where the samples are).
    public static func parse(xml: [UInt8], file: String) throws(KitError) -> (description: KitDescription, warnings: [KitWarning]) {
        let kit = folder(of: file)
        let root: DrumkitXMLElement
        do {
            root = try DrumkitXMLElement.tree(of: xml)
        } catch {
            throw KitError.badDescription(kit: kit, mistakes: ["\(file):\(error.line):\(error.column): \(error.message)"])
        }
        var reader = DrumkitReader(file: file, kit: kit)
        let description = reader.description(of: root)
        guard reader.mistakes.isEmpty, let description else { throw KitError.badDescription(kit: kit, mistakes: reader.mistakes) }
        return (description, reader.warnings)
    }

    /// The folder `path` is in ("." for a bare file name).
    static func folder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}

/// The reader of one drumkit.xml's element tree, collecting every mistake.
private struct DrumkitReader {
    let file: String
    let kit: String
    private(set) var mistakes: [String] = []
    private(set) var warnings: [KitWarning] = []

    init(file: String, kit: String) {
        self.file = file
        self.kit = kit
    }

    mutating func description(of root: DrumkitXMLElement) -> KitDescription? {
        guard root.name == "drumkit_info" else {
            fail(root, "the document is <\(root.name)>, not <drumkit_info>: this is not a Hydrogen drumkit")
            return nil
        }
        guard let list = root.child("instrumentList") else {
            fail(root, "<drumkit_info> has no <instrumentList>: a Hydrogen drumkit lists its instruments there")
            return nil
        }
        let written = root.value("name") ?? ""
        let name = written.isEmpty ? String(kit.split(separator: "/").last ?? "drum kit") : written
        return KitDescription(name: name, instruments: list.children("instrument").compactMap { instrument($0) })
    }

    /// The instrument `element` describes, or nil if it has no sample (or a mistake).
    private mutating func instrument(_ element: DrumkitXMLElement) -> KitDescription.Instrument? {
        let name = element.value("name") ?? ""
        let volume = number(element, "volume", default: 1, in: 0...16, what: "a volume")
        let gain = number(element, "gain", default: 1, in: 0...16, what: "a gain")
        let pitch = number(element, "pitchOffset", default: 0, in: -48...48, what: "a pitch in semitones")
        let pan = pan(of: element)
        let muteGroup = integer(element, "muteGroup")
        let note = integer(element, "midiOutNote")
        let components = element.children("instrumentComponent")
        var componentGain: Float = 1
        var layerElements = element.children("layer")
        if let first = components.first {
            componentGain = number(first, "gain", default: 1, in: 0...16, what: "a gain") ?? 1
            layerElements = first.children("layer")
        }
        var layers = layerElements.compactMap { layer($0) }
        if layerElements.isEmpty, let sample = element.value("filename"), !sample.isEmpty {
            layers = [KitDescription.Layer(file: path(of: sample))]
        }
        guard !layers.isEmpty, let volume, let gain, let pitch, let pan else { return nil }
        if components.count > 1 { warnings.append(.componentsLeftOut(kit: kit, instrument: name, count: components.count - 1)) }
        return KitDescription.Instrument(
            name: name, note: note.flatMap { (0...127).contains($0) ? UInt8($0) : nil }, gain: volume * gain * componentGain,
            pan: pan, pitch: pitch, chokeGroup: muteGroup.flatMap { $0 >= 0 ? $0 : nil }, layers: layers)
    }

    /// The layer `element` describes, or nil if it names no sample (or has a mistake).
    private mutating func layer(_ element: DrumkitXMLElement) -> KitDescription.Layer? {
        guard let sample = element.value("filename"), !sample.isEmpty else { return nil }
        let low = number(element, "min", default: 0, in: 0...1, what: "a velocity (0-1)")
        let high = number(element, "max", default: 1, in: 0...1, what: "a velocity (0-1)")
        let gain = number(element, "gain", default: 1, in: 0...16, what: "a gain")
        let pitch = number(element, "pitch", default: 0, in: -48...48, what: "a pitch in semitones")
        guard let low, let high, let gain, let pitch else { return nil }
        guard low <= high else {
            fail(element, "the layer's <min> velocity, \(low), is above its <max>, \(high)")
            return nil
        }
        return KitDescription.Layer(velocities: low...high, gain: gain, pitch: pitch, file: path(of: sample))
    }

    /// The instrument's pan, -1 (left) to 1 (right): `pan`, or the older `pan_L`/`pan_R` channel gains converted as
    /// Hydrogen does (the louder side stays, the other's ratio to it is how far the sound moves towards it).
    private mutating func pan(of element: DrumkitXMLElement) -> Float? {
        if element.child("pan") != nil { return number(element, "pan", default: 0, in: -1...1, what: "a pan") }
        guard element.child("pan_L") != nil, element.child("pan_R") != nil else { return 0 }
        let left = number(element, "pan_L", default: 1, in: 0...16, what: "a channel gain")
        let right = number(element, "pan_R", default: 1, in: 0...16, what: "a channel gain")
        guard let left, let right else { return nil }
        if left == 0 && right == 0 { return 0 }
        return left >= right ? right / left - 1 : 1 - left / right
    }

    /// The number in the child `name` of `element` (`fallback` if there is none), reported unless it is in `range`.
    private mutating func number(_ element: DrumkitXMLElement, _ name: String, default fallback: Float,
                                 in range: ClosedRange<Float>, what: String) -> Float? {
        guard let child = element.child(name) else { return fallback }
        let text = child.text
        guard let value = Float(text), range.contains(value) else {
            fail(child, "<\(name)> is '\(text)', not \(what) (\(Self.shown(range.lowerBound)) to \(Self.shown(range.upperBound)))")
            return nil
        }
        return value
    }

    /// The whole number in the child `name` of `element`, if there is one (Hydrogen writes -1 for none).
    private mutating func integer(_ element: DrumkitXMLElement, _ name: String) -> Int? {
        guard let child = element.child(name) else { return nil }
        let text = child.text
        guard let value = Int(text) else {
            fail(child, "<\(name)> is '\(text)', not a whole number")
            return nil
        }
        return value
    }

    /// `value` as a message writes it: 16, not 16.0.
    private static func shown(_ value: Float) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }

    /// Where the sample `name` is: in the kit's folder unless it is an absolute path (older Hydrogen songs).
    private func path(of name: String) -> String {
        name.hasPrefix("/") ? name : kit + "/" + name
    }

    private mutating func fail(_ element: DrumkitXMLElement, _ message: String) {
        mistakes.append("\(file):\(element.line): \(message)")
    }
}
