import CDNSSD
import Dispatch
import Synchronization

/// Advertises one service (default type "_apple-midi._udp") until cancelled.
public final class BonjourAdvertiser: Sendable {
    private let driver: ServiceRefDriver
    private let state: AdvertiserState

    /// Starts advertising `name` on `port` on every interface avahi-daemon serves. dns_sd work and
    /// `onRegistered` run on `queue` (serial, owned by the caller). `onRegistered` receives the
    /// name actually registered (avahi renames on a conflict, e.g. "Studio Rack #2") or a later
    /// failure; it may run again if avahi re-registers. Throws when avahi-daemon is unreachable or
    /// the name/type is invalid (an empty name lets avahi choose the host's name).
    public init(
        name: String,
        port: UInt16,
        type: String = "_apple-midi._udp",
        queue: DispatchQueue,
        onRegistered: @escaping @Sendable (Result<String, BonjourError>) -> Void
    ) throws(BonjourError) {
        let operation = "advertise '\(name)'"
        // DNS-SD instance names are one DNS label: at most 63 bytes of UTF-8.
        guard name.utf8.count <= 63, !name.utf8.contains(0), port != 0, !type.isEmpty else {
            throw BonjourError(code: dnssdBadParam, operation: operation)
        }
        let state = AdvertiserState(operation: operation, onRegistered: onRegistered)
        self.state = state
        self.driver = try ServiceRefDriver(
            queue: queue, context: state, operation: operation,
            start: { ref, context in
                DNSServiceRegister(
                    ref, 0, 0, name, type, nil, nil,
                    port.bigEndian,  // dns_sd takes the port in network byte order
                    0, nil, cRegisterReply, context)
            },
            onFailure: { error in state.deliver(.failure(error)) })
    }

    /// Withdraws the advertisement; no `onRegistered` call starts after this. Safe to call twice.
    public func cancel() {
        state.cancelled.store(true, ordering: .relaxed)
        driver.cancel()
    }

    deinit {
        cancel()
    }
}

/// The context of a registration's C callback.
final class AdvertiserState: Sendable {
    let operation: String
    let onRegistered: @Sendable (Result<String, BonjourError>) -> Void
    let cancelled = Atomic<Bool>(false)

    init(operation: String, onRegistered: @escaping @Sendable (Result<String, BonjourError>) -> Void) {
        self.operation = operation
        self.onRegistered = onRegistered
    }

    func deliver(_ result: Result<String, BonjourError>) {
        guard !cancelled.load(ordering: .relaxed) else { return }
        onRegistered(result)
    }
}

/// DNSServiceRegisterReply; runs inside DNSServiceProcessResult on the advertiser's queue.
private let cRegisterReply: DNSServiceRegisterReply = { _, _, errorCode, name, _, _, context in
    guard let context else { return }
    let state = Unmanaged<AdvertiserState>.fromOpaque(context).takeUnretainedValue()
    if errorCode == dnssdNoError {
        state.deliver(.success(string(name)))
    } else {
        state.deliver(.failure(BonjourError(code: errorCode, operation: state.operation)))
    }
}
