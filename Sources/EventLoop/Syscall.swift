#if canImport(Glibc)
import CEventLoop
import Glibc
#endif

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
    while true {
        let result = body()
        if result >= 0 { return .processed(result) }
        let code = errno
        switch code {
        case EINTR:
            continue
        case EAGAIN where !blocking:
            return .wouldBlock
        default:
            throw IOError(errnoCode: code, reason: name())
        }
    }
}

/// A system call that cannot block: returns its result or throws.
@inline(__always)
func syscall<T: FixedWidthInteger>(_ name: @autoclosure () -> String, _ body: () -> T) throws(IOError) -> T {
    switch try syscall(blocking: true, name(), body) {
    case .processed(let value): return value
    case .wouldBlock: fatalError("unreachable: blocking call reported EAGAIN")
    }
}
