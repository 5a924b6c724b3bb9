import CDNSSD
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Browses and resolves services of a type; reports found (resolved, with addresses) and lost.
///
/// Resolution is DNSServiceBrowse -> DNSServiceResolve (host name and port) -> DNSServiceQueryRecord
/// for the host's A and AAAA records. avahi's compatibility library (0.8) has no
/// DNSServiceGetAddrInfo (the symbol is not exported), and getaddrinfo() only knows ".local" names
/// when nss-mdns is installed (and may then block); DNSServiceQueryRecord goes through the avahi
/// daemon like browsing does, so it works wherever browsing works (verified in network namespaces
/// without nss-mdns). After the first address answers, the browser waits `settleDelay` for more
/// (e.g. AAAA after A) and reports once; if no address answers within `addressTimeout`, the service
/// is reported with no addresses, so it still shows up by name.
public final class BonjourBrowser: Sendable {
    private let core: BrowserCore

    /// Starts browsing for `type` in the default domain on all interfaces. dns_sd work and
    /// `onEvent` run on `queue` (serial, owned by the caller). Throws when avahi-daemon is
    /// unreachable or the type is invalid.
    public init(
        type: String = "_apple-midi._udp",
        queue: DispatchQueue,
        onEvent: @escaping @Sendable (BrowseEvent) -> Void
    ) throws(BonjourError) {
        let core = BrowserCore(type: type, queue: queue, onEvent: onEvent)
        try core.start()
        self.core = core
    }

    /// Stops browsing and every pending resolution; no `onEvent` call starts after this (when
    /// called on the queue; from another thread one already running may finish). Safe to call twice.
    public func cancel() {
        core.cancel()
    }

    deinit {
        core.cancel()
    }
}

/// Identifies one announcement: the same name may be seen on several interfaces.
struct InstanceKey: Hashable, Sendable {
    var name: String
    var type: String
    var domain: String
    var interfaceIndex: UInt32
}

/// The resolution state of one announced instance (queue-confined).
struct Instance {
    /// Adds minus removes: avahi reports an instance once per protocol (IPv4/IPv6).
    var count = 0
    /// Bumped for each resolution attempt, so late callbacks of an old one are ignored.
    var generation = 0
    var resolver: ServiceRefDriver?
    var queries: [ServiceRefDriver] = []
    var timer: DispatchSourceTimer?
    var host = ""
    var port: UInt16 = 0
    var addresses: [String] = []
    var reported: DiscoveredService?
}

/// Context of a resolve or address query callback: which instance and which attempt.
final class LookupContext: Sendable {
    let core: BrowserCore
    let key: InstanceKey
    let generation: Int
    init(core: BrowserCore, key: InstanceKey, generation: Int) {
        self.core = core
        self.key = key
        self.generation = generation
    }
}

/// Everything the browser does; mutable state is touched only on `queue`.
final class BrowserCore: @unchecked Sendable {
    let type: String
    let queue: DispatchQueue
    let onEvent: @Sendable (BrowseEvent) -> Void
    let cancelled = Atomic<Bool>(false)
    /// How long to collect more addresses after the first one.
    let settleDelay: DispatchTimeInterval = .milliseconds(250)
    /// How long to wait for any address before reporting the service without one.
    let addressTimeout: DispatchTimeInterval = .seconds(3)

    // Queue-confined state.
    private let browser = Mutex<ServiceRefDriver?>(nil)
    private var instances: [InstanceKey: Instance] = [:]

    init(type: String, queue: DispatchQueue, onEvent: @escaping @Sendable (BrowseEvent) -> Void) {
        self.type = type
        self.queue = queue
        self.onEvent = onEvent
    }

    func start() throws(BonjourError) {
        let type = self.type
        let driver = try ServiceRefDriver(
            queue: queue, context: self, operation: "look for \(type) sessions",
            start: { ref, context in DNSServiceBrowse(ref, 0, 0, type, nil, cBrowseReply, context) },
            onFailure: { _ in })  // Known limit: the daemon going away ends browsing silently.
        browser.withLock { $0 = driver }
    }

