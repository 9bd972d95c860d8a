/// A caller's own rows, newest first (`/api/history`). Every call is scoped to one user: a
/// row of another user is exactly as absent as a missing one.
public protocol HistoryStore: Sendable {
    /// Up to `limit` rows of `userID` older than `before` (a cursor from an earlier page),
    /// newest first, and the cursor of the next page when there may be more.
    func history(userID: String, limit: Int, before cursor: HistoryCursor?) async throws(StoreError) -> HistoryPage
    /// The newest row of `userID` with request id `id`, or nil.
    func historyItem(userID: String, id: String) async throws(StoreError) -> HistoryItem?
    /// Deletes the rows of `userID` with request id `id`; false when there were none.
    func deleteHistoryItem(userID: String, id: String) async throws(StoreError) -> Bool
    /// Deletes every row of `userID`; returns how many.
    func deleteHistory(userID: String) async throws(StoreError) -> Int
}

/// Where a history page ends: the row sequence number of its last item, sent to clients as
/// an opaque string.
public struct HistoryCursor: Sendable, Hashable {
    public let sequence: Int64

    public init(sequence: Int64) {
        self.sequence = sequence
    }

    /// The cursor as clients see it.
    public var text: String { String(sequence) }

    /// A cursor from its text, nil when it is not one this store wrote (a positive decimal).
    public init?(text: String) {
        guard !text.isEmpty, text.utf8.count <= 19, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
              let value = Int64(text), value > 0
        else { return nil }
        sequence = value
    }
}

/// One page of history.
public struct HistoryPage: Sendable, Equatable {
    public var items: [HistoryItem]
    /// Set when a full page was returned (there may be more).
    public var nextCursor: HistoryCursor?

    public init(items: [HistoryItem], nextCursor: HistoryCursor?) {
        self.items = items
        self.nextCursor = nextCursor
    }
}

/// One row as a caller reads it back.
public struct HistoryItem: Sendable, Equatable {
    /// The store's sequence number of the row (cursors are made of it).
    public var sequence: Int64
    public var row: LedgerRow

    public init(sequence: Int64, row: LedgerRow) {
        self.sequence = sequence
        self.row = row
    }
}
