/// A caller's own rows, newest first (`/api/history`). Every call is scoped to one user: a
/// row of another user is exactly as absent as a missing one.
package protocol HistoryStore: Sendable {
    /// Up to `limit` rows of `userID` older than `before` (a cursor from an earlier page),
    /// newest first, and the cursor of the next page when there may be more.
    func history(userID: String, limit: Int, before cursor: HistoryCursor?) async throws(StoreError) -> HistoryPage
    /// The newest row of `userID` with request id `id`, or nil.
    func historyItem(userID: String, id: String) async throws(StoreError) -> HistoryItem?
    /// Deletes the rows of `userID` with request id `id`; false when there were none.
    func deleteHistoryItem(userID: String, id: String) async throws(StoreError) -> Bool
    /// Deletes every row of `userID`; returns how many.
    func deleteHistory(userID: String) async throws(StoreError) -> Int
    /// The store's key for sealing cursors before a client sees them: 32 random bytes made
    /// when the store was first opened for writing, then the same for every process on it,
    /// across restarts. Empty only on a read-only store that never had one.
    var historyCursorKey: [UInt8] { get }
}

/// Where a history page ends: the row sequence number of its last item. The number counts
/// every caller's rows, so a client never sees it as it is: the gateway hands it out sealed
/// with ``HistoryStore/historyCursorKey``.
package struct HistoryCursor: Sendable, Hashable {
    package let sequence: Int64

    package init(sequence: Int64) {
        self.sequence = sequence
    }
}

/// One page of history.
package struct HistoryPage: Sendable, Equatable {
    package var items: [HistoryItem]
    /// Set when a full page was returned (there may be more).
    package var nextCursor: HistoryCursor?

    package init(items: [HistoryItem], nextCursor: HistoryCursor?) {
        self.items = items
        self.nextCursor = nextCursor
    }
}

/// One row as a caller reads it back.
package struct HistoryItem: Sendable, Equatable {
    /// The store's sequence number of the row (cursors are made of it).
    package var sequence: Int64
    package var row: LedgerRow

    package init(sequence: Int64, row: LedgerRow) {
        self.sequence = sequence
        self.row = row
    }
}
