import CALSA
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import MIDI
import Synchronization
import Transport

/// Why audio output could not start: the device and what ALSA said.
public struct PCMError: Error, CustomStringConvertible, Sendable {
    public var device: String
    public var reason: String
    public var description: String { "cannot play audio on '\(device)': \(reason)" }
}

/// Plays what a render callback produces on an ALSA PCM device: 48 kHz, stereo, interleaved, from a thread of its
/// own at real-time priority where allowed (one log line where not).
///
/// For every period the thread asks `render` for `period` frames (Float, interleaved, -1...1) and the monotonic
/// instant at which the first of them will be heard (`PCMFrameClock`: the frames queued before them, by
/// `snd_pcm_delay`, against the monotonic clock, the earliest reading of the last half second). The callback must not wait on the engine: it
/// takes what was handed to it ahead of time (`DrumStream`). The samples go out as FLOAT_LE where the device takes
/// it, else S32_LE or S16_LE, clipped.
///
/// An underrun (-EPIPE) is recovered with `snd_pcm_prepare` and the stream goes on; a suspend (-ESTRPIPE) is
/// resumed with short waits (not `snd_pcm_recover`'s second per EAGAIN), then prepared; each is one log line
/// (every one of the first ten, then every hundredth) and counted. A device that goes away (-ENODEV, or any other
/// error) ends the playback with one error line; `isPlaying` then says so. `stop` drops what is queued.
public final class PCMPlayback: Sendable {
    public struct Configuration: Sendable, Equatable {
        public var device: String
        public var period: Int
        public var periods: Int
        public static let rate = 48_000

        public init(device: String = "default", period: Int = 256, periods: Int = 3) {
            self.device = device
            self.period = period
            self.periods = periods
        }
    }

    /// The real-time priority asked for: below the jam's clock thread (20).
    public static let priority: Int32 = 18

    /// What the device agreed to, for the log.
    public let obtained: String
    /// How long a frame waits between being rendered and being heard, at most: the buffer, in nanoseconds.
    public let latency: UInt64
    private let shared: Shared

    private final class Shared: Sendable {
        let stopped = Atomic<Bool>(false)
        let playing = Atomic<Bool>(true)
        let xruns = Atomic<Int>(0)
        let ended = DispatchSemaphore(value: 0)
    }

    /// Whether the thread still plays (false once stopped or after the device failed).
    public var isPlaying: Bool { shared.playing.load(ordering: .acquiring) }
    /// Underruns and suspends recovered so far.
    public var xruns: Int { shared.xruns.load(ordering: .relaxed) }

    /// Opens and configures `configuration.device`, then starts playing what `render` makes; `log` takes the
    /// thread's lines (level, text).
    public init(_ configuration: Configuration, log: @escaping @Sendable (PCMLogLevel, String) -> Void,
                render: @escaping @Sendable (UnsafeMutableBufferPointer<Float>, MonotonicInstant) -> Void) throws(PCMError) {
        jambridge_alsa_silence()
        let device = configuration.device
        var handle: OpaquePointer?
        let result = snd_pcm_open(&handle, device, SND_PCM_STREAM_PLAYBACK, 0)
        guard result == 0, let pcm = handle else { throw PCMError(device: device, reason: Self.text(result)) }
        let format: snd_pcm_format_t
        let period: Int, buffer: Int
        do {
            (format, period, buffer) = try Self.configure(pcm, configuration)
        } catch {
            snd_pcm_close(pcm)
            throw error
        }
        let formatName = String(cString: snd_pcm_format_name(format))
        let tenths = buffer * 10_000 / Configuration.rate
        latency = UInt64(buffer) * 1_000_000_000 / UInt64(Configuration.rate)
        obtained = "48 kHz stereo \(formatName), period \(period) frames, buffer \(buffer) frames (\(tenths / 10).\(tenths % 10) ms)"
        let shared = Shared()
        self.shared = shared
        let loop = Loop(pcm: pcm, format: format, period: period, shared: shared, log: log, render: render, device: device)
        switch startThread({ loop.run() }) {
        case .success(let thread):
            pthread_detach(thread)
        case .failure(let error):
            snd_pcm_close(pcm)
            throw PCMError(device: device, reason: "\(error)")
        }
    }

    /// Stops playing (what is queued is dropped) and closes the device; returns once the thread ended.
    public func stop() {
        guard !shared.stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        shared.ended.wait()
    }

