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

/// Silences avahi's "uses the Apple Bonjour compatibility layer" banner, once, before the first
/// dns_sd call (only if the environment does not already set AVAHI_COMPAT_NOWARN).
let silenceAvahiBanner: Void = {
    setenv("AVAHI_COMPAT_NOWARN", "1", 0)
}()

/// A DNSServiceRef that may cross threads; only touched on the driver's queue or while no
/// read source exists yet.
struct ServiceRefHandle: @unchecked Sendable {
    let ref: DNSServiceRef
}

/// Owns one DNSServiceRef, the Unmanaged context its C callback receives, and the
/// DispatchSourceRead that calls DNSServiceProcessResult on the caller's queue.
///
/// Teardown happens in the read source's cancel handler, which libdispatch runs on the queue
/// after any running event handler has returned: only there are the ref deallocated and the
/// context released, so a C callback never sees a freed context and cancel() may be called from
/// anywhere, including from inside one of this ref's own callbacks, any number of times.
final class ServiceRefDriver: @unchecked Sendable {  // DispatchSource is thread-safe
    private let source: DispatchSourceRead

    /// Starts a dns_sd operation. `start` gets the out-pointer for the ref and the context
    /// pointer to hand to the C call; on failure the context is released and a BonjourError
    /// describing `operation` is thrown. `onFailure` runs on `queue` if processing a result
    /// fails later (e.g. avahi-daemon went away); the driver has then already cancelled itself.
    init(
        queue: DispatchQueue,
        context: AnyObject,
        operation: String,
        start: (UnsafeMutablePointer<DNSServiceRef?>, UnsafeMutableRawPointer) -> DNSServiceErrorType,
        onFailure: @escaping @Sendable (BonjourError) -> Void
    ) throws(BonjourError) {
        _ = silenceAvahiBanner
        let unmanaged = Unmanaged.passRetained(context)
        var ref: DNSServiceRef? = nil
        let status = start(&ref, unmanaged.toOpaque())
        guard status == dnssdNoError, let ref else {
            if let ref { DNSServiceRefDeallocate(ref) }
            unmanaged.release()
            throw BonjourError(code: status == dnssdNoError ? dnssdUnknown : status,
                               operation: operation)
        }
        let fd = DNSServiceRefSockFD(ref)
        guard fd >= 0 else {
            DNSServiceRefDeallocate(ref)
            unmanaged.release()
            throw BonjourError(code: dnssdBadState, operation: operation)
        }
        let handle = ServiceRefHandle(ref: ref)
        let opaqueContext = UnsafeSendableRaw(pointer: unmanaged.toOpaque())
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        // The handler holds the source (to cancel it on failure); libdispatch drops the handlers once
        // the source is cancelled, which ends that cycle.
        source.setEventHandler {
            let status = DNSServiceProcessResult(handle.ref)
            if status != dnssdNoError {
                // The connection is gone; a readable-at-EOF fd would otherwise spin the queue.
                source.cancel()
                onFailure(BonjourError(code: status, operation: operation))
            }
        }
        source.setCancelHandler {
            DNSServiceRefDeallocate(handle.ref)
            Unmanaged<AnyObject>.fromOpaque(opaqueContext.pointer).release()
        }
        self.source = source
        source.activate()
    }

    /// Stops the operation; the ref and context are freed on the queue right after. Idempotent.
    func cancel() {
        source.cancel()
    }

    deinit {
        source.cancel()
    }
}

/// A raw pointer that is only dereferenced on the driver's queue.
struct UnsafeSendableRaw: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer
}

/// Whether a DNSServiceFlags value has kDNSServiceFlagsAdd (more results, or "added" for browse
/// and query results).
func hasAddFlag(_ flags: DNSServiceFlags) -> Bool {
    flags & DNSServiceFlags(kDNSServiceFlagsAdd) != 0
}

/// A C string from dns_sd, or "" when NULL.
func string(_ pointer: UnsafePointer<CChar>?) -> String {
    guard let pointer else { return "" }
    return String(cString: pointer)
}

/// dns_sd codes as DNSServiceErrorType (the header's anonymous enum imports as Int).
let dnssdNoError = DNSServiceErrorType(kDNSServiceErr_NoError)
let dnssdUnknown = DNSServiceErrorType(kDNSServiceErr_Unknown)
let dnssdBadParam = DNSServiceErrorType(kDNSServiceErr_BadParam)
let dnssdBadState = DNSServiceErrorType(kDNSServiceErr_BadState)
