import EventLoop

#if canImport(Glibc)
    import Glibc
#endif

/// Runs tests that open a thousand connections at once one at a time across every suite
/// (the suites run in parallel on a 2-core machine), through an exclusive `flock`.
package enum HeavyLoad {
    package static func exclusive<T>(_ body: () async throws -> T) async throws -> T {
        let fd = open("/tmp/textgateway-heavy-tests.lock", O_CREAT | O_RDWR | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return try await body() }
        defer { close(fd) }
        // Waiting for the lock blocks: not on one of Swift's shared threads.
        _ = await DetachedThread.run { Syscall.retryingInterrupts { flock(fd, LOCK_EX) } }
        defer { flock(fd, LOCK_UN) }
        return try await body()
    }
}
