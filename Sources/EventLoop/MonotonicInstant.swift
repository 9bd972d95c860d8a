#if canImport(Glibc)
    import CEventLoop
    import Glibc
#endif

/// A point on the monotonic clock, in nanoseconds. Used for every deadline.
public struct MonotonicInstant: Comparable, Hashable, Sendable {
    /// Nanoseconds since an unspecified start (boot).
    public var nanoseconds: UInt64

    /// Creates an instant from raw nanoseconds.
    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    /// The current monotonic time.
    @inline(__always)
    public static func now() -> MonotonicInstant {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return MonotonicInstant(nanoseconds: UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec))
    }

    /// This instant moved forward by `duration` (negative durations count as zero).
    public func advanced(by duration: Duration) -> MonotonicInstant {
        MonotonicInstant(nanoseconds: nanoseconds &+ duration.nanosecondsClamped)
    }

    /// Time from `self` until `other`, zero if `other` is earlier.
    public func nanoseconds(until other: MonotonicInstant) -> UInt64 {
        other.nanoseconds > nanoseconds ? other.nanoseconds - nanoseconds : 0
    }

    @inlinable public static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool {
        lhs.nanoseconds < rhs.nanoseconds
    }
}

extension Duration {
    /// Whole nanoseconds, negative values clamped to zero and huge values to `UInt64.max / 2`.
    public var nanosecondsClamped: UInt64 {
        let (seconds, attoseconds) = components
        if seconds < 0 { return 0 }
        if seconds > 1_000_000_000 { return UInt64.max / 2 }
        return UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
    }
}
