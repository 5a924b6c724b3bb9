#if canImport(Glibc)
import Glibc
#endif

@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// Hands the command line to libFuzzer, which calls `test` with each input, and exits with its status.
public func runFuzzer(_ test: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Never {
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv, test))
}

/// True when FUZZ_TRACE is set: targets then print what happens, to read a reproducer.
public let tracing = getenv("FUZZ_TRACE") != nil

/// Prints `text` when tracing.
public func trace(_ text: @autoclosure () -> String) { if tracing { print(text()) } }

/// SplitMix64 for SSRCs, tokens and sequence numbers in the session targets: never 0.
public final class Random {
    private var state: UInt64
    /// A generator starting from `seed`.
    public init(_ seed: UInt64) { state = seed }
    /// The next non-zero value.
    public func next() -> UInt32 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return max(1, UInt32(truncatingIfNeeded: z ^ (z >> 31)))
    }
}
