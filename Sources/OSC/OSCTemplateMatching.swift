import RouteFile

// Matching addresses against `<n>` templates and building addresses back from captures.
//
// A capture is the canonical decimal writing of a number: one to nine digits, no leading zero
// (except `0` itself). So an address and its captured values correspond one to one, and the
// address built for feedback is exactly the one the controller sends (`/1/fader01` is not
// `/1/fader<n>`; a controller sending it would never see its fader follow).

extension OSCAddressTemplate {
    /// The most digits one capture takes, so every captured value fits an `Int` on any platform.
    public static let maxCaptureDigits = 9

    /// The captured values of `address` in template order, or nil if it does not match.
    public func match(_ address: String) -> [Int]? {
        var captures: [Int] = []
        return match(address, into: &captures) ? captures : nil
    }

    /// True if `address` matches; its captured values then replace `captures` (in template order).
    /// Reuses the array's storage, so a mapper matching every message allocates nothing.
    public func match(_ address: String, into captures: inout [Int]) -> Bool {
        captures.removeAll(keepingCapacity: true)
        let bytes = address.utf8
        var index = bytes.startIndex
        for piece in pieces {
            switch piece {
            case .literal(let text):
                for byte in text.utf8 {
                    guard index != bytes.endIndex, bytes[index] == byte else { return false }
                    bytes.formIndex(after: &index)
                }
            case .capture(_, let range):
                let first = index
                var value = 0, digits = 0
                while index != bytes.endIndex, bytes[index] &- 0x30 < 10 {
                    guard digits < Self.maxCaptureDigits else { return false }
                    value = value * 10 + Int(bytes[index] &- 0x30)
                    digits += 1
                    bytes.formIndex(after: &index)
                }
                guard digits == 1 || (digits > 1 && bytes[first] != 0x30) else { return false }
                if let range, !range.contains(value) { return false }
                captures.append(value)
            }
        }
        return index == bytes.endIndex
    }

    /// The address whose captures are `captures` (in template order), or nil if their count is wrong or
    /// one is negative, longer than nine digits or outside its capture's range.
    public func address(captures: [Int]) -> String? {
        var address = ""
        var next = captures.startIndex
        for piece in pieces {
            switch piece {
            case .literal(let text):
                address += text
            case .capture(_, let range):
                guard next < captures.endIndex else { return nil }
                let value = captures[next]
                next += 1
                guard value >= 0, value <= 999_999_999, range?.contains(value) ?? true else { return nil }
                address += String(value)
            }
        }
        return next == captures.endIndex ? address : nil
    }
}

extension OSCNumber {
    /// The number when its capture holds `captured` (ignored for a constant); nil if the sum does not fit an `Int`.
    public func value(capturing captured: Int) -> Int? {
        guard capture != nil else { return offset }
        let (sum, overflow) = captured.addingReportingOverflow(offset)
        return overflow ? nil : sum
    }

    /// The value its capture must hold for the number to be `number` (the inverse of `value(capturing:)`):
    /// nil for a constant, or if the difference does not fit an `Int`.
    public func captureValue(giving number: Int) -> Int? {
        guard capture != nil else { return nil }
        let (difference, overflow) = number.subtractingReportingOverflow(offset)
        return overflow ? nil : difference
    }
}

/// An `OSCNumber` with its capture name resolved to an index into a template's captures, for the hot path.
struct ResolvedNumber: Sendable {
    let number: OSCNumber
    /// The capture's index in the template; nil for a constant or for a name the template does not have.
    let index: Int?

    init(_ number: OSCNumber, in template: OSCAddressTemplate) {
        self.number = number
        index = number.capture.flatMap { template.captureNames.firstIndex(of: $0) }
    }

    /// The number for `captures` (in template order); nil if it names a capture the template lacks, or overflows.
    func value(_ captures: [Int]) -> Int? {
        guard number.capture != nil else { return number.offset }
        guard let index, index < captures.count else { return nil }
        return number.value(capturing: captures[index])
    }

    /// Binds the capture so that the number is `target`: true if consistent with what `bindings` already hold
    /// (a constant must equal `target`; two numbers reading one capture must agree).
    func bind(_ target: Int, into bindings: inout [Int?]) -> Bool {
        guard number.capture != nil else { return number.offset == target }
        guard let index, index < bindings.count, let captured = number.captureValue(giving: target) else { return false }
        if let bound = bindings[index] { return bound == captured }
        bindings[index] = captured
        return true
    }
}
