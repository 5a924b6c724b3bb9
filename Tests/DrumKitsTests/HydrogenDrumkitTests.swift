import Drums
import DrumKits
import Foundation
import Testing

/// drumkit.xml in Hydrogen's three layouts, read without touching the samples; its mistakes located.
@Suite struct HydrogenDrumkitTests {
    private func parse(_ xml: String) throws -> (description: KitDescription, warnings: [KitWarning]) {
        try HydrogenDrumkit.parse(xml: Array(xml.utf8), file: "/kits/test/drumkit.xml")
    }

    private func mistakes(_ xml: String) -> [String] {
        do {
            _ = try parse(xml)
            return []
        } catch {
            guard case KitError.badDescription(let kit, let mistakes)? = error as? KitError else { return ["\(error)"] }
            #expect(kit == "/kits/test")
            return mistakes
        }
    }

    @Test func theCurrentLayout() throws {
        let (description, warnings) = try parse("""
            <?xml version="1.0" encoding="UTF-8"?>
            <drumkit_info xmlns="http://www.hydrogen-music.org/drumkit">
             <name>Test kit</name>
             <instrumentList>
              <instrument>
               <id>0</id><name>Kick</name><volume>0.5</volume><gain>2</gain><pan>-0.5</pan><pitchOffset>1</pitchOffset>
               <muteGroup>-1</muteGroup><midiOutNote>36</midiOutNote>
               <instrumentComponent>
                <component_id>0</component_id><gain>0.5</gain>
                <layer><filename>soft kick.wav</filename><min>0</min><max>0.5</max><gain>1</gain><pitch>0</pitch></layer>
                <layer><filename>hard.flac</filename><min>0.5</min><max>1</max><gain>1.5</gain><pitch>-2</pitch></layer>
               </instrumentComponent>
              </instrument>
              <instrument>
               <id>1</id><name>Hat</name><pan_L>1</pan_L><pan_R>0.5</pan_R><muteGroup>2</muteGroup>
               <instrumentComponent><layer><filename>/elsewhere/hat.aiff</filename></layer></instrumentComponent>
               <instrumentComponent><layer><filename>hat-room.wav</filename></layer></instrumentComponent>
              </instrument>
              <instrument><id>2</id><name>Empty slot</name><instrumentComponent/></instrument>
             </instrumentList>
            </drumkit_info>
            """)
        #expect(description == KitDescription(name: "Test kit", instruments: [
            .init(name: "Kick", note: 36, gain: 0.5, pan: -0.5, pitch: 1, layers: [
                .init(velocities: 0...0.5, file: "/kits/test/soft kick.wav"),
                .init(velocities: 0.5...1, gain: 1.5, pitch: -2, file: "/kits/test/hard.flac"),
            ]),
            .init(name: "Hat", pan: -0.5, chokeGroup: 2, layers: [.init(file: "/elsewhere/hat.aiff")]),
        ]))
        #expect(warnings == [.componentsLeftOut(kit: "/kits/test", instrument: "Hat", count: 1)])
    }

    @Test func theLegacyLayoutAndHydrogensPanPairs() throws {
        let (description, _) = try parse("""
            <drumkit_info><name>Old</name><instrumentList>
             <instrument><name>Snare</name><volume>0.8</volume><pan_L>0.44</pan_L><pan_R>1</pan_R><exclude/>
              <layer><filename>sn1.flac</filename><min>0</min><max>0.3</max><gain>1.5</gain></layer>
              <layer><filename>sn2.flac</filename><min>0.3</min><max>1</max><gain>1</gain></layer>
             </instrument>
             <instrument><name>Centre</name><pan_L>0.9</pan_L><pan_R>0.9</pan_R><layer><filename>c.wav</filename></layer></instrument>
             <instrument><name>One side</name><pan_L>0.5</pan_L><layer><filename>o.wav</filename></layer></instrument>
            </instrumentList></drumkit_info>
            """)
        #expect(description.instruments.map(\.name) == ["Snare", "Centre", "One side"])
        let snare = description.instruments[0]
        #expect(abs(snare.pan - 0.56) < 1e-6 && snare.gain == 0.8)
        #expect(snare.layers == [.init(velocities: 0...0.3, gain: 1.5, file: "/kits/test/sn1.flac"),
                                 .init(velocities: 0.3...1, file: "/kits/test/sn2.flac")])
        #expect(description.instruments[1].pan == 0 && description.instruments[2].pan == 0)
    }

    @Test func theOldestLayoutWithoutANameTakesTheFolders() throws {
        let (description, _) = try parse("""
            <drumkit_info><instrumentList>
             <instrument><id>0</id><filename>HardHse_K_02.flac</filename><name>Kick 1</name><volume>1</volume></instrument>
             <instrument><id>1</id><filename></filename><name>17</name></instrument>
            </instrumentList></drumkit_info>
            """)
        #expect(description == KitDescription(name: "test", instruments: [
            .init(name: "Kick 1", layers: [.init(file: "/kits/test/HardHse_K_02.flac")]),
        ]))
    }

    @Test func garbageIsNotXML() {
        #expect(mistakes("garbage") == ["/kits/test/drumkit.xml:1:1: not valid XML: Start tag expected, '<' not found"])
        #expect(mistakes("") == ["/kits/test/drumkit.xml:1:1: not valid XML: Document is empty"])
        #expect(mistakes("<drumkit_info>\n<name>x</nam>\n</drumkit_info>") == [
            "/kits/test/drumkit.xml:2:14: not valid XML: Opening and ending tag mismatch: name line 2 and nam",
        ])
        #expect(mistakes("<drumkit_info><instrumentList>") == [
            "/kits/test/drumkit.xml:1:31: not valid XML: Premature end of data in tag instrumentList line 1",
        ])
    }

    @Test func bytesThatAreNotUTF8() throws {
        // FoundationXML's XMLParser trapped on this one (the fuzzer's first find); libxml2 says what it is.
        let xml = Array("<drumkit_info><instrumentList><instrument><isMu".utf8) + [0xEB] + Array("ted/></instrument></instrumentList></drumkit_info>".utf8)
        #expect(throws: KitError.badDescription(kit: "/kits/test", mistakes: [
            "/kits/test/drumkit.xml:1:48: not valid XML: Input is not proper UTF-8, indicate encoding ! Bytes: 0xEB 0x74 0x65 0x64",
        ])) { try HydrogenDrumkit.parse(xml: xml, file: "/kits/test/drumkit.xml") }
    }

    @Test func notADrumkit() {
        #expect(mistakes("<song><name>x</name></song>") == [
            "/kits/test/drumkit.xml:1: the document is <song>, not <drumkit_info>: this is not a Hydrogen drumkit",
        ])
        #expect(mistakes("<drumkit_info><name>x</name></drumkit_info>") == [
            "/kits/test/drumkit.xml:1: <drumkit_info> has no <instrumentList>: a Hydrogen drumkit lists its instruments there",
        ])
    }

    @Test func everyBadValueIsLocated() {
        // Each on the line of the element at fault (libxml2 keeps no column for elements).
        #expect(mistakes("""
            <drumkit_info><instrumentList>
             <instrument><name>A</name>
              <volume>loud</volume>
              <pan>nan</pan>
              <layer><filename>a.wav</filename><min>0.8</min><max>0.2</max></layer>
              <layer><filename>b.wav</filename><gain>-1</gain><pitch>99</pitch></layer>
             </instrument>
             <instrument><name>B</name><muteGroup>one</muteGroup><filename>b.wav</filename></instrument>
            </instrumentList></drumkit_info>
            """) == [
            "/kits/test/drumkit.xml:3: <volume> is 'loud', not a volume (0 to 16)",
            "/kits/test/drumkit.xml:4: <pan> is 'nan', not a pan (-1 to 1)",
            "/kits/test/drumkit.xml:5: the layer's <min> velocity, 0.8, is above its <max>, 0.2",
            "/kits/test/drumkit.xml:6: <gain> is '-1', not a gain (0 to 16)",
            "/kits/test/drumkit.xml:6: <pitch> is '99', not a pitch in semitones (-48 to 48)",
            "/kits/test/drumkit.xml:8: <muteGroup> is 'one', not a whole number",
        ])
    }

    @Test func aFileOfSomeOtherKindIsRefusedUnread() throws {
        // A FIFO without a writer would make a read wait for ever.
        let directory = try temporaryDirectory()
        try run("mkfifo", [directory + "/drumkit.xml"])
        #expect(throws: KitError.badDescription(kit: directory, mistakes: ["\(directory)/drumkit.xml: cannot be read: it is not a regular file"])) {
            try HydrogenDrumkit.read(path: directory + "/drumkit.xml")
        }
        try FileManager.default.createDirectory(atPath: directory + "/sub/drumkit.xml", withIntermediateDirectories: true)
        #expect(throws: KitError.badDescription(kit: directory + "/sub", mistakes: ["\(directory)/sub/drumkit.xml: cannot be read: it is a directory"])) {
            try HydrogenDrumkit.read(path: directory + "/sub/drumkit.xml")
        }
    }
}
