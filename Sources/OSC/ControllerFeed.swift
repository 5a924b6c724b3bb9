/// What an OSC endpoint may send one controller, and what that controller has not been sent yet.
///
/// A controller earns its feedback by what it sends: `earningRatio` bytes of OSC back for every byte it sent,
/// at most `maximumCredit` banked. A datagram with a forged source address therefore draws at most four times
/// its own size at whoever owns that address, however large the state and however busy the session.
/// What cannot be sent for want of credit is not lost: the entries of the feedback state a controller has not
/// been sent (all of them when it appears, and every change held back since) are marked stale and sent, in
/// state order and with their latest values, as its own traffic brings credit.
public struct ControllerFeed: Sendable {
    /// Bytes of feedback a controller earns per byte of OSC it sends.
    public static let earningRatio = 4
    /// The most credit a controller banks, in bytes: what it can still be sent after it falls silent.
    public static let maximumCredit = 65536

    /// The bytes of feedback the controller may be sent now.
    public private(set) var credit = 0
    /// One bit per entry of the feedback state: set while the controller has not been sent its latest value.
    private var stale: [UInt64] = []

    /// A controller that appeared now and has been sent nothing of a state of `stateCount` entries.
    public init(stateCount: Int) {
        stale = Array(repeating: .max, count: stateCount / 64)
        if stateCount % 64 != 0 { stale.append(~(UInt64.max >> UInt64(stateCount % 64))) }
    }

    /// Credits the controller for a datagram of `byteCount` bytes it sent.
    public mutating func earn(byteCount: Int) {
        credit = min(Self.maximumCredit, credit + Self.earningRatio * byteCount)
    }

    /// Sends `message` (entry `stateIndex` of the state; nil for one the state does not keep) through `send` if the
    /// credit covers it, and returns true; otherwise marks the entry stale, to be sent by `catchUp`, and returns false.
    public mutating func offer(_ message: OSCMessage, stateIndex: Int?, send: (OSCMessage) -> Void) -> Bool {
        let size = message.encodedByteCount
        guard size <= credit else {
            if let stateIndex { setStale(stateIndex, true) }
            return false
        }
        credit -= size
        if let stateIndex { setStale(stateIndex, false) }
        send(message)
        return true
    }

    /// Notes that the controller has entry `index`'s latest value already (it made that change itself).
    public mutating func markCurrent(_ index: Int) {
        setStale(index, false)
    }

    /// Forgets what was owed: the endpoint's feedback state was replaced by a new, empty one (a reload).
    public mutating func stateWasReplaced() {
        stale.removeAll()
    }

    /// Sends through `send`, in state order, the latest value of every stale entry of `state` while the credit
    /// covers the next one.
    public mutating func catchUp(on state: OSCFeedbackMapper, send: (OSCMessage) -> Void) {
        for word in stale.indices {
            while stale[word] != 0 {
                let index = word * 64 + stale[word].leadingZeroBitCount
                guard index < state.stateCount else { return }
                let message = state.stateMessage(at: index)
                guard offer(message, stateIndex: index, send: send) else { return }
            }
        }
        stale.removeAll()
    }

    /// Sets or clears entry `index`'s bit; bit 63 - i of word w is entry 64 w + i, so that a word's leading zeros
    /// count to its first stale entry.
    private mutating func setStale(_ index: Int, _ isStale: Bool) {
        let (word, bit) = index.quotientAndRemainder(dividingBy: 64)
        if word >= stale.count {
            guard isStale else { return }
            stale.append(contentsOf: repeatElement(0, count: word - stale.count + 1))
        }
        let mask = UInt64(1) << UInt64(63 - bit)
        if isStale { stale[word] |= mask } else { stale[word] &= ~mask }
    }
}
