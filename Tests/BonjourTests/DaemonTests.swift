import Dispatch
import Foundation
import Testing
import Bonjour

/// avahi's dns_sd library reads DBUS_SYSTEM_BUS_ADDRESS each time it connects to the daemon, so a
/// test can point it at a bus that does not exist (no daemon, whatever the host runs) or at the
/// system bus of a lab namespace. Tests that change it run one at a time.
func withSystemBus<T>(_ address: String, _ body: () throws -> T) rethrows -> T {
    let previous = ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"]
    setenv("DBUS_SYSTEM_BUS_ADDRESS", address, 1)
    defer {
        if let previous { setenv("DBUS_SYSTEM_BUS_ADDRESS", previous, 1) } else { unsetenv("DBUS_SYSTEM_BUS_ADDRESS") }
    }
    return try body()
}

/// Runs `body` on another thread and fails instead of hanging if it takes longer than `seconds`.
func withinSeconds<T: Sendable>(_ seconds: Int, _ body: @escaping @Sendable () -> T) -> T? {
    let done = DispatchSemaphore(value: 0)
    let box = ResultBox<T>()
    DispatchQueue.global().async {
        box.set(body())
        done.signal()
    }
    guard done.wait(timeout: .now() + .seconds(seconds)) == .success else { return nil }
    return box.get()
}

final class ResultBox<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: T?
    func set(_ v: T) { lock.withLock { value = v } }
    func get() -> T? { lock.withLock { value } }
}

@Suite("dns_sd against a daemon", .serialized)
struct DaemonTests {
    static let noBus = "unix:path=/nonexistent/jambridge-test/system_bus_socket"

    @Test func advertiserWithoutDaemonThrows() {
        let outcome: Result<Void, BonjourError>? = withSystemBus(Self.noBus) {
            withinSeconds(20) {
                let queue = DispatchQueue(label: "test.advertiser")
                do throws(BonjourError) {
                    let ad = try BonjourAdvertiser(name: "Studio Rack", port: 5004, queue: queue) { _ in }
                    ad.cancel()
                    return .success(())
                } catch {
                    return .failure(error)
                }
            }
        }
        guard let outcome else { Issue.record("BonjourAdvertiser.init hung without a daemon"); return }
        guard case .failure(let error) = outcome else { Issue.record("advertised without a daemon"); return }
        #expect(error.code == -65537 || error.code == -65563)
        #expect(error.description.contains("cannot advertise 'Studio Rack': the avahi daemon is not running"))
    }

    @Test func browserWithoutDaemonThrows() {
        let outcome: Result<Void, BonjourError>? = withSystemBus(Self.noBus) {
            withinSeconds(20) {
                do throws(BonjourError) {
                    let browser = try BonjourBrowser(queue: DispatchQueue(label: "test.browser")) { _ in }
                    browser.cancel()
                    return .success(())
                } catch {
                    return .failure(error)
                }
            }
        }
        guard case .failure(let error)? = outcome else { Issue.record("no error, or hung"); return }
        #expect(error.description.contains("the avahi daemon is not running"))
    }

    @Test func invalidArgumentsThrowBeforeTalkingToTheDaemon() {
        let queue = DispatchQueue(label: "test.invalid")
        let long = String(repeating: "é", count: 32)  // 64 bytes of UTF-8
        #expect(throws: BonjourError.self) { try BonjourAdvertiser(name: long, port: 5004, queue: queue) { _ in } }
        #expect(throws: BonjourError.self) { try BonjourAdvertiser(name: "ok", port: 0, queue: queue) { _ in } }
        do {
            _ = try BonjourAdvertiser(name: long, port: 5004, queue: queue) { _ in }
        } catch {
            #expect(error.code == -65540)
            #expect(error.description.contains("63 bytes"))
        }
    }
}
