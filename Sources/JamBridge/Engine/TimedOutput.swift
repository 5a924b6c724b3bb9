import Dispatch
import Jam
import MIDI

/// What a poster holds of what it posted to `TimedOutput`: the handle it withdraws it by.
public struct TimedTicket: Hashable, Sendable {
    /// Unique among the engine's tickets: a sink's owner of what it was handed ahead.
    let number: Int
    /// What of it may go `lead` ahead to the sinks that send at a message's time.
    let ahead: TimedAhead
}

/// What of a ticket's messages go `lead` ahead of their time to the sinks that send at a message's time.
enum TimedAhead: Hashable, Sendable {
    /// Nothing: each goes when due (a song: its Song Position stays between the messages around it).
    case nothing
    /// Clock and transport (the jam's clock outputs).
    case clockAndTransport
    /// Every message (the drums' notes).
    case everything

    func covers(_ message: MIDIMessage) -> Bool {
        switch self {
        case .nothing: false
        case .clockAndTransport: message.isClockOrTransport
        case .everything: true
        }
    }
}

/// "This message at that time": the one way a part sends something later, on the engine's queue. A source (the jam's
/// clock, the drums, a song, an ALSA port's retries) posts each message with the instant it is due under its ticket,
/// and may withdraw what it posted (all of it, or what is due after an instant). Under a ticket that lets them go
/// ahead (`TimedAhead`: the jam's clock and transport, the drums' notes), messages are routed `lead` before they
/// are due: a sink that sends at a message's time and takes that message ahead (`TimedSink`: the session's lane takes
/// anything, ALSA's queue and the drums clock and transport) gets it at once, so that nothing that holds the engine's
/// queue then makes it late; the other sinks get it when due. Everything else is routed when due. What is due at one
/// instant goes in the order posted, and what waits and is due goes before anything posted now. One timer, set only
/// while something waits: nothing wakes when nothing is due.
public final class TimedOutput: @unchecked Sendable { // on the engine's queue
    /// How long before its time what goes ahead is handed to a sink that sends at a message's time: longer than the
    /// engine's queue is held or its thread kept from running on a busy machine (85 ms measured under issue 30's load;
    /// beside two busy loops up to 196 ms, but 250 ms broke a late joiner's Song Position and Continue at an ALSA
    /// output, which can take back only ticks: BENCHMARKS.md, issue 42). What is withdrawn is never sent, so it costs
    /// no latency; each packet sent to a peer meanwhile prepares its ticks again (`RTPMIDISession.sending`).
    static let lead: UInt64 = 100_000_000

    private enum Work {
        /// Routed from its source (only to `recipients`, if given).
        case route(MIDIEvent, only: Recipients?)
        /// Routed ahead, waiting for its time at a sink that does not send at a message's time.
        case deliver(MIDIMessage, routedFrom: MIDIEvent, to: EndpointID, Recipients)
        /// Every note and pedal `source` holds released (a song's loop or end).
        case release(EndpointID, at: MonotonicInstant)
        /// A part's own work at its time (a deadline).
        case call(() -> Void)
    }

    private struct Entry {
        /// When it is taken out: its time, or `lead` before for clock and transport.
        var release: MonotonicInstant
        /// When it is due.
        var due: MonotonicInstant
        /// The order posted, which keeps the order of what is due at one instant.
        var order: UInt64
        var ticket: TimedTicket
        var work: Work
    }

    private unowned let engine: Engine
    /// What waits for its release, first released on top; what is released, first due (then first posted) on top.
    private var waiting = Heap<Entry> { ($0.release, $0.order) < ($1.release, $1.order) }
    private var released = Heap<Entry> { ($0.due, $0.order) < ($1.due, $1.order) }
    private var posted: UInt64 = 0
    private var tickets = 0
    /// The sinks each ticket handed something ahead to: they take it back when it is withdrawn.
    private var handedAhead: [TimedTicket: Set<EndpointID>] = [:]
    /// What each ticket had routed ahead of its time, until it is due: what a withdraw takes back of it.
    private var routedEarly: [TimedTicket: [MIDIEvent]] = [:]
    private var timer: DispatchSourceTimer?
    /// When the timer is set for.
    private var timerDue: MonotonicInstant?
    private var firing = false

