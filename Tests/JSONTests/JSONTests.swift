import Foundation
import JSON
import Testing

/// Every kind of value Codable writes, nested: what the status and the control socket's replies hold.
private struct Sample: Codable, Equatable {
    struct Inner: Codable, Equatable {
        var name: String
        var counts: [String: Int]
    }

    var flag: Bool
    var text: String
    var whole: Double
    var fraction: Double
    var tiny: Double
    var float: Float
    var negative: Int
    var big: UInt64
    var small: Int8
    var ssrc: UInt32
    var missing: String?
    var present: Int?
    var items: [Inner]
    var nested: [[Int]]
}

private let sample = Sample(flag: true, text: "a \"quoted\" \\ path/with/slashes, a tab\t, é and 🎹 and \u{1}",
                            whole: 120, fraction: 0.1, tiny: 1e-7, float: 0.25, negative: -42, big: UInt64.max, small: -128,
                            ssrc: 0xDEAD_BEEF, missing: nil, present: 7,
                            items: [Sample.Inner(name: "b", counts: ["z": 1, "a": 2]), Sample.Inner(name: "", counts: [:])],
                            nested: [[], [1, 2]])

@Suite struct JSONTests {
    @Test func foundationReadsWhatTheWriterWritesAndTheReaderReadsWhatFoundationWrites() throws {
        let ours = try JSONWriter().bytes(sample)
        #expect(try JSONDecoder().decode(Sample.self, from: Data(ours)) == sample)
        let theirs = try JSONEncoder().encode(sample)
        #expect(try JSONReader().value(Sample.self, from: Array(theirs)) == sample)
        #expect(try JSONReader().value(Sample.self, from: ours) == sample)
    }

    @Test func writtenAsFoundationWritesItSortedWithSlashesAsTheyAre() throws {
        let foundation = JSONEncoder()
        foundation.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        #expect(try String(decoding: JSONWriter().bytes(sample), as: UTF8.self)
                == String(decoding: foundation.encode(sample), as: UTF8.self))
        // Pretty: as Foundation's, but for an empty list or object, which Foundation writes over three lines.
        foundation.outputFormatting = [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted]
        let theirs = String(decoding: try foundation.encode(sample), as: UTF8.self)
            .replacingOccurrences(of: #"\[\n\n *\]"#, with: "[]", options: .regularExpression)
            .replacingOccurrences(of: #"\{\n\n *\}"#, with: "{}", options: .regularExpression)
        #expect(try String(decoding: JSONWriter().bytes(sample, pretty: true), as: UTF8.self) == theirs)
    }

    @Test func aNumberThatIsNotFiniteCannotBeWritten() {
        #expect(throws: EncodingError.self) { try JSONWriter().bytes([Double.nan]) }
        #expect(throws: EncodingError.self) { try JSONWriter().bytes(["tempo": Double.infinity]) }
    }

    @Test func theReaderTakesRFC8259() throws {
        let value = try JSONValue(parsing: Array(#" { "a" : [1, -0.5e+3, true, false, null, "\u00e9\ud83c\udfb9\n\/"], "b": {} } "#.utf8))
        #expect(value == .object([("a", .array([.number("1"), .number("-0.5e+3"), .bool(true), .bool(false), .null,
                                                  .string("é🎹\n/")])), ("b", .object([]))]))
        #expect(value["a"]?.array?[1].double == -500)
        // A lone surrogate is U+FFFD, not a trap.
        #expect(try JSONValue(parsing: Array(#""\ud800x""#.utf8)) == .string("\u{FFFD}x"))
        #expect(try JSONValue(parsing: Array("2.0".utf8)).int == 2 && JSONValue.number("2.5").int == nil)
        #expect(JSONValue.number("1e999").double == nil && JSONValue.number("1e999").int == nil)
    }

    @Test func whatIsNotJSONIsRefusedWithWhereAndWhy() {
        let refused = ["", "{", "[1,]", "{\"a\" 1}", "01", "1.", "-", "1e", "tru", "\"a", "\"\\x\"", "\"\\u12\"", "\"\\u+123\"",
                       "\"a\u{1}\"", "1 2", "{\"a\":1,}", "[", String(repeating: "[", count: 65) + String(repeating: "]", count: 65)]
        for text in refused {
            #expect(throws: JSONSyntaxError.self, "\(text)") { try JSONValue(parsing: Array(text.utf8)) }
        }
        #expect(throws: JSONSyntaxError.self) { try JSONValue(parsing: [0x22, 0xFF, 0x22]) }
        do {
            _ = try JSONValue(parsing: Array(#"{"a": [1, 2,]}"#.utf8))
        } catch {
            #expect(error.description == "not a JSON value at byte 12")
        }
        #expect(throws: Never.self) { try JSONValue(parsing: Array((String(repeating: "[", count: 64) + String(repeating: "]", count: 64)).utf8)) }
    }

    @Test func aValueOfTheWrongKindIsADecodingError() {
        #expect(throws: DecodingError.self) { try JSONReader().value(Sample.Inner.self, from: Array(#"{"name": 1, "counts": {}}"#.utf8)) }
        #expect(throws: DecodingError.self) { try JSONReader().value(Sample.Inner.self, from: Array(#"{"counts": {}}"#.utf8)) }
        #expect(throws: DecodingError.self) { try JSONReader().value([UInt8].self, from: Array("[256]".utf8)) }
        #expect(throws: DecodingError.self) { try JSONReader().value([Int].self, from: Array("[1.5]".utf8)) }
    }
}
