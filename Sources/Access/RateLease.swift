/// A request's place under its key's concurrency limit, from ``RateLimiter/acquire(key:plan:now:)``.
///
/// Give it back with ``RateLimiter/finish(lease:plan:tokens:now:)`` when the request ends,
/// however it ends. Finishing is idempotent: a second finish of the same lease frees nothing,
/// so a copy of the value can never free someone else's slot. A lease never finished (a
/// fault) expires after the limiter's lease time to live instead of holding its slot forever.
package struct RateLease: Sendable, Hashable {
    /// The key the lease was taken for.
    package let key: String
    /// Unique per limiter; 0 for a lease that holds no slot (the plan has no concurrency limit).
    package let id: UInt64
    /// Tokens set aside against the daily quota when the lease was taken (a shared limiter's
    /// estimate), settled against the real count when it is finished; 0 for none.
    package let reservedTokens: Int
    /// The UTC day (days since the epoch) the lease's tokens count for.
    package let day: Int64
    /// Which limiter took the lease, so one that falls back to another finishes each lease
    /// where it was taken.
    let origin: Origin

    /// The limiters of a ``SharedRateLimiter``.
    enum Origin: Sendable, Hashable {
        case local
        case shared
    }

    /// A lease, as a ``RateLimiter`` implementation makes them: `id` unique among the leases
    /// it has handed out, or 0 for one that holds no slot.
    package init(key: String, id: UInt64) {
        self.init(key: key, id: id, reservedTokens: 0, day: 0, origin: .local)
    }

    init(key: String, id: UInt64, reservedTokens: Int, day: Int64, origin: Origin) {
        self.key = key
        self.id = id
        self.reservedTokens = reservedTokens
        self.day = day
        self.origin = origin
    }

    /// Whether the lease holds a concurrency slot that releasing frees.
    package var holdsSlot: Bool { id != 0 }
}
