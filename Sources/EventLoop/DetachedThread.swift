#if canImport(Glibc)
    package import CEventLoop
    import Glibc
#endif

/// Starts plain POSIX threads: the loops' own, and short helpers for blocking work such as
/// joining loops.
package enum DetachedThread {
    /// Runs `body` on a new thread and returns its handle (joinable).
    @discardableResult
    package static func start(_ body: @escaping @Sendable () -> Void) -> pthread_t {
        let box = Unmanaged.passRetained(ThreadBody(body))
        var tid = pthread_t()
        let rc = pthread_create(
            &tid, nil,
            { argument in
                guard let argument else { return nil }
                Unmanaged<ThreadBody>.fromOpaque(argument).takeRetainedValue().run()
                return nil
            }, box.toOpaque())
        precondition(rc == 0, "pthread_create failed: \(rc)")
        return tid
    }

    /// Runs `body` on a new thread that cleans up after itself.
    package static func detach(_ body: @escaping @Sendable () -> Void) {
        pthread_detach(start(body))
    }

    /// Runs blocking `body` (joining threads, waiting on a lock or a pipe) on a new thread of
    /// its own and returns its result, so no thread of Swift's small shared pool is held.
    ///
    /// The calling task's cancellation does not interrupt `body`. The caller must not need a
    /// thread that `body` waits for to end: a task running on an event loop that `body`
    /// stops could never be resumed.
    package static func run<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            detach {
                do throws(E) {
                    continuation.resume(returning: .success(try body()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }
}

private final class ThreadBody: Sendable {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}
