#if canImport(Glibc)
import Glibc
#endif

/// Unbuffered writes to the standard streams.
enum FileHandleOutput {
    /// Writes `text` to standard error.
    static func standardError(_ text: String) {
        var text = text
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let n = write(2, bytes.baseAddress.map { $0 + offset }, bytes.count - offset)
                if n <= 0 { return }
                offset += n
            }
        }
    }
}
