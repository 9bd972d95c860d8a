import EventLoop
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Polls `condition` until it holds or `seconds` pass; these tests wait this way, never by
/// sleeping for a guessed time. The bound is generous: it is only reached when a test fails,
/// and CI runs every suite at once on two cores.
func eventually(within seconds: Int = 60, _ condition: () async -> Bool) async -> Bool {
    let deadline = MonotonicInstant.now().advanced(by: .seconds(seconds))
    while MonotonicInstant.now() < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return await condition()
}

/// The same for a thread that must block (work on a pool thread): yields the CPU between looks.
func blockingUntil(within seconds: Int = 60, _ condition: () -> Bool) -> Bool {
    let deadline = MonotonicInstant.now().advanced(by: .seconds(seconds))
    while MonotonicInstant.now() < deadline {
        if condition() { return true }
        sched_yield()
    }
    return condition()
}

/// A value the tasks and threads of a test share (a local `Mutex` or `Atomic` would be
/// captured by reference, which escaping closures may not).
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { mutex = Mutex(value) }

    var value: Value { mutex.withLock { $0 } }

    @discardableResult
    func update<R: Sendable>(_ body: (inout Value) -> R) -> R {
        mutex.withLock { body(&$0) }
    }
}
