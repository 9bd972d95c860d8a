/// A request's place under its key's concurrency limit, from ``RateLimiter/acquire(key:plan:now:)``.
///
/// Give it back with ``RateLimiter/release(_:)`` when the request ends, however it ends
/// (`defer`). Releasing is idempotent: a second release of the same lease does nothing, so a
/// copy of the value can never free someone else's slot.
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
