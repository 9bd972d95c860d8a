/// A value bound into a statement, one case per SQLite storage class.
enum SQLiteValue: Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    /// `text`, or `null` for nil.
    static func text(_ text: String?) -> SQLiteValue {
        text.map { .text($0) } ?? .null
    }

    /// `integer`, or `null` for nil.
    static func integer(_ value: Int?) -> SQLiteValue {
        value.map { .integer(Int64($0)) } ?? .null
    }

    /// `integer`, or `null` for nil.
    static func integer(_ value: Int64?) -> SQLiteValue {
        value.map { .integer($0) } ?? .null
    }
}
