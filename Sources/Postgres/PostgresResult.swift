/// What one statement returned: its columns, its rows (values as the server's text, bytes
/// for `bytea`) and how many rows it affected.
public struct PostgresResult: Sendable, Hashable {
    /// The column names, in order.
    public let columns: [String]
    /// The columns' type OIDs, in order (25 text, 20 int8, 17 bytea, …).
    public let columnTypes: [UInt32]
    public let rows: [PostgresRow]
    /// The rows an INSERT, UPDATE, DELETE, MERGE, SELECT, MOVE, FETCH or COPY touched;
    /// 0 for other commands.
    public let affectedRows: Int

    public init(columns: [String], columnTypes: [UInt32], rows: [PostgresRow], affectedRows: Int) {
        self.columns = columns
        self.columnTypes = columnTypes
        self.rows = rows
        self.affectedRows = affectedRows
    }
}