    func cancel() {
        guard !cancelled.exchange(true, ordering: .relaxed) else { return }
        browser.withLock { $0?.cancel() }
        // Resolutions live on the queue; tear them down there.
        queue.async { self.stopAll() }
    }

    private func stopAll() {
        for key in Array(instances.keys) { stopLookups(key) }
        instances.removeAll()
        browser.withLock { $0 = nil }
    }

    private func emit(_ event: BrowseEvent) {
        guard !cancelled.load(ordering: .relaxed) else { return }
        onEvent(event)
    }

    // MARK: Browse

    func browseReply(flags: DNSServiceFlags, key: InstanceKey) {
        guard !cancelled.load(ordering: .relaxed) else { return }
        if hasAddFlag(flags) {
            var instance = instances[key] ?? Instance()
            instance.count += 1
            instances[key] = instance
            if instance.count == 1 { startResolve(key) }
        } else {
            guard var instance = instances[key] else { return }
            instance.count -= 1
            if instance.count > 0 {
                instances[key] = instance
                return
            }
            stopLookups(key)
            instances[key] = nil
            let stillReported = instances.contains { $0.key.name == key.name && $0.value.reported != nil }
            if instance.reported != nil && !stillReported {
                emit(.lost(name: key.name))
            }
        }
    }

    // MARK: Resolve

    private func startResolve(_ key: InstanceKey) {
        guard var instance = instances[key] else { return }
        instance.generation += 1
        let context = LookupContext(core: self, key: key, generation: instance.generation)
        instance.resolver = try? ServiceRefDriver(
            queue: queue, context: context, operation: "find '\(key.name)'",
            start: { ref, context in
                DNSServiceResolve(ref, 0, key.interfaceIndex, key.name, key.type, key.domain, cResolveReply, context)
            },
            onFailure: { _ in })
        instances[key] = instance
    }

    func resolveReply(_ context: LookupContext, errorCode: DNSServiceErrorType, host: String, networkPort: UInt16) {
        guard !cancelled.load(ordering: .relaxed), var instance = instances[context.key],
              instance.generation == context.generation, instance.resolver != nil
        else { return }
        // One answer is enough: stop resolving (the ref is freed after this callback returns).
        instance.resolver?.cancel()
        instance.resolver = nil
        guard errorCode == dnssdNoError, !host.isEmpty else {
            instances[context.key] = instance
            return
        }
        instance.host = host.hasSuffix(".") ? String(host.dropLast()) : host
        instance.port = UInt16(bigEndian: networkPort)  // dns_sd gives it in network byte order
        instance.addresses = []
        for rrtype in [kDNSServiceType_A, kDNSServiceType_AAAA] {
            let queryHost = instance.host
            if let query = try? ServiceRefDriver(
                queue: queue, context: context, operation: "find the address of \(queryHost)",
                start: { ref, ctx in
                    DNSServiceQueryRecord(ref, 0, context.key.interfaceIndex, queryHost,
                                          UInt16(rrtype), UInt16(kDNSServiceClass_IN), cQueryReply, ctx)
                },
                onFailure: { _ in })
            {
                instance.queries.append(query)
            }
        }
        instance.timer?.cancel()
        instance.timer = makeTimer(after: addressTimeout, context)
        instances[context.key] = instance
    }

    // MARK: Addresses

    func queryReply(_ context: LookupContext, flags: DNSServiceFlags, errorCode: DNSServiceErrorType,
                    rrtype: UInt16, rdata: UnsafeRawBufferPointer) {
        guard !cancelled.load(ordering: .relaxed), errorCode == dnssdNoError, hasAddFlag(flags),
              var instance = instances[context.key], instance.generation == context.generation,
              !instance.queries.isEmpty,
              let numeric = numericAddress(rrtype: rrtype, rdata: rdata)
        else { return }
        let address = scoped(numeric, interfaceIndex: context.key.interfaceIndex)
        guard !instance.addresses.contains(address) else { return }
        let first = instance.addresses.isEmpty
        instance.addresses.append(address)
        if first {
            instance.timer?.cancel()
            instance.timer = makeTimer(after: settleDelay, context)
        }
        instances[context.key] = instance
    }