    init(engine: Engine) {
        self.engine = engine
    }

    /// A new ticket to post under; `ahead`: what of it may go `lead` ahead.
    func ticket(ahead: TimedAhead = .nothing) -> TimedTicket {
        tickets += 1
        return TimedTicket(number: tickets, ahead: ahead)
    }

    /// Posts `event`, due at its time, routed from its source (only to `recipients`, if given: the jam greeting one
    /// peer). A Start, Stop or Continue replaces one waiting from the same source at the same instant: the last wins.
    func post(_ event: MIDIEvent, only recipients: Recipients? = nil, ticket: TimedTicket) {
        if event.message.startsOrStops {
            let replaced = { (entry: Entry) -> Bool in
                switch entry.work {
                case .route(let waiting, _): waiting.source == event.source && waiting.time == event.time && waiting.message.startsOrStops
                case .deliver(let message, let from, _, _): from.source == event.source && from.time == event.time && message.startsOrStops
                default: false
                }
            }
            waiting.removeAll(where: replaced)
            released.removeAll(where: replaced)
        }
        let release = ticket.ahead.covers(event.message) ? event.time.receded(byNanoseconds: Self.lead) : event.time
        insert(Entry(release: release, due: event.time, order: 0, ticket: ticket, work: .route(event, only: recipients)))
    }

    /// Releases what `source` holds at `time`, after what is posted for that instant before.
    func postRelease(of source: EndpointID, at time: MonotonicInstant, ticket: TimedTicket) {
        insert(Entry(release: time, due: time, order: 0, ticket: ticket, work: .release(source, at: time)))
    }

    /// Calls `work` on the engine's queue at `time`.
    func call(at time: MonotonicInstant, ticket: TimedTicket, _ work: @escaping () -> Void) {
        insert(Entry(release: time, due: time, order: 0, ticket: ticket, work: .call(work)))
    }

    /// Takes back what `ticket` posted that is due after `time` and returns what it takes back of what it posted, in
    /// the order of its time. A note-off whose note-on went out (or is due by `time`) is not taken back, from the
    /// engine nor from a sink it was handed to: it goes at its time (a lost note-off is a stuck note). Nil: all of it,
    /// calls and note-offs waiting to be routed too, for a source that stops (the engine releases what it holds). The
    /// sinks `ticket` handed messages ahead to take back theirs by the same rules.
    @discardableResult
    func withdraw(_ ticket: TimedTicket, after time: MonotonicInstant? = nil) -> [MIDIEvent] {
        let at = time ?? MonotonicClock.now()
        let mine = (released.elements + waiting.elements).filter { $0.ticket == ticket }
            .sorted { ($0.due, $0.order) < ($1.due, $1.order) }
        // What was posted, by its time: what went ahead and is not due (first at one instant: it was released
        // first), and what waits to be routed (with its order).
        let early = (routedEarly[ticket] ?? []).filter { $0.time > at }.map { (event: $0, order: UInt64?.none) }
        let routes = mine.compactMap { entry -> (event: MIDIEvent, order: UInt64?)? in
            guard case .route(let event, _) = entry.work, time.map({ entry.due > $0 }) ?? true else { return nil }
            return (event, entry.order)
        }
        let posted = (early + routes).enumerated().sorted { ($0.element.event.time, $0.offset) < ($1.element.event.time, $1.offset) }
        var bySource: [EndpointID: NoteWithdrawal] = [:], withdrawn: [MIDIEvent] = [], taken: Set<UInt64> = []
        var stillEarly: [MIDIEvent] = []
        for (event, order) in posted.map(\.element) {
            // What waits is all taken back when the source stops: the engine releases what it holds of what was routed.
            guard (time == nil && order != nil) || bySource[event.source, default: NoteWithdrawal()].takesBack(event.message) else {
                if order == nil { stillEarly.append(event) }
                continue
            }
            withdrawn.append(event)
            if let order { taken.insert(order) }
        }
        // What was routed ahead and waits for its time at a sink that does not send at a message's time: as the
        // sink would have sent it.
        var bySink: [EndpointID: NoteWithdrawal] = [:]
        for entry in mine {
            switch entry.work {
            case .deliver(let message, _, let sink, _):
                if time.map({ entry.due > $0 }) ?? true, bySink[sink, default: NoteWithdrawal()].takesBack(message) { taken.insert(entry.order) }
            case .release, .call:
                if time == nil { taken.insert(entry.order) }
            case .route:
                break
            }
        }
        released.removeAll { taken.contains($0.order) }
        waiting.removeAll { taken.contains($0.order) }
        routedEarly[ticket] = time == nil ? nil : stillEarly
        if let sinks = handedAhead[ticket] {
            engine.takeBack(after: at, ticket: ticket, from: sinks)
            if time == nil { handedAhead[ticket] = nil }
        }
        return withdrawn
    }

