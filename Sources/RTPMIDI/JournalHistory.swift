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
    /// Empty until the first message is recorded (20 KB a peer: a peer we never send to, or
    /// an invitation that never completes, costs none of it).
    private var noteSequence: [UInt16] = []
    private var noteTick: [UInt32] = []
    private var controllerSequence: [UInt16] = []
    private var polySequence: [UInt16] = []
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

    private enum Scalar {
        static let program: UInt8 = 1, wheel: UInt8 = 2, pressure: UInt8 = 4
    }

    /// The history of a stream whose first packet is `firstSequence`.
    init(firstSequence: UInt16) {
        checkpoint = firstSequence &- 1
    }

    /// True if nothing changed after the checkpoint: the journal would be empty.
    var isEmpty: Bool {
        !sequencerChanged && (0..<16).allSatisfy { c in
            scalars[c] == 0 && notes[c].isEmpty && controllers[c].isEmpty && polyPressures[c].isEmpty
        }
    }

    /// Notes that `message`, stamped `tick`, went out in packet `sequence`.
    mutating func record(_ message: MIDIMessage, sequence: UInt16, tick: UInt32) {
        if noteSequence.isEmpty {
            noteSequence = [UInt16](repeating: 0, count: 16 * 128)
            noteTick = [UInt32](repeating: 0, count: 16 * 128)
            controllerSequence = [UInt16](repeating: 0, count: 16 * 128)
            polySequence = [UInt16](repeating: 0, count: 16 * 128)
        }
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

    /// Appends the journal for a packet sent at `tick` to `bytes`, written straight from the
    /// history with the model's own chapter writers: nothing is built or allocated.
    func encodeJournal(at tick: UInt32, into bytes: inout [UInt8]) {
        var channelCount = 0
        for c in 0..<16 where hasChanges(c) { channelCount += 1 }
        var flags: UInt8 = sequencerChanged ? 0x40 : 0
        if channelCount > 0 { flags |= 0x20 | UInt8(channelCount - 1) }
        bytes.append(flags)
        bytes.appendBigEndian(checkpoint)
        if sequencerChanged {
            SystemJournal(sequencer: SequencerChapter(running: state.running, downbeat: false, clock: state.position))
                .encode(into: &bytes)
        }
        for c in 0..<16 where hasChanges(c) { encodeChannelJournal(c, tick: tick, into: &bytes) }
    }

    private func hasChanges(_ c: Int) -> Bool {
        scalars[c] != 0 || !notes[c].isEmpty || !controllers[c].isEmpty || !polyPressures[c].isEmpty
    }

    private func encodeChannelJournal(_ c: Int, tick: UInt32, into bytes: inout [UInt8]) {
        let start = bytes.count
        bytes.append(0); bytes.append(0); bytes.append(0) // header and TOC, written at the end
        var toc: UInt8 = 0
        if scalars[c] & Scalar.program != 0, let program = state.channels[c].program {
            toc |= 0x80
            ProgramChapter(program: program.program, bankMSB: program.bankLSB == nil ? nil : program.bankMSB,
                           bankLSB: program.bankMSB == nil ? nil : program.bankLSB).encode(into: &bytes)
        }
        if !controllers[c].isEmpty {
            toc |= 0x40
            bytes.append(UInt8(controllers[c].count - 1))
            for number in controllers[c] {
                ControllerLog(number: number, tool: .value(state.channels[c].controllers[Int(number)])).encode(into: &bytes)
            }
        }
        if scalars[c] & Scalar.wheel != 0, let wheel = state.channels[c].pitchWheel {
            toc |= 0x10
            PitchWheelChapter(first: wheel.lsb.value, second: wheel.msb.value).encode(into: &bytes)
        }
        if !notes[c].isEmpty {
            toc |= 0x08
            var on = NoteSet(), off = NoteSet()
            for note in notes[c] {
                if state.channels[c].velocity[Int(note)] == 0 { off.insert(note) } else { on.insert(note) }
            }
            NoteChapter.encodeHeader(b: false, logCount: on.count, offNotes: off, into: &bytes)
            for note in on {
                let age = tick &- noteTick[c * 128 + Int(note)]
                NoteLog(note: note, velocity: state.channels[c].velocity[Int(note)], play: age < Self.playWindow)
                    .encode(into: &bytes)
            }
            NoteChapter.encodeOffBits(off, logCount: on.count, into: &bytes)
        }
        if scalars[c] & Scalar.pressure != 0, let pressure = state.channels[c].pressure {
            toc |= 0x02
            ChannelPressureChapter(pressure: pressure).encode(into: &bytes)
        }
        if !polyPressures[c].isEmpty {
            toc |= 0x01
            bytes.append(UInt8(polyPressures[c].count - 1))
            for note in polyPressures[c] {
                PolyPressureLog(note: note, pressure: state.channels[c].polyPressure[Int(note)]).encode(into: &bytes)
            }
        }
        ChannelJournal.writeHeader(channel: UInt8(c), length: bytes.count - start, toc: toc, into: &bytes, at: start)
    }
}
