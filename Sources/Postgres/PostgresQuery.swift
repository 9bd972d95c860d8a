/// One statement and the values bound to its `$1`, `$2`, ….
///
/// A store writer builds a multi-row insert as one query — `INSERT … VALUES ($1, $2), ($3, $4)`
/// with every row's values in order — so a batch costs one round trip;
/// ``PostgresClient/transaction(_:timeout:)`` runs several queries as one unit, also in one
/// round trip.
package struct PostgresQuery: Sendable, Hashable {
    /// The most parameters one statement can carry (the protocol counts them in 16 bits).
    package static let maxParameters = 65_535

    package var sql: String
    package var parameters: [PostgresValue]

    package init(_ sql: String, _ parameters: [PostgresValue] = []) {
        self.sql = sql
        self.parameters = parameters
    }
}
