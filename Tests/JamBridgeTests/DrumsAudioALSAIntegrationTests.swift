import Foundation
import Testing

// The drums through real ALSA audio: run by scripts/alsa-tests.sh in the VM, which has snd-aloop. jambridge plays on
// hw:Loopback,0; arecord (alsa-utils, a reader nobody here wrote) captures the other side, hw:Loopback,1, and
// soundfile finds the onsets; the jam's clock goes to "Virtual Raw MIDI 0-1", read by amidi. Timing in the VM is
// emulated: what is checked is that the audio is there, on the clock's tempo, a hit a beat.

@Suite(.serialized) struct DrumsAudioALSAIntegrationTests {
    @Test func theDrumsAudioReachesTheLoopbackOnTheClocksBeat() throws {
        let dir = try temporaryDirectory()
        try "name: beats\ngroove:\n  clave: \"1 . . . 1 . . . 1 . . . 1 . . .\"\n"
            .write(to: dir.appendingPathComponent("beats.yaml"), atomically: true, encoding: .utf8)
        let routes = dir.appendingPathComponent("audio.yaml")
        try """
            clock: { tempo: 120, to: [drum-machine] }
            drums: { style: ./beats.yaml, audio: { device: "hw:Loopback,0", period: 1024, periods: 4 } }
            endpoints:
              drum-machine: { alsa: "Virtual Raw MIDI 0-1" }
            routes:
              - { from: drums, to: drum-machine }

            """.write(to: routes, atomically: true, encoding: .utf8)
        let daemon = try JamBridgeProcess(["run", "--stop-after", "240", routes.path])
        #expect(daemon.waitForError(containing: "through 'hw:Loopback,0': 48 kHz stereo"), "\(daemon.errorSoFar)")
        try waitForConnections(2)
        let capture = dir.appendingPathComponent("capture.wav")
        let recorder = try JamBridgeProcess(["-D", "hw:Loopback,1", "-f", "FLOAT_LE", "-r", "48000", "-c", "2", "-d", "20", capture.path],
                                            launcher: "/usr/bin/arecord")
        let reader = try startTimedReading(device: 1, idleSeconds: 10)
        Thread.sleep(forTimeInterval: 2)
        #expect(try control(daemon, "start").status == 0)
        Thread.sleep(forTimeInterval: 8)
        let status = try control(daemon, "status").out
        #expect(status.contains("level 1 of 1 (following the activity), bar ") && status.contains("; audio playing, "), "\(status)")
        let audio = try #require(try daemonStatus(daemon.pid)?.drums?.audio)
        #expect(audio.device == "hw:Loopback,0" && audio.playing && audio.hits > 0, "\(audio)")
        #expect(try control(daemon, "stop").status == 0)
        let recorded = recorder.finish(killingAfter: 120)
        #expect(recorded.status == 0, "arecord: \(recorded.err)")
        let got = reader.finish(killingAfter: 120)
        // What the daemon counted as late: hits handed to the audio after their time (the VM not run for a while),
        // played at once, and underruns.
        let counted = try #require(try daemonStatus(daemon.pid)?.drums?.audio)
        daemon.interrupt()
        let result = daemon.finish(killingAfter: 60)
        #expect(result.status == 0, "\(result.err)")

        let clock = clockBytes(timedBytes(got.out))
        let beats = clock.filter { $0.byte == 0xF8 }.count / 24
        let found = try onsets(in: capture, threshold: 0.05)
        #expect(found.rate == 48_000 && found.channels == 2)
        // A hit a beat: as many onsets as the clock's beats (the capture may miss one at either end).
        #expect(beats >= 4 && abs(found.onsets.count - beats) <= 2, "\(found.onsets.count) onsets, \(beats) beats")
        // On the clock's tempo: onsets 24,000 frames (0.5 s) apart on average to 20 frames, each within 2.5 ms. (Each
        // period's time comes from the earliest of half a second of snd_pcm_delay readings, PCMFrameClock: snd-aloop
        // moves its pointer a jiffy at a time in the VM; one reading alone put single beats 2.6 ms off, 7.6 ms when
        // the host was busy. Now a few frames, 27 at most, with the host busy; but a hit handed over after its time
        // because the VM was not run, which the daemon counts, still plays late.)
        let intervals = zip(found.onsets.dropFirst(), found.onsets).map { $0 - $1 }.dropFirst() // the first may be cut
        let mean = Double(intervals.reduce(0, +)) / Double(max(1, intervals.count))
        // A hit the daemon counted late moves the two intervals around it, and only those.
        let off = intervals.filter { abs($0 - 24_000) > 120 }.count
        print("drums audio through snd-aloop: \(intervals.count) beat intervals, mean \(mean) frames, furthest from 24,000: "
              + "\(intervals.map { abs($0 - 24_000) }.max() ?? 0) frames; \(off) off by more than 120, \(counted.lateHits) late hits, \(counted.xruns) underruns")
        #expect(abs(mean - 24_000) <= 20 && off <= 2 * (counted.lateHits + counted.xruns), "intervals \(Array(intervals)), \(counted)")
    }

    /// The daemon stopped for a second (SIGSTOP: the audio thread cannot write, the device runs dry): one log line
    /// says the underrun was recovered, and the drums go on being heard.
    @Test func anUnderrunIsRecoveredWithOneLineAndTheDrumsPlayOn() throws {
        let dir = try temporaryDirectory()
        let routes = dir.appendingPathComponent("audio.yaml")
        try "clock: { tempo: 120 }\ndrums: { style: rock, level: 5, audio: { device: \"hw:Loopback,0\", period: 1024, periods: 2 } }\n"
            .write(to: routes, atomically: true, encoding: .utf8)
        let daemon = try JamBridgeProcess(["run", "--stop-after", "240", routes.path])
        #expect(daemon.waitForError(containing: "through 'hw:Loopback,0': 48 kHz stereo"), "\(daemon.errorSoFar)")
        #expect(try control(daemon, "start").status == 0)
        Thread.sleep(forTimeInterval: 3)
        kill(daemon.pid, SIGSTOP)
        Thread.sleep(forTimeInterval: 1)
        kill(daemon.pid, SIGCONT)
        #expect(daemon.waitForError(containing: "audio underrun on 'hw:Loopback,0', recovered (1 so far)"), "\(daemon.errorSoFar)")
        let capture = dir.appendingPathComponent("after.wav")
        let recorded = try JamBridgeProcess(["-D", "hw:Loopback,1", "-f", "FLOAT_LE", "-r", "48000", "-c", "2", "-d", "4", capture.path],
                                            launcher: "/usr/bin/arecord").finish(killingAfter: 120)
        #expect(recorded.status == 0, "arecord: \(recorded.err)")
        #expect(try onsets(in: capture, threshold: 0.05).onsets.count >= 4)
        let status = try control(daemon, "status").out
        #expect(status.contains("; audio playing, ") && !status.contains(" 0 xruns"), "\(status)")
        daemon.interrupt()
        #expect(daemon.finish(killingAfter: 60).status == 0)
    }
}
