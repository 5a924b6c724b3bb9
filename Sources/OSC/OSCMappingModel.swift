import MIDI
import Transport

/// Where an OSC endpoint listens and whom it answers (`osc: { listen: 8000, reply: 9000 }`).
public struct OSCEndpointSettings: Hashable, Sendable {
    /// The numeric local address to listen on; `0.0.0.0` (every IPv4 interface) unless `host:` says otherwise.
    public var listenHost: String
    /// The UDP port controllers send to (`listen:`), 1-65535.
    public var listenPort: UInt16
    /// The port controllers listen on for feedback (`reply:`); nil answers each controller at the port it sends from.
    public var replyPort: UInt16?
    /// Further receivers of everything the endpoint sends (`send: ["HOST:PORT", ...]`), e.g. Pd or SuperCollider.
    public var targets: [OSCTarget]
    /// The senders whose datagrams are taken (`accept:`); others are ignored and counted, never answered.
    public var accept: AddressAcceptance
    /// Seconds a controller may stay silent before it counts as gone (`forget:`); its next message brings it
    /// a full-state resend.
    public var forgetAfter: Double
    /// True if senders may command the daemon by `/jambridge/...` (start, stop, tempo, drums) (`control:`); off by
    /// default, since anyone `accept` admits could.
    public var control: Bool

    /// The default `forget:`: a phone that was locked or switched apps for this long is sent everything again.
    public static let defaultForgetAfter = 10.0

    /// An endpoint listening on `listenHost:listenPort`, taking datagrams from the senders `accept` admits (by
    /// default this machine and the local networks).
    public init(listenHost: String = "0.0.0.0", listenPort: UInt16, replyPort: UInt16? = nil,
                targets: [OSCTarget] = [], accept: AddressAcceptance = .local,
                forgetAfter: Double = OSCEndpointSettings.defaultForgetAfter, control: Bool = false) {
        self.listenHost = listenHost
        self.listenPort = listenPort
        self.replyPort = replyPort
        self.targets = targets
        self.accept = accept
        self.forgetAfter = forgetAfter
        self.control = control
    }
}

/// A fixed receiver of an OSC endpoint's messages (`send:` entry `"HOST:PORT"`).
public struct OSCTarget: Hashable, Sendable {
    /// A numeric address or a host name.
    public var host: String
    /// The UDP port, 1-65535.
    public var port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }
}

/// An OSC address with numeric captures, e.g. `/1/fader<n>` or `/1/fader<n:1-8>`.
///
/// `<NAME>` matches one or more decimal digits and binds their value to NAME; `<NAME:LOW-HIGH>` matches only
/// values in that range. Angle brackets are not OSC pattern characters (`*?[]{}` are), so a capture never
/// collides with OSC 1.0 alternation.
public struct OSCAddressTemplate: Hashable, Sendable, CustomStringConvertible {
    /// One piece of the template: text matched exactly, or a numeric capture.
    public enum Piece: Hashable, Sendable {
        case literal(String)
        case capture(name: String, range: ClosedRange<Int>?)
    }

    /// The pieces in order; two captures are never adjacent.
    public var pieces: [Piece]
    /// The template as written in the route file.
    public var description: String

    public init(pieces: [Piece], description: String) {
        self.pieces = pieces
        self.description = description
    }

    /// The capture names, in order.
    public var captureNames: [String] {
        pieces.compactMap { piece in
            if case .capture(let name, _) = piece { name } else { nil }
        }
    }
}

/// A whole number in a mapping that may depend on a capture: `20`, `n`, `n + 20`, `n - 1`.
public struct OSCNumber: Hashable, Sendable, CustomStringConvertible {
    /// The capture whose value is added to `offset`, or nil for a constant.
    public var capture: String?
    /// The constant part.
    public var offset: Int

    public init(capture: String? = nil, offset: Int) {
        self.capture = capture
        self.offset = offset
    }

    /// A constant.
    public static func constant(_ value: Int) -> OSCNumber { OSCNumber(offset: value) }

    public var description: String {
        guard let capture else { return String(offset) }
        if offset == 0 { return capture }
        return offset > 0 ? "\(capture) + \(offset)" : "\(capture) - \(-offset)"
    }
}

/// What an OSC control becomes in MIDI (and what MIDI becomes in OSC, for feedback).
public enum OSCControlTarget: Hashable, Sendable {
    /// One controller per selected argument (`cc: 74`, or `cc: [12, 13]` for an XY pad's two floats).
    case controllers([OSCNumber])
    /// A button (`note: 36`): on (at `velocity`) when the value is above the middle of the input range,
    /// off when at or below it.
    case note(OSCNumber, velocity: Int)
    /// 14-bit pitch bend (`pitchbend: true`); the output range is -8192...8191 unless `to:` says otherwise.
    case pitchBend
    /// Program change (`program: true`).
    case program
    /// Channel pressure (`pressure: true`).
    case channelPressure
}