    /// Sets the hardware and software parameters; returns the sample format, period and buffer obtained.
    private static func configure(_ pcm: OpaquePointer, _ configuration: Configuration) throws(PCMError)
        -> (snd_pcm_format_t, Int, Int) {
        let device = configuration.device
        func check(_ result: Int32, _ what: String) throws(PCMError) {
            guard result >= 0 else { throw PCMError(device: device, reason: "\(what): \(text(result))") }
        }
        var hardware: OpaquePointer?
        try check(snd_pcm_hw_params_malloc(&hardware), "no memory for its parameters")
        defer { snd_pcm_hw_params_free(hardware) }
        try check(snd_pcm_hw_params_any(pcm, hardware), "it has no configuration")
        try check(snd_pcm_hw_params_set_access(pcm, hardware, SND_PCM_ACCESS_RW_INTERLEAVED), "it does not take interleaved frames")
        guard let format = [SND_PCM_FORMAT_FLOAT_LE, SND_PCM_FORMAT_S32_LE, SND_PCM_FORMAT_S16_LE]
            .first(where: { snd_pcm_hw_params_test_format(pcm, hardware, $0) == 0 }) else {
            throw PCMError(device: device, reason: "it takes none of FLOAT_LE, S32_LE, S16_LE (try plughw: or default)")
        }
        try check(snd_pcm_hw_params_set_format(pcm, hardware, format), "sample format")
        try check(snd_pcm_hw_params_set_channels(pcm, hardware, 2), "it does not play 2 channels (try plughw: or default)")
        try check(snd_pcm_hw_params_set_rate(pcm, hardware, UInt32(Configuration.rate), 0), "it does not play 48 kHz (try plughw: or default)")
        var period = snd_pcm_uframes_t(configuration.period)
        var direction: Int32 = 0
        try check(snd_pcm_hw_params_set_period_size_near(pcm, hardware, &period, &direction), "period of \(configuration.period) frames")
        var buffer = period * snd_pcm_uframes_t(configuration.periods)
        try check(snd_pcm_hw_params_set_buffer_size_near(pcm, hardware, &buffer), "buffer of \(configuration.periods) periods")
        try check(snd_pcm_hw_params(pcm, hardware), "its parameters")
        var software: OpaquePointer?
        try check(snd_pcm_sw_params_malloc(&software), "no memory for its parameters")
        defer { snd_pcm_sw_params_free(software) }
        try check(snd_pcm_sw_params_current(pcm, software), "its software parameters")
        // It starts once the buffer is full, and the thread writes a period whenever one is free.
        try check(snd_pcm_sw_params_set_start_threshold(pcm, software, buffer), "start threshold")
        try check(snd_pcm_sw_params_set_avail_min(pcm, software, period), "wake-up threshold")
        try check(snd_pcm_sw_params(pcm, software), "its software parameters")
        return (format, Int(period), Int(buffer))
    }

    static func text(_ error: Int32) -> String { String(cString: snd_strerror(error)) }

    /// The playback thread's work.
    private final class Loop: @unchecked Sendable { // used by its one thread only
        let pcm: OpaquePointer
        let format: snd_pcm_format_t
        let period: Int
        let shared: Shared
        let log: @Sendable (PCMLogLevel, String) -> Void
        let render: @Sendable (UnsafeMutableBufferPointer<Float>, MonotonicInstant) -> Void
        let device: String
        var samples: [Float]
        var converted: [UInt8]

        init(pcm: OpaquePointer, format: snd_pcm_format_t, period: Int, shared: Shared,
             log: @escaping @Sendable (PCMLogLevel, String) -> Void,
             render: @escaping @Sendable (UnsafeMutableBufferPointer<Float>, MonotonicInstant) -> Void, device: String) {
            self.pcm = pcm
            self.format = format
            self.period = period
            self.shared = shared
            self.log = log
            self.render = render
            self.device = device
            samples = [Float](repeating: 0, count: 2 * period)
            converted = [UInt8](repeating: 0, count: 2 * period * 4)
        }

