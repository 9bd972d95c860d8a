#if canImport(Glibc)
    import CEventLoop
    import Glibc
#endif

/// A failed system call: the `errno` it left and the call that failed.
public struct IOError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The `errno` value of the failure.
    public let errnoCode: CInt
    /// The name of the failing call, e.g. `"accept4"`.
    public let reason: String

    /// Creates an error for `errnoCode` raised by `reason`.
    public init(errnoCode: CInt, reason: String) {
        self.errnoCode = errnoCode
        self.reason = reason
    }

    public var description: String {
        "\(reason) failed: \(String(cString: strerror(errnoCode))) (errno \(errnoCode))"
    }
}

/// The outcome of a non-blocking call: it either did its work or would have blocked.
public enum IOResult<Value> {
    case processed(Value)
    case wouldBlock
}

extension IOResult: Sendable where Value: Sendable {}