    private func makeTimer(after delay: DispatchTimeInterval, _ context: LookupContext) -> DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + delay)
        timer.setEventHandler { [weak self] in self?.report(context) }
        timer.activate()
        return timer
    }

    /// Reports the instance with what is known now and stops its address queries.
    private func report(_ context: LookupContext) {
        guard !cancelled.load(ordering: .relaxed), var instance = instances[context.key],
              instance.generation == context.generation
        else { return }
        for query in instance.queries { query.cancel() }
        instance.queries = []
        instance.timer?.cancel()
        instance.timer = nil
        let ipv4 = instance.addresses.filter { !$0.contains(":") }
        let ipv6 = instance.addresses.filter { $0.contains(":") }
        let service = DiscoveredService(
            name: context.key.name, host: instance.host, port: instance.port,
            addresses: ipv4 + ipv6, interfaceIndex: context.key.interfaceIndex)
        let changed = instance.reported != service
        instance.reported = service
        instances[context.key] = instance
        if changed { emit(.found(service)) }
    }

    private func stopLookups(_ key: InstanceKey) {
        guard var instance = instances[key] else { return }
        instance.resolver?.cancel()
        instance.resolver = nil
        for query in instance.queries { query.cancel() }
        instance.queries = []
        instance.timer?.cancel()
        instance.timer = nil
        instances[key] = instance
    }
}

/// "10.77.0.1" / "fe80::1" from an A or AAAA record's rdata; nil for anything malformed.
func numericAddress(rrtype: UInt16, rdata: UnsafeRawBufferPointer) -> String? {
    let family: Int32
    switch (Int(rrtype), rdata.count) {
    case (kDNSServiceType_A, 4): family = AF_INET
    case (kDNSServiceType_AAAA, 16): family = AF_INET6
    default: return nil
    }
    guard let base = rdata.baseAddress else { return nil }
    var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
    guard inet_ntop(family, base, &text, socklen_t(text.count)) != nil else { return nil }
    let address = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return address
}

/// Adds the zone ("%eth0") to an IPv6 link-local address, which is unusable without it.
func scoped(_ address: String, interfaceIndex: UInt32) -> String {
    guard address.lowercased().hasPrefix("fe80:"), !address.contains("%"), interfaceIndex > 0 else { return address }
    var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
    guard if_indextoname(interfaceIndex, &name) != nil else { return address }
    return address + "%" + String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

// The C callbacks: plain non-capturing closures (never @MainActor), run inside
// DNSServiceProcessResult on the browser's queue.

private let cBrowseReply: DNSServiceBrowseReply = { _, flags, interfaceIndex, errorCode, name, type, domain, context in
    guard let context, errorCode == dnssdNoError, let name else { return }
    let core = Unmanaged<BrowserCore>.fromOpaque(context).takeUnretainedValue()
    let key = InstanceKey(name: String(cString: name), type: string(type), domain: string(domain),
                          interfaceIndex: interfaceIndex)
    core.browseReply(flags: flags, key: key)
}

private let cResolveReply: DNSServiceResolveReply = { _, _, _, errorCode, _, host, port, _, _, context in
    guard let context else { return }
    let lookup = Unmanaged<LookupContext>.fromOpaque(context).takeUnretainedValue()
    lookup.core.resolveReply(lookup, errorCode: errorCode, host: string(host), networkPort: port)
}

private let cQueryReply: DNSServiceQueryRecordReply = { _, flags, _, errorCode, _, rrtype, _, rdlen, rdata, _, context in
    guard let context else { return }
    let lookup = Unmanaged<LookupContext>.fromOpaque(context).takeUnretainedValue()
    let bytes = UnsafeRawBufferPointer(start: rdata, count: rdata == nil ? 0 : Int(rdlen))
    lookup.core.queryReply(lookup, flags: flags, errorCode: errorCode, rrtype: rrtype, rdata: bytes)
}