    /// Keeps a message routed ahead for the sink `sink` until it is due (called by the engine as it routes).
    func keep(_ message: MIDIMessage, routedFrom event: MIDIEvent, to sink: EndpointID, for recipients: Recipients,
              ticket: TimedTicket) {
        insert(Entry(release: event.time, due: event.time, order: 0, ticket: ticket, work: .deliver(message, routedFrom: event, to: sink, recipients)))
    }

    /// Notes that `ticket` handed something ahead to `sink` (called by the engine as it routes).
    func handedAhead(_ ticket: TimedTicket, to sink: EndpointID) {
        handedAhead[ticket, default: []].insert(sink)
    }

    /// Forgets the sinks that went or changed (a reload): what waits for them is dropped, nothing is taken back
    /// from them.
    func forget(sinks gone: Set<EndpointID>) {
        guard !gone.isEmpty else { return }
        for ticket in handedAhead.keys { handedAhead[ticket]!.subtract(gone) }
        let goes = { (entry: Entry) -> Bool in if case .deliver(_, _, let sink, _) = entry.work { gone.contains(sink) } else { false } }
        waiting.removeAll(where: goes)
        released.removeAll(where: goes)
    }

    private func insert(_ entry: Entry) {
        var entry = entry
        posted += 1
        entry.order = posted
        waiting.insert(entry)
        let now = MonotonicClock.now()
        // A message due now goes at once, after what waits and is due; a call always from the timer, never from
        // inside its caller.
        if case .call = entry.work {
            schedule(now: now)
        } else if entry.release.nanoseconds <= now.nanoseconds + JamConductor.earlyTolerance {
            fire(now: now)
        } else {
            schedule(now: now)
        }
    }

    /// Takes out what is due by `now`, first due first, in one batch (what goes to the session at one instant
    /// leaves in one packet), then sets the timer for what waits. What is released is taken out by its due time:
    /// an overdue tick kept for a sink goes before a Stop posted now, though the Stop was released `lead` earlier.
    private func fire(now: MonotonicInstant) {
        guard !firing else { return } // posted while firing: the loop below takes it
        firing = true
        engine.routeBatch {
            while true {
                let horizon = MonotonicClock.now().nanoseconds + JamConductor.earlyTolerance
                while let first = waiting.first, first.release.nanoseconds <= horizon { released.insert(waiting.removeFirst()) }
                guard !released.isEmpty else { break }
                let entry = released.removeFirst()
                switch entry.work {
                case .route(let event, let only):
                    engine.route(event, only: only, ticket: entry.ticket)
                    if entry.release < entry.due, entry.due.nanoseconds > horizon { noteRoutedEarly(event, ticket: entry.ticket) }
                case .deliver(let message, let event, let sink, let recipients):
                    engine.hand(message, routedFrom: event, to: sink, for: recipients)
                case .release(let source, let time):
                    engine.release(source: source, at: time)
                case .call(let work):
                    work()
                }
            }
        }
        firing = false
        timerDue = nil
        schedule(now: MonotonicClock.now())
    }

    /// Keeps `event`, routed ahead of its time under `ticket`, until it is due (what is due is forgotten now).
    private func noteRoutedEarly(_ event: MIDIEvent, ticket: TimedTicket) {
        let now = MonotonicClock.now()
        routedEarly[ticket, default: []].removeAll { $0.time <= now }
        routedEarly[ticket]!.append(event)
    }

