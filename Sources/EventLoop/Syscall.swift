#if canImport(Glibc)
    import CEventLoop
    import Glibc
#endif

/// The system-call helpers other targets use instead of writing their own `EINTR` loops.
package enum Syscall {
    /// Calls `body` again while it fails with `EINTR`, and returns its first other result.
    ///
    /// A failure (a negative result) leaves `errno` as the call set it, for the caller to read
    /// right away. Not for `close`, which must not be retried on Linux (``Socket/close(_:)``).
    @inline(__always)
    package static func retryingInterrupts<T: FixedWidthInteger>(_ body: () -> T) -> T {
        while true {
            let result = body()
            if result >= 0 || errno != EINTR { return result }
        }
    }

    /// Runs a call that succeeds with a result of 0 or more, retrying `EINTR`; any other
    /// failure throws ``IOError`` naming the call.
    @inline(__always)
    package static func call<T: FixedWidthInteger>(
        _ name: @autoclosure () -> String,
        _ body: () -> T
    ) throws(IOError) -> T {
        try syscall(name(), body)
    }
}

/// Runs one system call, the single place that interprets `errno`.
///
/// `EINTR` is retried; `EAGAIN`/`EWOULDBLOCK` becomes `.wouldBlock` when `blocking` is false;
/// any other failure throws ``IOError`` naming the call.
@inline(__always)
func syscall<T: FixedWidthInteger>(
    blocking: Bool,
    _ name: @autoclosure () -> String,
    _ body: () -> T
) throws(IOError) -> IOResult<T> {
    let result = Syscall.retryingInterrupts(body)
    if result >= 0 { return .processed(result) }
    let code = errno
    if code == EAGAIN && !blocking { return .wouldBlock }
    throw IOError(errnoCode: code, reason: name())
}

/// A system call that cannot block: returns its result or throws.
@inline(__always)
func syscall<T: FixedWidthInteger>(_ name: @autoclosure () -> String, _ body: () -> T) throws(IOError) -> T {
    switch try syscall(blocking: true, name(), body) {
    case .processed(let value): return value
    case .wouldBlock: fatalError("unreachable: blocking call reported EAGAIN")
    }
}
