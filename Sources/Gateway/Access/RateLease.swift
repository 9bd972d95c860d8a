/// A request's place under its key's concurrency limit, from ``RateLimiter/acquire(key:plan:now:)``.
///
/// Give it back with ``RateLimiter/finish(lease:plan:tokens:now:)`` when the request ends,
/// however it ends. Finishing is idempotent: a second finish of the same lease frees nothing,
/// so a copy of the value can never free someone else's slot. A lease never finished (a
/// fault) expires after the limiter's lease time to live instead of holding its slot forever.
public struct RateLease: Sendable, Hashable {
    /// The key the lease was taken for.
    public let key: String
    /// Unique per limiter; 0 for a lease that holds no slot (the plan has no concurrency limit).
    public let id: UInt64

    /// A lease, as a ``RateLimiter`` implementation makes them: `id` unique among the leases
    /// it has handed out, or 0 for one that holds no slot.
    public init(key: String, id: UInt64) {
        self.key = key
        self.id = id
    }

    /// Whether the lease holds a concurrency slot that releasing frees.
    public var holdsSlot: Bool { id != 0 }
}
