import MIDI
import MIDITestSupport
import Testing
@testable import Jam

/// One jambridge instance as the election sees it: its own start button (a local source named as the
/// instance) and what a daemon would do with the verdicts.
final class JamInstance {
    let name: String
    let ssrc: UInt32
    var election: ClockElection
    var changes: [LeadershipChange] = []
    var refusedPresses = 0
    var gone = false
    /// Called after each change of master, as a daemon's reaction would be.
    var onChange: ((LeadershipChange) -> Void)?

    init(name: String, ssrc: UInt32, policy: ElectionConfiguration.Policy, onMasterLost: ElectionConfiguration.MasterLost) {
        self.name = name
        self.ssrc = ssrc
        election = ClockElection(configuration: ElectionConfiguration(ssrc: ssrc, name: name, policy: policy,
                                                                      onMasterLost: onMasterLost))
    }

    var asPeer: ClockSource { .peer(ssrc: ssrc, name: name) }
}

/// Instances on a virtual network: each message reaches each other instance after 0-10 ms (uniform, seeded),
/// its sender time read through a CK offset that is off by up to ±0.5 ms per pair. Time is virtual.
final class VirtualJam {
    var instances: [JamInstance] = []
    var rng: SeededGenerator
    var now = MonotonicInstant(nanoseconds: 5_000_000_000_000)
    private var queue: [(time: MonotonicInstant, order: Int, action: () -> Void)] = []
    private var order = 0
    private var offsetErrors: [String: Double] = [:]

    init(seed: UInt64) { rng = SeededGenerator(seed: seed) }

    @discardableResult
    func add(_ name: String, ssrc: UInt32, policy: ElectionConfiguration.Policy = .firstStart,
             onMasterLost: ElectionConfiguration.MasterLost = .stop) -> JamInstance {
        let instance = JamInstance(name: name, ssrc: ssrc, policy: policy, onMasterLost: onMasterLost)
        instances.append(instance)
        return instance
    }

    func instance(_ name: String) -> JamInstance { instances.first { $0.name == name }! }

    /// `seconds` from now.
    func later(_ seconds: Double) -> MonotonicInstant { MonotonicInstant(seconds * 1e9, after: now) }

    func at(_ time: MonotonicInstant, _ action: @escaping () -> Void) {
        order += 1
        queue.append((time, order, action))
    }

    /// Runs everything due up to `time`, in time order.
    func run(until time: MonotonicInstant) {
        while let next = queue.indices.min(by: { (queue[$0].time, queue[$0].order) < (queue[$1].time, queue[$1].order) }),
              queue[next].time <= time {
            let event = queue.remove(at: next)
            now = event.time
            event.action()
        }
        now = time
    }

    func run(seconds: Double) { run(until: later(seconds)) }

    /// Someone presses `command` on `instance`'s own controls at `time`; what the election accepts goes to the session.
    func press(_ command: TransportCommand, on instance: JamInstance, at time: MonotonicInstant) {
        at(time) { [self] in
            guard !instance.gone else { return }
            let verdict = instance.election.receive(command, from: .local(instance.name), senderTime: now, now: now)
            if let change = verdict.change { record(change, on: instance) }
            if verdict.accepted { send(command, from: instance.asPeer, sentAt: now) } else { instance.refusedPresses += 1 }
        }
    }

    /// A peer that runs no election (a Mac, pymidi) sends `command` at `time`.
    func thirdParty(_ command: TransportCommand, name: String, ssrc: UInt32, at time: MonotonicInstant) {
        at(time) { [self] in send(command, from: .peer(ssrc: ssrc, name: name), sentAt: now) }
    }

    /// `instance` says BY at `time`: the others hear it after the network's delay.
    func bye(_ instance: JamInstance, at time: MonotonicInstant) {
        at(time) { [self] in
            instance.gone = true
            for other in instances where other !== instance { at(MonotonicInstant(delay(), after: now)) { [self] in left(instance.asPeer, other) } }
        }
    }

    /// `instance` vanishes at `time` (no BY): each other instance notices its clock fell silent a second after
    /// the last tick it heard.
    func vanish(_ instance: JamInstance, at time: MonotonicInstant) {
        at(time) { [self] in
            instance.gone = true
            for other in instances where other !== instance {
                at(MonotonicInstant(1e9 + delay(), after: now)) { [self] in left(instance.asPeer, other) }
            }
        }
    }

    /// The master each instance still here names (its own name when it leads), nil for none.
    var masters: [String?] {
        instances.filter { !$0.gone }.map { instance -> String? in
            switch instance.election.master {
            case .local?: return instance.name
            case .peer(_, let name)?: return name
            case nil: return nil
            }
        }
    }

    var leaders: Int { instances.filter { !$0.gone && $0.election.role == .master }.count }

    private func send(_ command: TransportCommand, from source: ClockSource, sentAt time: MonotonicInstant) {
        for other in instances where other.asPeer != source {
            let error = offsetError(from: source.name, to: other.name)
            at(MonotonicInstant(delay(), after: time)) { [self] in
                guard !other.gone else { return }
                let verdict = other.election.receive(command, from: source, senderTime: MonotonicInstant(error, after: time), now: now)
                if let change = verdict.change { record(change, on: other) }
            }
        }
    }

    private func left(_ source: ClockSource, _ instance: JamInstance) {
        guard !instance.gone, let change = instance.election.sourceLeft(source, now: now) else { return }
        record(change, on: instance)
    }

    /// What the daemon does with a change: a takeover continues the song in the session.
    private func record(_ change: LeadershipChange, on instance: JamInstance) {
        instance.changes.append(change)
        instance.onChange?(change)
        if change.reason == .tookOver { send(.continue, from: instance.asPeer, sentAt: now) }
    }

    private func delay() -> Double { Double.random(in: 0...10e6, using: &rng) }

    private func offsetError(from sender: String, to receiver: String) -> Double {
        let key = sender + ">" + receiver
        if let error = offsetErrors[key] { return error }
        let error = Double.random(in: -0.5e6...0.5e6, using: &rng)
        offsetErrors[key] = error
        return error
    }
}
