import MIDI

/// When the frames written to a running PCM stream will be heard, on the monotonic clock: the
/// `firstFrame` PCMPlayback passes with each buffer. Pure: the caller passes what the device said.
/// (From the alternative PCMPlayback a helper built on the `pcm` branch, taken alone.)
///
/// The method. Before each period the playback thread asks the device how many frames are queued and
/// not yet heard (`snd_pcm_delay`: D, the driver's own FIFO and codec latency included) and reads the
/// monotonic clock just after (T). So the next frame written, the stream's frame W (W frames were
/// written since it started), is heard at T + D/rate, and the stream's frame 0 at T + (D - W)/rate: its
/// origin. Each such pair is one reading of the origin.
///
/// Readings err one way only. Many drivers move their pointer a period or a timer tick at a time
/// (snd-aloop by whole jiffies, 4 ms here; USB audio by packets), so the pointer lags the frame
/// being heard and D is too large; and T is taken after the pointer is read, so it is late. Both
/// make a reading late, never early, by up to a tick: taken one by one they would move every
/// buffer's firstFrame back and forth by that much. The lowest reading is the best (the same
/// reasoning as `ClockOffsetEstimate`'s quickest legs), but not for ever: a sound card's crystal runs
/// up to about 100 ppm off the system clock, and a card slower than the clock makes true readings
/// rise. So the estimate is the lowest reading of the last half second or so: the minima of the last
/// four eighths of a second and of the eighth under way. Each buffer's firstFrame is then
/// origin + W/rate: consecutive buffers follow one another by exactly a period's duration, give or
/// take the estimate's refinements (a lower reading, or an eighth of a second leaving the window:
/// microseconds). A card 100 ppm off lags its window by up to 63 µs (3 frames). Simulated with a
/// pointer moving by 4 ms jiffies and readings mostly under 100 µs late, the error stays within a frame
/// on a card that keeps time and within 3 frames on one 100 ppm off, and moves by at most a frame and a
/// half from one buffer to the next (PCMFrameClockTests).
///
/// An xrun or a suspend breaks the stream: `restart` forgets the readings, and the frames written
/// from then on are counted from 0 again.
struct PCMFrameClock: Sendable {
    /// The window: `blocks` finished blocks of `blockNanoseconds` and the one under way.
    static let blockNanoseconds: Int64 = 125_000_000
    static let blocks = 4

    /// Frames per second.
    let rate: Int
    /// Frames written since the stream (re)started.
    private(set) var written = 0
    /// The lowest reading of each finished block (nil: none yet), oldest replaced first.
    private var finished: [Int64?]
    private var oldest = 0
    /// The lowest reading of the block under way and when that block began; nil before the first reading.
    private var current: (lowest: Int64, began: Int64)?
    /// The estimate of when frame 0 is heard, in nanoseconds: the lowest reading in the window.
    private var origin: Int64 = 0

    init(rate: Int) {
        self.rate = rate
        finished = Array(repeating: nil, count: Self.blocks)
    }

    /// The stream starts afresh: frame 0 is the next one written.
    mutating func restart() {
        written = 0
        finished.withUnsafeMutableBufferPointer { $0.update(repeating: nil) }
        current = nil
    }

    /// `frames` more were written.
    mutating func advance(by frames: Int) {
        written += frames
    }

    /// A reading: at `timestamp`, `delay` frames were queued and not yet heard.
    mutating func observe(timestamp: MonotonicInstant, delay: Int) {
        let time = Int64(clamping: timestamp.nanoseconds)
        let reading = time + duration(of: delay) - duration(of: written)
        let block: (lowest: Int64, began: Int64)
        if let current, time - current.began < Self.blockNanoseconds {
            block = (min(current.lowest, reading), current.began)
        } else {
            if let current {
                finished[oldest] = current.lowest
                oldest = (oldest + 1) % Self.blocks
            }
            block = (reading, time)
        }
        current = block
        origin = finished.reduce(block.lowest) { lowest, finished in finished.map { min(lowest, $0) } ?? lowest }
    }

    /// True once `observe` was called since the (re)start.
    var hasReadings: Bool { current != nil }

    /// When the next frame written will be heard (meaningful once `hasReadings`).
    var firstFrame: MonotonicInstant {
        MonotonicInstant(nanoseconds: UInt64(clamping: origin + duration(of: written)))
    }

    /// How long `frames` last, in nanoseconds (rounded towards zero), without overflowing for any count.
    func duration(of frames: Int) -> Int64 {
        Int64(frames / rate) * 1_000_000_000 + Int64(frames % rate) * 1_000_000_000 / Int64(rate)
    }
}
