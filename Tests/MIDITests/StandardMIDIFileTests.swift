import Foundation
import MIDI
import MIDITestSupport
import Testing

/// A file with one MTrk chunk holding `body` (End of Track not added), 96 ticks per quarter.
private func file(format: UInt16 = 0, division: [UInt8] = [0x00, 0x60], tracks: [[UInt8]]) -> [UInt8] {
    var bytes: [UInt8] = Array("MThd".utf8) + [0, 0, 0, 6, 0, UInt8(format), 0, UInt8(tracks.count)] + division
    for body in tracks {
        bytes += Array("MTrk".utf8) + [0, 0, UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
    }
    return bytes
}

private let endOfTrack: [UInt8] = [0x00, 0xFF, 0x2F, 0x00]
private let c1 = UInt4(masking: 0)
private func v(_ x: UInt8) -> UInt7 { UInt7(masking: x) }

@Suite struct StandardMIDIFileTests {
    @Test func readsEventsWithRunningStatusMetaAndTiming() throws {
        // Note on, then (running status) a second note on 96 ticks later = one quarter at 120 BPM.
        let bytes = file(tracks: [[0x00, 0x90, 60, 100, 0x60, 64, 100, 0x00, 0xFF, 0x01, 0x02, 0x68, 0x69, 0x60, 0x80, 60, 0] + endOfTrack])
        let smf = try StandardMIDIFile(bytes: bytes)
        #expect(smf.format == 0)
        #expect(smf.division == .ticksPerQuarterNote(96))
        #expect(smf.tracks[0].events.map(\.kind) == [
            .midi(.noteOn(channel: c1, note: v(60), velocity: v(100))),
            .midi(.noteOn(channel: c1, note: v(64), velocity: v(100))),
            .meta(type: 0x01, data: Array("hi".utf8)),
            .midi(.noteOff(channel: c1, note: v(60), velocity: v(0))),
            .meta(type: 0x2F, data: []),
        ])
        let song = TimedSong(smf)
        #expect(song.entries.map(\.offset) == [0, 500_000_000, 1_000_000_000])
        #expect(song.duration == 1_000_000_000)
    }

    @Test func tempoChangesApplyFromTheirTickExactly() throws {
        // Conductor: tempo 1 s per quarter at tick 96 (after one 0.5 s quarter). Track 2: notes each quarter.
        let conductor: [UInt8] = [0x60, 0xFF, 0x51, 0x03, 0x0F, 0x42, 0x40] + endOfTrack
        let notes: [UInt8] = [0x00, 0x90, 60, 1, 0x60, 0x90, 61, 1, 0x60, 0x90, 62, 1] + endOfTrack
        let song = TimedSong(try StandardMIDIFile(bytes: file(format: 1, tracks: [conductor, notes])))
        #expect(song.entries.map(\.offset) == [0, 500_000_000, 1_500_000_000])
    }

    @Test func smpteDivisionTimesTicksByFrames() throws {
        // 25 fps, 40 ticks per frame: 1000 ticks per second.
        let body: [UInt8] = [0x00, 0x90, 60, 1, 0x87, 0x68, 0x90, 61, 1] + endOfTrack // delta 1000
        let smf = try StandardMIDIFile(bytes: file(division: [0xE7, 40], tracks: [body]))
        #expect(smf.division == .smpte(framesPerSecond: 25, ticksPerFrame: 40))
        #expect(TimedSong(smf).entries.map(\.offset) == [0, 1_000_000_000])
    }

    @Test func formatOneTracksMergeInTimeThenTrackOrder() throws {
        let a: [UInt8] = [0x00, 0x90, 1, 1, 0x10, 0x90, 3, 1] + endOfTrack
        let b: [UInt8] = [0x00, 0x91, 2, 1, 0x20, 0x91, 4, 1] + endOfTrack
        let song = TimedSong(try StandardMIDIFile(bytes: file(format: 1, tracks: [a, b])))
        #expect(song.entries.map { if case .noteOn(_, let n, _) = $0.message { Int(n.value) } else { -1 } } == [1, 2, 3, 4])
    }

    @Test func sysExContinuationPacketsJoinAndEscapesDecode() throws {
        let body: [UInt8] = [0x00, 0xF0, 0x02, 0x7E, 0x01,   // F0 packet without F7
                             0x10, 0xF7, 0x02, 0x02, 0xF7,   // continuation ending with F7
                             0x00, 0xF7, 0x01, 0xFA,         // escaped Start
                             0x00, 0xF7, 0x02, 0xF3, 0x05,   // escaped Song select
                             0x00, 0xF7, 0x02, 0x90, 0x40]   // an escape that is not a system message
                             + endOfTrack
        let smf = try StandardMIDIFile(bytes: file(tracks: [body]))
        #expect(smf.tracks[0].events.map(\.kind) == [
            .midi(.sysEx(data: [0x7E, 0x01, 0x02])), .midi(.start), .midi(.songSelect(v(5))),
            .escape([0x90, 0x40]), .meta(type: 0x2F, data: []),
        ])
        // The continuation's delta still counts for what follows.
        #expect(smf.tracks[0].events[1].delta == 0x10)
    }

    @Test func errorsSayWhereAndWhat() {
        let cases: [([UInt8], String)] = [
            (Array("RIFF....".utf8) + Array(repeating: 0, count: 10), "at byte 0: not a Standard MIDI File (no MThd header)"),
            (file(tracks: [[0x00, 60, 100]]), "track 1 at byte 23: data byte with no status (running status not set)"),
            (file(tracks: [[0x00, 0xF1, 0x00]]), "track 1 at byte 23: status byte F1 is not allowed in a track (system messages need an F7 escape)"),
            (file(tracks: [[0xFF, 0xFF, 0xFF, 0xFF, 0x00]]), "track 1 at byte 22: variable-length number longer than 4 bytes"),
            (file(tracks: [[0x00, 0x90, 60]]), "track 1 at byte 25: unexpected end of track"),
            (file(tracks: [[0x00, 0x90, 60, 0x90]]), "track 1 at byte 25: status byte 90 where a data byte belongs"),
            (file(division: [0, 0], tracks: [endOfTrack]), "at byte 12: division of 0 ticks per quarter note"),
        ]
        for (bytes, message) in cases {
            #expect(throws: StandardMIDIFileError.self) { try StandardMIDIFile(bytes: bytes) }
            do {
                _ = try StandardMIDIFile(bytes: bytes)
            } catch {
                #expect(error.description == message)
            }
        }
        var truncated = file(tracks: [[0x00, 0x90, 60, 1] + endOfTrack])
        truncated.removeLast(3)
        #expect(throws: StandardMIDIFileError.self) { try StandardMIDIFile(bytes: truncated) }
    }

    @Test func aTrackWithoutEndOfTrackReadsWithOneSoItWritesBackTheSame() throws {
        // Found by the fuzzer: an empty MTrk chunk (and trailing bytes too short for a chunk).
        let bytes = file(tracks: [[]]) + [0xFF, 0x2F]
        let smf = try StandardMIDIFile(bytes: bytes)
        #expect(smf.tracks[0].events == [.init(delta: 0, kind: .meta(type: 0x2F, data: []))])
        #expect(try StandardMIDIFile(bytes: smf.encoded()) == smf)
    }

    @Test func everyPrefixOfAValidFileIsAnErrorOrAFileNeverACrash() {
        let bytes = StandardMIDIFile.recording(
            [.init(offset: 0, message: .noteOn(channel: c1, note: v(60), velocity: v(1))),
             .init(offset: 10_000_000, message: .sysEx(data: [1, 2, 3])),
             .init(offset: 20_000_000, message: .start)]).encoded()
        for length in 0...bytes.count {
            _ = try? StandardMIDIFile(bytes: Array(bytes.prefix(length)))
        }
        #expect((try? StandardMIDIFile(bytes: bytes)) != nil)
    }

    @Test func randomRecordingsRoundTripThroughBytes() throws {
        var generator = SeededGenerator(seed: 5)
        for _ in 0..<100 {
            var offset: UInt64 = 0
            let entries = (0..<Int.random(in: 0...100, using: &generator)).map { _ -> TimedSong.Entry in
                offset += UInt64.random(in: 0...50_000_000, using: &generator)
                return .init(offset: offset, message: generator.message(maxSysEx: 40))
            }
            let smf = StandardMIDIFile.recording(entries)
            let reread = try StandardMIDIFile(bytes: smf.encoded())
            #expect(reread == smf)
            let song = TimedSong(reread)
            #expect(song.entries.map(\.message) == entries.map(\.message))
            // 960 ticks per 0.5 s quarter: one tick is about 0.52 ms; rounding is at most half of one.
            for (got, sent) in zip(song.entries, entries) {
                #expect(got.offset >= sent.offset ? got.offset - sent.offset <= 260_417 : sent.offset - got.offset <= 260_417)
            }
        }
    }

    @Test func theRecordingEncoderWritesWhatRecordingEncodesWhereverTheMessagesAreSplit() throws {
        var generator = SeededGenerator(seed: 12)
        for _ in 0..<50 {
            var offset: UInt64 = 0
            let entries = (0..<Int.random(in: 0...60, using: &generator)).map { _ -> TimedSong.Entry in
                offset += UInt64.random(in: 0...50_000_000, using: &generator)
                return .init(offset: offset, message: generator.message(maxSysEx: 40))
            }
            // `recording`'s events at their absolute ticks, tempo changes among them now and then.
            var tick: UInt64 = 0
            let timed = StandardMIDIFile.recording(entries).tracks[0].events.dropFirst().dropLast().map { event in
                tick += UInt64(event.delta)
                return (tick: tick, kind: event.kind)
            }.flatMap { event -> [(tick: UInt64, kind: StandardMIDIFile.TrackEvent.Kind)] in
                guard Bool.random(using: &generator) else { return [event] }
                return [(event.tick, .tempo(microsecondsPerQuarter: UInt32.random(in: 1...0xFF_FFFF, using: &generator))), event]
            }
            var expected = StandardMIDIFile.recording([])
            var previous: UInt64 = 0
            for event in timed {
                expected.tracks[0].events.insert(.init(delta: UInt32(event.tick - previous), kind: event.kind),
                                                 at: expected.tracks[0].events.count - 1)
                previous = event.tick
            }
            for split in 0...timed.count {
                var encoder = RecordingEncoder()
                for event in timed[..<split] { encoder.append(event.kind, atTick: event.tick) }
                let first = try? StandardMIDIFile(bytes: encoder.file())
                #expect(first?.tracks[0].events.count == split + 2)
                for event in timed[split...] { encoder.append(event.kind, atTick: event.tick) }
                #expect(encoder.file() == expected.encoded())
                #expect(encoder.count == entries.count)
            }
        }
        #expect(RecordingEncoder(ticksPerQuarterNote: 96, microsecondsPerQuarter: 600_000).file()
                == StandardMIDIFile.recording([], ticksPerQuarterNote: 96, microsecondsPerQuarter: 600_000).encoded())
        // A tick before the last event's is the last event's: the file never goes back in time.
        var encoder = RecordingEncoder()
        encoder.append(.midi(.noteOn(channel: c1, note: v(60), velocity: v(1))), atTick: 10)
        encoder.append(.midi(.noteOff(channel: c1, note: v(60), velocity: v(0))), atTick: 4)
        #expect(try StandardMIDIFile(bytes: encoder.file()).tracks[0].events.map(\.delta) == [0, 10, 0, 0])
    }

    @Test func theShippedDemoSongHasItsFourTracks() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("routes/songs/demo.mid")
        let smf = try StandardMIDIFile(bytes: [UInt8](try Data(contentsOf: url)))
        #expect(smf.format == 1)
        #expect(smf.tracks.count == 4)
        let song = TimedSong(smf)
        let channels = Set(song.entries.compactMap { $0.message.channel?.value })
        #expect(channels == [0, 1, 9])
        #expect((26_000_000_000...26_400_000_000).contains(song.duration))
    }
}
