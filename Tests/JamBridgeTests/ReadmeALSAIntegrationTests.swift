import Foundation
import Testing

/// README.md's shell blocks whose route files have ALSA endpoints (`ReadmeBlock.needsALSA`), run as written where there
/// is an ALSA sequencer (scripts/alsa-tests.sh: in the VM), in a copy of the repository's `routes/` so that what they
/// write stays out of the checkout, in namespaces of their own (`privateShell`). The daemons they leave running end
/// with the shell.
@Suite struct ReadmeALSAIntegrationTests {
    private func runBlock(_ first: String) throws -> (status: Int32, out: String, err: String) {
        let block = try #require(try readmeShellBlocks()[first], "README has no block '\(first)'")
        let dir = try temporaryDirectory()
        try FileManager.default.copyItem(at: repositoryRoot.appendingPathComponent("routes"), to: dir.appendingPathComponent("routes"))
        return try privateShell("set -e\n" + block, in: dir, seconds: 120)
    }

    /// "A jam": typed at once after `run ... &`, the commands wait for the daemon, which leads at 96 BPM.
    @Test func theJamBlockLeadsAt96() throws {
        let result = try runBlock("jambridge run routes/jam.yaml &")
        #expect(result.status == 0, "\(result)")
        #expect(result.out.contains("jam: master, clock master ") && result.out.contains("96.0 BPM"), "\(result)")
    }

    /// "Drums": the render says what it wrote, the daemon starts and takes the style and the level.
    @Test func theDrumsBlockRendersStartsAndChangesStyleAndLevel() throws {
        let result = try runBlock("jambridge render routes/drums.yaml --bars 8 --activity 0-127 --out drums.wav  # hear it offline (24-bit WAV)")
        #expect(result.status == 0, "\(result)")
        #expect(result.out.contains("drums.wav (24-bit PCM WAV, 48 kHz stereo): 8 bars of rock"), "\(result)")
        #expect(result.out.contains("style funk from the next bar line"), "\(result)")
    }
}