/// An OSC control mapped onto MIDI: argument selection, input range, output range, curve, smoothing.
public struct OSCControlMapping: Hashable, Sendable {
    public var target: OSCControlTarget
    /// MIDI channel 1-16 (`channel:`, default 1); may depend on a capture.
    public var channel: OSCNumber
    /// The indexes of the arguments read (`arg:` or `args:`), default `[0]`, or `[0, 1, ...]` for a `cc:` list.
    public var arguments: [Int]
    /// The input range (`from: [LOW, HIGH]`, default `[0, 1]`); values outside are clamped into it.
    public var input: ClosedRange<Double>
    /// The output for the input's low end and for its high end (`to: [A, B]`); A > B inverts.
    /// Defaults: 0...127, or -8192...8191 for pitch bend.
    public var output: (low: Int, high: Int)
    /// The curve's exponent (`curve:`): 1 is linear, above 1 starts soft, below 1 starts fast.
    public var exponent: Double
    /// Seconds of low-pass smoothing (`smooth:`), 0 for none.
    public var smoothing: Double

    public init(target: OSCControlTarget, channel: OSCNumber = .constant(1), arguments: [Int] = [0],
                input: ClosedRange<Double> = 0...1, output: (low: Int, high: Int), exponent: Double = 1,
                smoothing: Double = 0) {
        self.target = target
        self.channel = channel
        self.arguments = arguments
        self.input = input
        self.output = output
        self.exponent = exponent
        self.smoothing = smoothing
    }

    public static func == (a: OSCControlMapping, b: OSCControlMapping) -> Bool {
        a.target == b.target && a.channel == b.channel && a.arguments == b.arguments && a.input == b.input
            && a.output == b.output && a.exponent == b.exponent && a.smoothing == b.smoothing
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(target)
        hasher.combine(channel)
        hasher.combine(arguments)
        hasher.combine(output.low)
        hasher.combine(output.high)
    }
}

/// An accelerometer stream turned into the player's activity level (`activity: motion`).
public struct MotionActivityMapping: Hashable, Sendable {
    /// The indexes of the x, y and z arguments (`axes:`, default `[0, 1, 2]`).
    public var axes: [Int]
    /// How many of the stream's units make one g (`units: g` is 1, `units: m/s2` is 9.80665).
    public var unitsPerG: Double
    /// The high-pass cutoff in Hz that removes gravity and slow tilting (`high-pass:`, default 0.5).
    public var highPass: Double
    /// Seconds for the envelope to rise (`attack:`, default 0.05).
    public var attack: Double
    /// Seconds for the envelope to fall (`release:`, default 1.5).
    public var release: Double
    /// Movement energy in g that maps to activity 0 and to 127 (`range: [LOW, HIGH]`, default `[0.03, 0.6]`).
    public var range: ClosedRange<Double>
    /// The activity controller (`cc:`, default 11, MIA's convention).
    public var controller: Int
    /// Its channel (`channel:`, default 1).
    public var channel: Int

    public init(axes: [Int] = [0, 1, 2], unitsPerG: Double = 1, highPass: Double = 0.5, attack: Double = 0.05,
                release: Double = 1.5, range: ClosedRange<Double> = 0.03...0.6, controller: Int = 11, channel: Int = 1) {
        self.axes = axes
        self.unitsPerG = unitsPerG
        self.highPass = highPass
        self.attack = attack
        self.release = release
        self.range = range
        self.controller = controller
        self.channel = channel
    }
}

/// What one `osc:` entry does with the messages its address matches.
public enum OSCAction: Hashable, Sendable {
    case control(OSCControlMapping)
    case motion(MotionActivityMapping)
}

/// One entry of a route's `osc:` block: an address template and what it maps to.
public struct OSCMappingEntry: Hashable, Sendable {
    public var template: OSCAddressTemplate
    public var action: OSCAction
    /// Where the entry's address is written.
    public var location: SourceLocation

    public init(template: OSCAddressTemplate, action: OSCAction, location: SourceLocation) {
        self.template = template
        self.action = action
        self.location = location
    }
}

/// A route's `osc:` block: how the OSC endpoint at either end of the route translates.
///
/// On a route `from:` an OSC endpoint, incoming OSC messages are matched against `entries` in order (the first
/// match wins) and become MIDI for this route. The OSC endpoint's feedback (MIDI routed `to:` it, turned back into
/// OSC) uses the inverse of every entry on every route from or to it. With `midi` on, the plain MIDI-over-OSC
/// family (`/note`, `/cc`, `/pitchbend`, `/program`, `/pressure`) is understood and sent as well; a route from
/// an OSC endpoint without an `osc:` block uses that family alone.
public struct OSCRouteMapping: Hashable, Sendable {
    public var entries: [OSCMappingEntry]
    /// True if the MIDI-over-OSC family is in use (`midi: true`, or no `osc:` block at all).
    public var midi: Bool
    /// Where the `osc` key is written, or the route when there is no block.
    public var location: SourceLocation

    public init(entries: [OSCMappingEntry], midi: Bool, location: SourceLocation) {
        self.entries = entries
        self.midi = midi
        self.location = location
    }
}
