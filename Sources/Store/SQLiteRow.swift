import CSQLite

/// The row a statement stands on, read column by column (columns count from 0).
///
/// Not copyable, and handed to a closure as `borrowing`: it cannot outlive the step that
/// produced it, after which SQLite's column values are gone.
struct SQLiteRow: ~Copyable {
    private let statement: OpaquePointer

    init(statement: OpaquePointer) {
        self.statement = statement
    }

    func isNull(_ column: Int32) -> Bool {
        sqlite3_column_type(statement, column) == SQLITE_NULL
    }

    func int64(_ column: Int32) -> Int64 {
        sqlite3_column_int64(statement, column)
    }

    func int(_ column: Int32) -> Int {
        Int(truncatingIfNeeded: int64(column))
    }

    func optionalInt64(_ column: Int32) -> Int64? {
        isNull(column) ? nil : int64(column)
    }

    func optionalInt(_ column: Int32) -> Int? {
        isNull(column) ? nil : int(column)
    }

    func double(_ column: Int32) -> Double {
        sqlite3_column_double(statement, column)
    }

    func bool(_ column: Int32) -> Bool {
        int64(column) != 0
    }

    func text(_ column: Int32) -> String {
        // The pointer first, then the length: asking for the length first may convert twice.
        guard let bytes = sqlite3_column_text(statement, column) else { return "" }
        let count = Int(sqlite3_column_bytes(statement, column))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    func optionalText(_ column: Int32) -> String? {
        isNull(column) ? nil : text(column)
    }

    func blob(_ column: Int32) -> [UInt8] {
        guard let bytes = sqlite3_column_blob(statement, column) else { return [] }
        let count = Int(sqlite3_column_bytes(statement, column))
        return Array(UnsafeRawBufferPointer(start: bytes, count: count))
    }

    func optionalBlob(_ column: Int32) -> [UInt8]? {
        isNull(column) ? nil : blob(column)
    }
}
