/// A parameter bound to a query's `$n`. Values travel apart from the SQL text, so no value
/// is ever spliced into a statement.
///
/// Text-like values are sent in text format with no declared type, so the server infers it
/// from where the parameter stands (a `timestamptz` column, a `jsonb` cast); bytes are sent
/// in binary as `bytea`.
package enum PostgresValue: Sendable, Hashable {
    case null
    case text(String)
    /// Sent as `bytea`, in binary.
    case bytes([UInt8])
    /// Sent as `int8`.
    case int(Int)
    /// Sent as `float8`.
    case double(Double)
    /// Sent as `bool`.
    case bool(Bool)

    /// The parameter's type OID for libpq (0: let the server infer it).
    var typeOID: UInt32 {
        switch self {
        case .null, .text: 0
        case .bytes: 17
        case .int: 20
        case .double: 701
        case .bool: 16
        }
    }

    /// The bytes sent, nil for NULL, and whether they are binary.
    var wire: (bytes: [UInt8]?, binary: Bool) {
        switch self {
        case .null: (nil, false)
        case .text(let text): (Array(text.utf8), false)
        case .bytes(let bytes): (bytes, true)
        case .int(let value): (Array(String(value).utf8), false)
        case .double(let value): (Array(Self.text(of: value).utf8), false)
        case .bool(let value): (Array((value ? "t" : "f").utf8), false)
        }
    }

    private static func text(of value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "Infinity" : "-Infinity" }
        return "\(value)"
    }
}

extension PostgresValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByNilLiteral {
    package init(stringLiteral value: String) { self = .text(value) }
    package init(integerLiteral value: Int) { self = .int(value) }
    package init(nilLiteral: ()) { self = .null }
}

extension Optional where Wrapped == String {
    /// `.text` or `.null`.
    package var postgresValue: PostgresValue { map(PostgresValue.text) ?? .null }
}
