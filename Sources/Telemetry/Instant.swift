#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A point in wall-clock time: seconds since the Unix epoch (UTC).
///
/// Rate limits take the time as a parameter, so tests drive it; the gateway passes ``now``.
/// Wall-clock time is what a daily quota needs (it resets at UTC midnight); a clock step
/// backwards is tolerated by the limiters, never trusted to undo counts.
package struct Instant: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Seconds since 1970-01-01T00:00:00Z, always finite and within ±10¹⁵.
    package let secondsSinceEpoch: Double

    /// The instant `secondsSinceEpoch` after the epoch. A value that is not finite counts as
    /// zero and one beyond ±10¹⁵ (some 30 million years) is clamped, so that arithmetic on
    /// instants never traps.
    package init(secondsSinceEpoch: Double) {
        let bound = 1e15
        self.secondsSinceEpoch = secondsSinceEpoch.isFinite ? min(max(secondsSinceEpoch, -bound), bound) : 0
    }

    /// The current wall-clock time (`CLOCK_REALTIME`).
    package static var now: Instant {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Instant(secondsSinceEpoch: Double(time.tv_sec) + Double(time.tv_nsec) / 1e9)
    }

    /// The instant `seconds` later (earlier, when negative).
    package func advanced(by seconds: Double) -> Instant {
        Instant(secondsSinceEpoch: secondsSinceEpoch + seconds)
    }

    /// The whole second this instant falls in (rounded down).
    package var wholeSeconds: Int64 { Int64(secondsSinceEpoch.rounded(.down)) }

    /// The UTC day this instant falls in, as days since the epoch.
    package var utcDay: Int64 { Int64((secondsSinceEpoch / 86_400).rounded(.down)) }

    /// Whole seconds from this instant until the next UTC midnight, at least 1.
    package var secondsUntilNextUTCDay: Int {
        let midnight = Double(utcDay + 1) * 86_400
        return max(1, Int((midnight - secondsSinceEpoch).rounded(.up)))
    }

    package static func < (lhs: Instant, rhs: Instant) -> Bool {
        lhs.secondsSinceEpoch < rhs.secondsSinceEpoch
    }

    package var description: String { "Instant(\(secondsSinceEpoch))" }
}
