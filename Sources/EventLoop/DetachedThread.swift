#if canImport(Glibc)
import CEventLoop
import Glibc
#endif

/// Starts plain POSIX threads: the loops' own, and short helpers for blocking work such as
/// joining loops.
public enum DetachedThread {
    /// Runs `body` on a new thread and returns its handle (joinable).
    @discardableResult
    public static func start(_ body: @escaping @Sendable () -> Void) -> pthread_t {
        let box = Unmanaged.passRetained(ThreadBody(body))
        var tid = pthread_t()
        let rc = pthread_create(&tid, nil, { argument in
            guard let argument else { return nil }
            Unmanaged<ThreadBody>.fromOpaque(argument).takeRetainedValue().run()
            return nil
        }, box.toOpaque())
        precondition(rc == 0, "pthread_create failed: \(rc)")
        return tid
    }

    /// Runs `body` on a new thread that cleans up after itself.
    public static func detach(_ body: @escaping @Sendable () -> Void) {
        pthread_detach(start(body))
    }
}

private final class ThreadBody: Sendable {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}
