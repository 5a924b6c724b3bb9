import MIDI
import Testing

@Suite struct ExactWidthTests {
    @Test func everyValueInRangeIsAcceptedAndNothingElse() {
        for raw in -1...300 {
            #expect((UInt4(raw) != nil) == (0...15).contains(raw))
            #expect((UInt7(raw) != nil) == (0...127).contains(raw))
            #expect(UInt7(raw).map { Int($0.value) } ?? raw == raw)
        }
        #expect(UInt14(16383)?.value == 16383)
        #expect(UInt14(16384) == nil)
        #expect(UInt14(-1) == nil)
    }

    @Test func fourteenBitValuesSplitIntoWireBytesAndBack() {
        for raw in stride(from: 0, through: 0x3FFF, by: 1) {
            let value = UInt14(masking: UInt16(raw))
            #expect(UInt14(lsb: value.lsb, msb: value.msb) == value)
        }
        #expect(UInt14.center.msb.value == 64 && UInt14.center.lsb.value == 0)
    }

    @Test func clampingAndMasking() {
        #expect(UInt7(clamping: 500).value == 127)
        #expect(UInt7(clamping: -3).value == 0)
        #expect(UInt7(masking: 0xFF).value == 0x7F)
        #expect(UInt4(masking: 0x9C).value == 0x0C)
        #expect(UInt14(clamping: 99_999).value == 16383)
    }
}

@Suite struct NoteNameTests {
    @Test func everyNoteNameParsesBackToItsNumber() {
        for n in 0...127 {
            let note = UInt7(masking: UInt8(n))
            #expect(NoteName.parse(NoteName.name(of: note)) == note)
        }
        #expect(NoteName.name(of: UInt7(masking: 60)) == "C4")
        #expect(NoteName.name(of: UInt7(masking: 0)) == "C-1")
        #expect(NoteName.name(of: UInt7(masking: 127)) == "G9")
    }

    @Test func flatsSharpsAndCase() {
        #expect(NoteName.parse("Db4")?.value == 61)
        #expect(NoteName.parse("c#4")?.value == 61)
        #expect(NoteName.parse("Bb3")?.value == 58)
        #expect(NoteName.parse("a4")?.value == 69)
    }

    @Test(arguments: ["H4", "C10", "G#9", "", "C", "Cb-1", "C+4", "4", "C4 ", "C##4", "x"])
    func junkIsNotANote(_ text: String) {
        #expect(NoteName.parse(text) == nil)
    }
}