    /// Sets the timer for the first release, if it is not set for it; never sooner than 100 µs from `now`, so
    /// that it never spins.
    private func schedule(now: MonotonicInstant) {
        guard let next = waiting.first?.release, timerDue.map({ next < $0 }) ?? true else { return }
        timerDue = next
        let timer = timer ?? makeTimer()
        let wait = max(Int64(bitPattern: next.nanoseconds &- now.nanoseconds), 100_000)
        timer.schedule(deadline: .now() + .nanoseconds(Int(wait)), leeway: .microseconds(50))
    }

    private func makeTimer() -> DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(queue: engine.queue)
        timer.setEventHandler { [unowned self] in
            timerDue = nil
            fire(now: MonotonicClock.now())
        }
        timer.resume()
        self.timer = timer
        return timer
    }

    /// Stops the timer; what waits is dropped (the engine stops).
    func stop() {
        timer?.cancel()
        timer = nil
        waiting = Heap(by: waiting.areInOrder)
        released = Heap(by: released.areInOrder)
    }
}

/// A binary min-heap: what `areInOrder` puts first on top; insert and take out in O(log n).
struct Heap<Element> {
    let areInOrder: (Element, Element) -> Bool
    /// The elements, in heap order (not sorted).
    private(set) var elements: [Element] = []

    init(by areInOrder: @escaping (Element, Element) -> Bool) {
        self.areInOrder = areInOrder
    }

    var isEmpty: Bool { elements.isEmpty }
    var first: Element? { elements.first }

    mutating func insert(_ element: Element) {
        elements.append(element)
        var child = elements.count - 1
        while child > 0, areInOrder(elements[child], elements[(child - 1) / 2]) {
            elements.swapAt(child, (child - 1) / 2)
            child = (child - 1) / 2
        }
    }

    /// Takes out the first; the heap must not be empty.
    mutating func removeFirst() -> Element {
        elements.swapAt(0, elements.count - 1)
        let first = elements.removeLast()
        siftDown(from: 0)
        return first
    }

    mutating func removeAll(where matches: (Element) -> Bool) {
        let count = elements.count
        elements.removeAll(where: matches)
        guard elements.count != count else { return }
        for index in stride(from: elements.count / 2 - 1, through: 0, by: -1) { siftDown(from: index) }
    }

    private mutating func siftDown(from start: Int) {
        var parent = start
        while true {
            var first = parent
            let left = 2 * parent + 1, right = left + 1
            if left < elements.count, areInOrder(elements[left], elements[first]) { first = left }
            if right < elements.count, areInOrder(elements[right], elements[first]) { first = right }
            guard first != parent else { return }
            elements.swapAt(parent, first)
            parent = first
        }
    }
}

/// A sink that sends what is handed to it ahead at the message's time (the session's lane, an ALSA port through the
/// sequencer's queue, the drums' transport), and can take back what it has not sent: `TimedOutput` hands it what it
/// takes ahead `lead` before its time.
protocol TimedSink: SinkEndpoint {
    /// True if it sends what is stamped ahead at its time now (an ALSA port: if the sequencer's queue runs).
    var sendsAtItsTime: Bool { get }
    /// True if it takes `message` ahead; by default clock and transport (all an ALSA port's queue takes back).
    func takesAhead(_ message: MIDIMessage) -> Bool
    /// Takes `message`, routed from `event` and handed ahead under `ticket`, to send at the event's time; by default
    /// as any message (`receive(_:routedFrom:to:)`).
    func receiveAhead(_ message: MIDIMessage, routedFrom event: MIDIEvent, to recipients: Recipients, ticket: TimedTicket)
    /// Takes back what `ticket` handed it ahead for after `time` and it has not sent, by `TimedOutput.withdraw`'s
    /// rules.
    func takeBack(after time: MonotonicInstant, ticket: TimedTicket)
}

extension TimedSink {
    func takesAhead(_ message: MIDIMessage) -> Bool {
        message.isClockOrTransport
    }

    func receiveAhead(_ message: MIDIMessage, routedFrom event: MIDIEvent, to recipients: Recipients, ticket: TimedTicket) {
        receive(message, routedFrom: event, to: recipients)
    }
}
