import CKitLibraries
import Drums
#if canImport(Glibc)
import Glibc
#endif

/// What the mixer plays made from a sound as read: converted to `Kit.sampleRate` and pitched in one pass of
/// libsamplerate (SRC_SINC_MEDIUM_QUALITY: 97 dB of signal to noise, 90 % of the band kept), then given its gain
/// and pan.
///
/// Pan follows Hydrogen's default law ("ratio, straight polygonal"): the side panned towards stays as it is and the
/// other falls linearly to silence at the end, so a centred sample is left untouched and a Hydrogen kit sounds as
/// it does in Hydrogen (its old `pan_L`/`pan_R` pairs were these very channel gains).
enum SampleBaking {
    /// The sample `audio` makes at `gain` (linear), `pan` (-1...1) and `pitch` semitones up; refused if
    /// libsamplerate cannot convert it (a pitch so far off that the ratio is beyond its 1/256...256).
    static func sample(from audio: SoundFile.Audio, gain: Float, pan: Float, pitch: Float) throws(ResamplingError) -> Sample {
        let ratio = Double(Kit.sampleRate) / Double(audio.rate) / exp2(Double(pitch) / 12)
        var samples = audio.samples
        if ratio != 1 {
            let samplerate = try KitLibraries.samplerate { ResamplingError(reason: $0) }
            guard samplerate.src_is_valid_ratio(ratio) != 0 else { throw ResamplingError(reason: "a pitch of \(pitch) semitones is too far to play") }
            samples = try resample(samples, channelCount: audio.channelCount, ratio: ratio, samplerate)
        }
        let step = audio.channelCount
        let frames = samples.count / step
        let leftGain = gain * (pan > 0 ? 1 - pan : 1)
        let rightGain = gain * (pan < 0 ? 1 + pan : 1)
        var left = [Float](repeating: 0, count: frames), right = [Float](repeating: 0, count: frames)
        samples.withUnsafeBufferPointer { input in
            left.withUnsafeMutableBufferPointer { left in
                right.withUnsafeMutableBufferPointer { right in
                    for frame in 0..<frames {
                        left[frame] = input[frame * step] * leftGain
                        right[frame] = input[frame * step + step - 1] * rightGain
                    }
                }
            }
        }
        return Sample(left: left, right: right)
    }

    /// Interleaved `samples` of `channelCount` channels resampled by `ratio` (output frames per input frame).
    private static func resample(_ samples: [Float], channelCount: Int, ratio: Double,
                                 _ samplerate: jambridge_samplerate_calls) throws(ResamplingError) -> [Float] {
        let inputFrames = samples.count / channelCount
        let capacity = Int((Double(inputFrames) * ratio).rounded(.up)) + 64
        var output = [Float](repeating: 0, count: capacity * channelCount)
        var generated = 0
        let status = samples.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { output in
                var data = SRC_DATA()
                data.data_in = input.baseAddress
                data.data_out = output.baseAddress
                data.input_frames = inputFrames
                data.output_frames = capacity
                data.end_of_input = 1
                data.src_ratio = ratio
                let status = samplerate.src_simple(&data, Int32(SRC_SINC_MEDIUM_QUALITY), Int32(channelCount))
                generated = data.output_frames_gen
                return status
            }
        }
        guard status == 0 else { throw ResamplingError(reason: samplerate.src_strerror(status).map { String(cString: $0) } ?? "libsamplerate error \(status)") }
        output.removeLast(output.count - generated * channelCount)
        return output
    }
}

/// Why libsamplerate could not convert a sample.
struct ResamplingError: Error {
    var reason: String
}
