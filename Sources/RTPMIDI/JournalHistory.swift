import MIDI

/// The sending side of the recovery journal to one peer (RFC 6295 §4, RFC 4696 §4): the
/// state sent so far, the packet each piece of it last changed in, and the checkpoint. The
/// journal of each packet codes every piece that changed after the checkpoint: the last
/// packet the peer confirmed with RS (before the first confirmation, the packet before our
/// first). A confirmation drops what it covers, so the journal stays as small as the peer's
/// feedback allows; it can never outgrow the state itself.
///
/// Coded: chapters P, C (value tool), W, N, T and A per channel, and the system journal's
/// Chapter Q (transport and song position in clocks). Not coded: Chapter M (RPN/NRPN: their
/// controllers are left out of C rather than repaired out of context), E, and the system
/// chapters D, V, F and X. Every S bit is 0 (the RFC's safe choice: a receiver that lost only
/// the previous packet reads everything).
struct JournalHistory {
    /// A note-on younger than this (10 kHz ticks) is marked worth playing on recovery (Y bit);
    /// an older one would sound late and is left for its note-off.
    static let playWindow: UInt32 = 1000

    private(set) var state = MIDIState()
    /// The packet the journal covers the history after.
    private(set) var checkpoint: UInt16
    private var changes: [MIDIState.Change] = []
    /// Per channel and number: the packet a note, controller or poly pressure last changed in.
    private var noteSequence = [UInt16](repeating: 0, count: 16 * 128)
    private var noteTick = [UInt32](repeating: 0, count: 16 * 128)
    private var controllerSequence = [UInt16](repeating: 0, count: 16 * 128)
    private var polySequence = [UInt16](repeating: 0, count: 16 * 128)
    /// Per channel: the packet program, pitch wheel and channel pressure last changed in.
    private var programSequence = [UInt16](repeating: 0, count: 16)
    private var wheelSequence = [UInt16](repeating: 0, count: 16)
    private var pressureSequence = [UInt16](repeating: 0, count: 16)
    /// What changed after the checkpoint, per channel.
    private var notes = [NoteSet](repeating: NoteSet(), count: 16)
    private var controllers = [NoteSet](repeating: NoteSet(), count: 16)
    private var polyPressures = [NoteSet](repeating: NoteSet(), count: 16)
    private var scalars = [UInt8](repeating: 0, count: 16) // Scalar bits
    private var sequencerSequence: UInt16 = 0
    private var sequencerChanged = false
    /// The journal built last, kept so its arrays are reused.
    private var journal: RecoveryJournal
    private var channelJournals = [ChannelJournal](repeating: ChannelJournal(channel: 0), count: 16)

    private enum Scalar {
        static let program: UInt8 = 1, wheel: UInt8 = 2, pressure: UInt8 = 4
    }

    /// The history of a stream whose first packet is `firstSequence`.
    init(firstSequence: UInt16) {
        checkpoint = firstSequence &- 1
        journal = RecoveryJournal(checkpoint: checkpoint)
        for c in 0..<16 { channelJournals[c].channel = UInt8(c) }
    }

    /// True if nothing changed after the checkpoint: the journal would be empty.
    var isEmpty: Bool {
        !sequencerChanged && (0..<16).allSatisfy { c in
            scalars[c] == 0 && notes[c].isEmpty && controllers[c].isEmpty && polyPressures[c].isEmpty
        }
    }

    /// Notes that `message`, stamped `tick`, went out in packet `sequence`.
    mutating func record(_ message: MIDIMessage, sequence: UInt16, tick: UInt32) {
        state.apply(message, changes: &changes)
        for change in changes {
            switch change {
            case .note(let c, let note):
                noteSequence[c * 128 + Int(note)] = sequence
                noteTick[c * 128 + Int(note)] = tick
                notes[c].insert(note)
            case .controller(let c, let number):
                controllerSequence[c * 128 + Int(number)] = sequence
                controllers[c].insert(number)
            case .polyPressure(let c, let note):
                polySequence[c * 128 + Int(note)] = sequence
                polyPressures[c].insert(note)
            case .program(let c):
                programSequence[c] = sequence
                scalars[c] |= Scalar.program
            case .pitchWheel(let c):
                wheelSequence[c] = sequence
                scalars[c] |= Scalar.wheel
            case .channelPressure(let c):
                pressureSequence[c] = sequence
                scalars[c] |= Scalar.pressure
            case .sequencer:
                sequencerSequence = sequence
                sequencerChanged = true
            }
        }
        changes.removeAll(keepingCapacity: true)
    }

