import Testing

@testable import Store

@Suite("SQLite connection")
struct SQLiteConnectionTests {
    static func withConnection(_ body: (SQLiteConnection) throws -> Void) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let connection = try SQLiteConnection(
            path: directory.file("test.db"), mode: .readWrite, busyTimeout: .seconds(1))
        defer { connection.close() }
        try connection.execute("CREATE TABLE t (a ANY, b ANY)")
        try body(connection)
    }

    static func count(_ connection: SQLiteConnection) throws -> Int? {
        try connection.queryFirst("SELECT count(*) FROM t") { $0.int(0) }
    }

    @Test("each kind of value reads back as it was bound; empty text and blobs are not NULL")
    func bindsValues() throws {
        try Self.withConnection { connection throws in
            let values: [SQLiteValue] = [
                .null, .integer(.min), .integer(.max), .real(-2.5), .text(""), .text("é\u{0}z"), .blob([]),
                .blob([0, 1, 255]),
            ]
            for value in values { try connection.execute("INSERT INTO t (a) VALUES (?)", [value]) }
            var back: [SQLiteValue] = []
            try connection.query("SELECT a, typeof(a) FROM t ORDER BY rowid") { row in
                switch row.text(1) {
                case "null": back.append(.null)
                case "integer": back.append(.integer(row.int64(0)))
                case "real": back.append(.real(row.double(0)))
                case "text": back.append(.text(row.text(0)))
                default: back.append(.blob(row.blob(0)))
                }
            }
            #expect(back == values)
        }
    }

    @Test("a statement given more or fewer values than it has parameters is refused before it runs")
    func checksArity() throws {
        try Self.withConnection { connection throws in
            for values: [SQLiteValue] in [[], [.integer(1)], [.integer(1), .integer(2), .integer(3)]] {
                #expect(throws: StoreError.self) {
                    try connection.execute("INSERT INTO t (a, b) VALUES (?, ?)", values)
                }
            }
            #expect(try Self.count(connection) == 0)
        }
    }

    @Test("a statement that failed is prepared anew and runs again")
    func evictsFailedStatements() throws {
        try Self.withConnection { connection throws in
            try connection.execute("CREATE UNIQUE INDEX t_a ON t (a)")
            let insert = "INSERT INTO t (a) VALUES (?)"
            try connection.execute(insert, [.integer(1)])
            let error = #expect(throws: StoreError.self) { try connection.execute(insert, [.integer(1)]) }
            #expect(error?.code == .constraint)
            try connection.execute(insert, [.integer(2)])
            #expect(try Self.count(connection) == 2)
        }
    }

    @Test("a transaction whose body throws is rolled back and leaves no transaction open")
    func rollsBack() throws {
        try Self.withConnection { connection throws in
            let error = #expect(throws: StoreError.self) {
                try connection.transaction { () throws(StoreError) in
                    try connection.execute("INSERT INTO t (a) VALUES (1)")
                    throw StoreError(.other, message: "stop")
                }
            }
            #expect(error?.message == "stop")
            #expect(!connection.isInTransaction)
            #expect(try Self.count(connection) == 0)
            try connection.transaction { () throws(StoreError) -> Void in
                try connection.execute("INSERT INTO t (a) VALUES (2)")
            }
            #expect(try Self.count(connection) == 1)
        }
    }

    @Test("an error names the file and the statement, never a bound value")
    func errorMessages() throws {
        try Self.withConnection { connection throws in
            try connection.execute("CREATE TABLE u (a TEXT NOT NULL CHECK (length(a) < 5)) STRICT")
            let error = #expect(throws: StoreError.self) {
                try connection.execute("INSERT INTO u (a) VALUES (?)", [.text("very secret text")])
            }
            #expect(error?.code == .constraint)
            #expect(error?.message.hasPrefix(connection.path + ": ") == true)
            #expect(error?.message.contains("INSERT INTO u (a) VALUES (?)") == true)
            #expect(error?.message.contains("secret") == false)
        }
    }

    @Test("a closed connection refuses work, and closing twice is harmless")
    func closes() throws {
        try Self.withConnection { connection throws in
            connection.close()
            connection.close()
            let error = #expect(throws: StoreError.self) { try connection.execute("SELECT 1") }
            #expect(error?.code == .closed)
        }
    }
}
