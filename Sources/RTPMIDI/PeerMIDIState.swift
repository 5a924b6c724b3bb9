import MIDI

/// What one peer has played, as we passed it on: the notes and pedals to release if it goes
/// away, and the state a recovery journal is compared with to repair packet loss
/// (RFC 6295 §4-5, RFC 4696 §7): only what differs is played, so nothing sounds twice.
struct PeerMIDIState {
    private var state = MIDIState()
    private var changes: [MIDIState.Change] = []
    /// True while `state.position` is the sender's: from a Start, a Song Position or a journal's chapter Q that codes the
    /// clock, to a loss that no journal has repaired.
    private var positionKnown = false
    /// True once the sender's journals have coded chapter Q's clock: a journal without it then says the song did not
    /// move in the packets lost.
    private var journalsCountClock = false
    /// Pedals released along with the notes: sustain, sostenuto, hold 2.
    private static let pedals: [UInt8] = [64, 66, 69]

    /// Notes `message` as passed on.
    mutating func track(_ message: MIDIMessage) {
        state.apply(message, changes: &changes)
        changes.removeAll(keepingCapacity: true)
        if message == .start { positionKnown = true }
        if case .songPosition = message { positionKnown = true }
    }

    /// The sender's count of the clock tick just tracked in its song, modulo 2^19 (chapter Q's CLOCK, which counts the
    /// ticks played, so this tick is one less); nil unless its song runs and the count is known.
    var songTick: Int? {
        state.running && positionKnown ? (Int(state.position) - 1) & (SenderTime.songTickModulus - 1) : nil
    }

    /// How many ticks on from the sender's count as we have it `clock` (a journal's chapter Q count, modulo 2^19) is,
    /// between -2^18 and 2^18; nil unless its song runs and the count is known.
    func ticks(to clock: UInt32) -> Int? {
        guard state.running, positionKnown else { return nil }
        let modulus = SenderTime.songTickModulus
        let ahead = (Int(clock) - Int(state.position)) & (modulus - 1)
        return ahead < modulus / 2 ? ahead : ahead - modulus
    }

    /// Packets were lost and no journal came to repair them: the ticks they held are not counted until one says where
    /// the song is.
    mutating func forgetPosition() {
        positionKnown = false
    }

    /// After `repair` from `journal` (which `coversLoss` if its history reaches back to the last packet received): takes
    /// the sender's song position from its chapter Q, so the lost ticks are counted. Without one, the position stands
    /// only if the sender's journals keep it and this one covers the loss.
    mutating func adoptPosition(from journal: RecoveryJournal, coversLoss: Bool) {
        if let clock = journal.system?.sequencer?.clock {
            state.position = clock & UInt32(SenderTime.songTickModulus - 1)
            positionKnown = true
            journalsCountClock = true
        } else if !(journalsCountClock && coversLoss) {
            positionKnown = false
        }
    }

    /// Calls `release` with a note-off for every note still on and a pedal-up for every pedal
    /// held down, and forgets them.
    mutating func releaseAll(_ release: (MIDIMessage) -> Void) {
        for c in 0..<16 {
            let channel = UInt4(masking: UInt8(c))
            for note in 0..<128 where state.channels[c].velocity[note] != 0 {
                release(.noteOff(channel: channel, note: UInt7(masking: UInt8(note)), velocity: UInt7(masking: 64)))
            }
            for pedal in Self.pedals {
                let value = state.channels[c].controllers[Int(pedal)]
                if value != MIDIState.unknown, value >= 64 {
                    release(.controlChange(channel: channel, controller: UInt7(masking: pedal), value: .zero))
                }
            }
        }
        state = MIDIState()
        positionKnown = false
    }

    /// Calls `repair` with the MIDI that brings what we passed on to the state `journal` codes:
    /// transport first, then per channel program, controllers, pitch wheel, note-offs for notes
    /// the peer released, note-ons the sender marks as still worth playing (Y bit) for notes we
    /// have off, pressures. Values we already have are not sent again. Toggle and count
    /// controller logs (which need the lost commands' count, not a value) are not repaired.
    func repair(from journal: RecoveryJournal, _ repair: (MIDIMessage) -> Void) {
        if let sequencer = journal.system?.sequencer { repairTransport(sequencer, repair) }
        for channelJournal in journal.channels where channelJournal.channel < 16 {
            repairChannel(channelJournal, state.channels[Int(channelJournal.channel)], repair)
        }
    }

    private func repairTransport(_ q: SequencerChapter, _ repair: (MIDIMessage) -> Void) {
        switch (q.running, state.running) {
        case (false, true): repair(.stop)
        case (true, false): repair(q.clock == 0 ? .start : .continue)
        default: break
        }
        if !q.running, let clock = q.clock, clock != state.position, clock % 6 == 0 {
            repair(.songPosition(UInt14(masking: UInt16(truncatingIfNeeded: clock / 6))))
        }
    }

    private func repairChannel(_ journal: ChannelJournal, _ current: MIDIState.Channel, _ repair: (MIDIMessage) -> Void) {
        let channel = UInt4(masking: journal.channel)
        func cc(_ number: UInt8, _ value: UInt8) -> MIDIMessage {
            .controlChange(channel: channel, controller: UInt7(masking: number), value: UInt7(masking: value))
        }
        if let p = journal.program, current.program?.program != p.program || current.program?.bankMSB != p.bankMSB
            || current.program?.bankLSB != p.bankLSB {
            if let msb = p.bankMSB, let lsb = p.bankLSB {
                repair(cc(0, msb))
                repair(cc(32, lsb))
            }
            repair(.programChange(channel: channel, program: UInt7(masking: p.program)))
        }
        for log in journal.controllers {
            guard case .value(let value) = log.tool, MIDIState.isJournalledController(log.number),
                  current.controllers[Int(log.number)] != value else { continue }
            repair(cc(log.number, value))
        }
        if let wheel = journal.pitchWheel {
            let value = UInt14(lsb: UInt7(masking: wheel.first), msb: UInt7(masking: wheel.second))
            if current.pitchWheel != value { repair(.pitchBend(channel: channel, value: value)) }
        }
        if let notes = journal.notes {
            for note in notes.offNotes where current.velocity[Int(note)] != 0 {
                repair(.noteOff(channel: channel, note: UInt7(masking: note), velocity: UInt7(masking: 64)))
            }
            for log in notes.logs where log.play && log.velocity != 0 && log.note < 128
                && current.velocity[Int(log.note)] == 0 && !notes.offNotes.contains(log.note) {
                repair(.noteOn(channel: channel, note: UInt7(masking: log.note), velocity: UInt7(masking: log.velocity)))
            }
        }
        if let pressure = journal.channelPressure, current.pressure != pressure.pressure {
            repair(.channelPressure(channel: channel, pressure: UInt7(masking: pressure.pressure)))
        }
        for log in journal.polyPressure where log.note < 128 && current.polyPressure[Int(log.note)] != log.pressure {
            repair(.polyPressure(channel: channel, note: UInt7(masking: log.note), pressure: UInt7(masking: log.pressure)))
        }
    }
}
