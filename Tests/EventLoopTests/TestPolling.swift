import EventLoop
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Polls `condition` until it holds or `seconds` pass, for a thread that must block (work on a
/// pool thread), which cannot await TestSupport's `eventually`: yields the CPU between looks.
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
