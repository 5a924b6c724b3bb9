import CKitLibraries

/// libsndfile, libsamplerate and libxml2, loaded when a kit from disk first needs them (CKitLibraries: a daemon that
/// reads none maps none of them, issue 34). Each takes the caller's own error for a library that cannot be loaded,
/// made from the reason ("cannot load libsndfile.so.1 (...)").
enum KitLibraries {
    static func sndfile<Failure: Error>(orElse failure: (String) -> Failure) throws(Failure) -> jambridge_sndfile_calls {
        try loaded(jambridge_load_sndfile, orElse: failure)
    }

    static func samplerate<Failure: Error>(orElse failure: (String) -> Failure) throws(Failure) -> jambridge_samplerate_calls {
        try loaded(jambridge_load_samplerate, orElse: failure)
    }

    static func libxml2<Failure: Error>(orElse failure: (String) -> Failure) throws(Failure) -> jambridge_libxml2_calls {
        try loaded(jambridge_load_libxml2, orElse: failure)
    }

    private static func loaded<Calls, Failure: Error>(_ load: (UnsafeMutablePointer<UnsafePointer<CChar>?>) -> UnsafePointer<Calls>?,
                                                      orElse failure: (String) -> Failure) throws(Failure) -> Calls {
        var reason: UnsafePointer<CChar>?
        guard let calls = load(&reason) else { throw failure(reason.map { String(cString: $0) } ?? "cannot be loaded") }
        return calls.pointee
    }
}
