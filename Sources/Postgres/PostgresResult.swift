/// What one statement returned: its columns, its rows (values as the server's text, bytes
/// for `bytea`) and how many rows it affected.
package struct PostgresResult: Sendable, Hashable {
    /// The column names, in order.
    package let columns: [String]
    /// The columns' type OIDs, in order (25 text, 20 int8, 17 bytea, …).
    package let columnTypes: [UInt32]
    package let rows: [PostgresRow]
    /// The rows an INSERT, UPDATE, DELETE, MERGE, SELECT, MOVE, FETCH or COPY touched;
    /// 0 for other commands.
    package let affectedRows: Int

    package init(columns: [String], columnTypes: [UInt32], rows: [PostgresRow], affectedRows: Int) {
        self.columns = columns
        self.columnTypes = columnTypes
        self.rows = rows
        self.affectedRows = affectedRows
    }
}
