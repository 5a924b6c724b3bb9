#if canImport(Glibc)
import Glibc
#endif

extension Double {
    /// The number with `places` decimals, as printf's `%.Nf` writes it (`%+.Nf` if `signed`), for people to read.
    public func decimal(_ places: Int, signed: Bool = false) -> String {
        var buffer = [CChar](repeating: 0, count: 48)
        let format = signed ? "%+.*f" : "%.*f"
        let written = withVaList([Int32(places), self]) { vsnprintf(&buffer, buffer.count, format, $0) }
        // Larger than the buffer only far beyond any figure jambridge shows (above 10^40): Swift's own text then.
        guard written >= 0, Int(written) < buffer.count else { return description }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// Seconds as a person writes them: `2`, `0.5`.
    var secondsText: String { self == rounded() && abs(self) < 1e15 ? String(Int64(self)) : description }
}
