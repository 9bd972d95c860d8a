/// Where finished requests are written. One writer (``LedgerWriter``) calls it.
package protocol LedgerStore: Sendable {
    /// Commits `rows` in one transaction: each row into the history, each identified
    /// caller's requests and tokens added to its UTC day's usage, and each store token's
    /// last use moved forward. All or nothing: when it throws, nothing of `rows` is stored.
    /// A store does its blocking work off the caller's thread (SQLite on its pool).
    func append(_ rows: [LedgerRow]) async throws(StoreError)
}
