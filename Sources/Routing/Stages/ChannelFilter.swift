import MIDI

/// Passes channel messages on the listed channels (`channels:`); system messages always pass.
public struct ChannelFilter: RouteStage {
    private let mask: UInt16

    /// A filter passing messages on `channels`.
    public init(channels: Set<UInt4>) {
        mask = channels.reduce(0) { $0 | 1 << UInt16($1.value) }
    }

    public func apply(_ message: inout MIDIMessage) -> Bool {
        guard let channel = message.channel else { return true }
        return mask & (1 << UInt16(channel.value)) != 0
    }
}
