#if canImport(Glibc)
import Glibc
#endif

/// Unbuffered writes to the standard streams, each text in as few writes as the stream takes (one, mostly), so other
/// threads' lines do not land inside it.
public enum FileHandleOutput {
    /// Writes `text` to standard error.
    public static func standardError(_ text: String) {
        write(text, to: 2)
    }

    /// Writes `text` to standard output (a `status --watch` frame at once, whatever buffers `print`).
    public static func standardOutput(_ text: String) {
        write(text, to: 1)
    }

    private static func write(_ text: String, to fd: Int32) {
        var text = text
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let n = Glibc.write(fd, bytes.baseAddress.map { $0 + offset }, bytes.count - offset)
                if n <= 0 { return }
                offset += n
            }
        }
    }
}
