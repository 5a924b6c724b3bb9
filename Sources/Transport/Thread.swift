#if canImport(Glibc)
import Glibc
#endif

/// Starts a POSIX thread running `body`: the thread handle, or the error pthread_create gave. Dispatch's threads
/// are a pool's; the reader and clock threads need one each, for as long as they run.
public func startThread(_ body: @escaping () -> Void) -> Result<pthread_t, TransportError> {
    final class Body {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }
    let context = Unmanaged.passRetained(Body(body)).toOpaque()
    var thread = pthread_t()
    let started = pthread_create(&thread, nil, { context in
        Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().run()
        return nil
    }, context)
    guard started == 0 else {
        Unmanaged<Body>.fromOpaque(context).release()
        return .failure(TransportError(operation: "start a thread", code: started))
    }
    return .success(thread)
}

/// Moves the calling thread to real-time scheduling (SCHED_FIFO at `priority`); returns 0, or the error number when
/// the system refuses (no CAP_SYS_NICE and no RLIMIT_RTPRIO allowance), and the thread stays as it was.
public func raiseToRealTimePriority(_ priority: Int32) -> Int32 {
    var parameters = sched_param(sched_priority: priority)
    return pthread_setschedparam(pthread_self(), SCHED_FIFO, &parameters)
}