        func run() {
            let refused = raiseToRealTimePriority(PCMPlayback.priority)
            if refused != 0 {
                log(.notice, "audio thread runs at normal priority: real-time priority refused (\(String(cString: strerror(refused)))); drums may glitch under load")
            }
            // When each period is heard: the lowest of the last half second's readings (one reading alone strays by
            // the driver's pointer granularity, a jiffy on snd-aloop).
            var clock = PCMFrameClock(rate: Configuration.rate)
            var paced: UInt64?
            while !shared.stopped.load(ordering: .acquiring) {
                var delay: snd_pcm_sframes_t = 0
                let queued = snd_pcm_delay(pcm, &delay) == 0 ? max(0, Int(delay)) : 0
                let now = MonotonicClock.now()
                // Until the buffer is full the stream waits: frames are queued but their time is not running yet.
                if snd_pcm_state(pcm) == SND_PCM_STATE_RUNNING { clock.observe(timestamp: now, delay: queued) }
                let firstFrame = clock.hasReadings ? clock.firstFrame
                    : now.advanced(byNanoseconds: UInt64(clock.duration(of: queued)))
                samples.withUnsafeMutableBufferPointer { render($0, firstFrame) }
                PCMSamples.convert(samples, to: format, into: &converted)
                let written = converted.withUnsafeBytes { snd_pcm_writei(pcm, $0.baseAddress, snd_pcm_uframes_t(period)) }
                if written > 0 { clock.advance(by: Int(written)) }
                // A real device holds the period just written until it plays it, and blocks the write while its buffer
                // is full: that paces this loop. One that holds less than that has played it at once (ALSA's null
                // device): the loop waits a period's time itself, or it would spin at real-time priority.
                if written == period, snd_pcm_delay(pcm, &delay) == 0, Int(delay) < period { pace(&paced) }
                if written < 0 {
                    guard recover(Int32(written)) else { break }
                    clock.restart() // the stream starts again from its next frame
                }
            }
            snd_pcm_drop(pcm)
            snd_pcm_close(pcm)
            shared.playing.store(false, ordering: .releasing)
            if shared.stopped.load(ordering: .acquiring) { shared.ended.signal() } else { waitForStop() }
        }

        /// Sleeps until a period after the last paced instant `last` (nanoseconds on the monotonic clock; from now the
        /// first time, or after falling more than 4 periods behind), and makes that the last.
        private func pace(_ last: inout UInt64?) {
            let now = MonotonicClock.now().nanoseconds, period = UInt64(self.period) * 1_000_000_000 / UInt64(Configuration.rate)
            var next = (last ?? now) + period
            if next + 4 * period < now { next = now + period }
            var time = timespec(tv_sec: Int(next / 1_000_000_000), tv_nsec: Int(next % 1_000_000_000))
            while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &time, nil) == EINTR {}
            last = next
        }

        /// Recovers from `error`; false when the playback must end.
        private func recover(_ error: Int32) -> Bool {
            switch error {
            case -EPIPE:
                note("underrun")
                let prepared = snd_pcm_prepare(pcm)
                return prepared == 0 || fail(prepared)
            case -ESTRPIPE:
                note("suspend")
                var result = snd_pcm_resume(pcm)
                for _ in 0..<100 where result == -EAGAIN {
                    usleep(10_000)
                    result = snd_pcm_resume(pcm)
                }
                return result == 0 || snd_pcm_prepare(pcm) == 0 || fail(result)
            case -EINTR, -EAGAIN:
                return true
            default:
                return fail(error)
            }
        }

        private func note(_ what: String) {
            let count = shared.xruns.add(1, ordering: .relaxed).newValue
            if count <= 10 || count % 100 == 0 {
                log(.warning, "audio \(what) on '\(device)', recovered (\(count) so far)")
            }
        }

        private func fail(_ error: Int32) -> Bool {
            log(.error, "audio on '\(device)' ended: \(PCMPlayback.text(error))")
            return false
        }

        /// After a failure, the owner's `stop` still waits for the thread: it lets it go.
        private func waitForStop() {
            while !shared.stopped.load(ordering: .acquiring) { usleep(50_000) }
            shared.ended.signal()
        }
    }
}

/// How loud a line of the playback thread is.
public enum PCMLogLevel: Sendable { case notice, warning, error }

/// Float samples to the bytes a PCM device takes.
enum PCMSamples {
    /// Writes `samples` as `format` into `bytes` (large enough), clipping to -1...1; returns the byte count.
    @discardableResult
    static func convert(_ samples: [Float], to format: snd_pcm_format_t, into bytes: inout [UInt8]) -> Int {
        bytes.withUnsafeMutableBytes { raw in
            switch format {
            case SND_PCM_FORMAT_FLOAT_LE:
                for (index, sample) in samples.enumerated() { raw.storeBytes(of: min(1, max(-1, sample)).bitPattern.littleEndian, toByteOffset: 4 * index, as: UInt32.self) }
                return 4 * samples.count
            case SND_PCM_FORMAT_S32_LE:
                for (index, sample) in samples.enumerated() {
                    raw.storeBytes(of: Int32(Double(min(1, max(-1, sample))) * 2_147_483_647).littleEndian, toByteOffset: 4 * index, as: Int32.self)
                }
                return 4 * samples.count
            default:
                for (index, sample) in samples.enumerated() {
                    raw.storeBytes(of: Int16(min(1, max(-1, sample)) * 32_767).littleEndian, toByteOffset: 2 * index, as: Int16.self)
                }
                return 2 * samples.count
            }
        }
    }
}