    /// The peer has every packet up to `sequence` (RS): the checkpoint moves there and what
    /// changed up to it leaves the journal. A confirmation of an older packet changes nothing.
    mutating func confirm(_ sequence: UInt16, lastSent: UInt16) {
        let advance = Int16(bitPattern: sequence &- checkpoint), ahead = Int16(bitPattern: lastSent &- sequence)
        guard advance > 0, ahead >= 0 else { return }
        checkpoint = sequence
        func confirmed(_ changedIn: UInt16) -> Bool { Int16(bitPattern: changedIn &- sequence) <= 0 }
        for c in 0..<16 {
            for note in notes[c] where confirmed(noteSequence[c * 128 + Int(note)]) { notes[c].remove(note) }
            for number in controllers[c] where confirmed(controllerSequence[c * 128 + Int(number)]) {
                controllers[c].remove(number)
            }
            for note in polyPressures[c] where confirmed(polySequence[c * 128 + Int(note)]) { polyPressures[c].remove(note) }
            if confirmed(programSequence[c]) { scalars[c] &= ~Scalar.program }
            if confirmed(wheelSequence[c]) { scalars[c] &= ~Scalar.wheel }
            if confirmed(pressureSequence[c]) { scalars[c] &= ~Scalar.pressure }
        }
        if confirmed(sequencerSequence) { sequencerChanged = false }
    }

    /// Forgets the history before packet `sequence`, for a journal that no longer fits a
    /// datagram or a peer that never confirms: the journal then covers only what follows.
    mutating func restart(at sequence: UInt16) {
        checkpoint = sequence &- 1
        for c in 0..<16 {
            notes[c] = NoteSet()
            controllers[c] = NoteSet()
            polyPressures[c] = NoteSet()
            scalars[c] = 0
        }
        sequencerChanged = false
    }

    /// The journal for a packet sent at `tick`.
    mutating func journal(at tick: UInt32) -> RecoveryJournal {
        journal.checkpoint = checkpoint
        journal.channels.removeAll(keepingCapacity: true) // the channel journals' arrays are ours again
        for c in 0..<16 where scalars[c] != 0 || !notes[c].isEmpty || !controllers[c].isEmpty || !polyPressures[c].isEmpty {
            fillChannelJournal(c, tick: tick)
            journal.channels.append(channelJournals[c])
        }
        journal.system = sequencerChanged
            ? SystemJournal(sequencer: SequencerChapter(running: state.running, downbeat: false, clock: state.position))
            : nil
        return journal
    }

    private mutating func fillChannelJournal(_ c: Int, tick: UInt32) {
        let channel = state.channels[c]
        channelJournals[c].program = scalars[c] & Scalar.program != 0
            ? channel.program.map { ProgramChapter(program: $0.program, bankMSB: $0.bankLSB == nil ? nil : $0.bankMSB,
                                                   bankLSB: $0.bankMSB == nil ? nil : $0.bankLSB) }
            : nil
        channelJournals[c].controllers.removeAll(keepingCapacity: true)
        for number in controllers[c] {
            channelJournals[c].controllers.append(ControllerLog(number: number, tool: .value(channel.controllers[Int(number)])))
        }
        channelJournals[c].pitchWheel = scalars[c] & Scalar.wheel != 0
            ? channel.pitchWheel.map { PitchWheelChapter(first: $0.lsb.value, second: $0.msb.value) }
            : nil
        if notes[c].isEmpty {
            channelJournals[c].notes = nil
        } else {
            var chapter = channelJournals[c].notes ?? NoteChapter()
            channelJournals[c].notes = nil // chapter's logs array unshared while it is filled
            chapter.logs.removeAll(keepingCapacity: true)
            chapter.offNotes = NoteSet()
            for note in notes[c] {
                let velocity = channel.velocity[Int(note)]
                if velocity == 0 {
                    chapter.offNotes.insert(note)
                } else {
                    let age = tick &- noteTick[c * 128 + Int(note)]
                    chapter.logs.append(NoteLog(note: note, velocity: velocity, play: age < Self.playWindow))
                }
            }
            channelJournals[c].notes = chapter
        }
        channelJournals[c].channelPressure = scalars[c] & Scalar.pressure != 0
            ? channel.pressure.map { ChannelPressureChapter(pressure: $0) }
            : nil
        channelJournals[c].polyPressure.removeAll(keepingCapacity: true)
        for note in polyPressures[c] {
            channelJournals[c].polyPressure.append(PolyPressureLog(note: note, pressure: channel.polyPressure[Int(note)]))
        }
    }
}
