/// One row of a ``PostgresResult``: each column's value as bytes, nil for NULL.
///
/// Values arrive in the server's text format (`42`, `t`, `2026-12-01 06:00:00+00`) except
/// `bytea`, which arrives as its raw bytes.
package struct PostgresRow: Sendable, Hashable {
    package let values: [[UInt8]?]

    package init(values: [[UInt8]?]) {
        self.values = values
    }

    /// The raw value of column `index`; nil for NULL.
    package subscript(index: Int) -> [UInt8]? {
        values[index]
    }

    /// Column `index` as text; nil for NULL.
    package func string(_ index: Int) -> String? {
        values[index].map { String(decoding: $0, as: UTF8.self) }
    }

    /// Column `index` as an integer; nil for NULL or text that is not one.
    package func int(_ index: Int) -> Int? {
        string(index).flatMap { Int($0) }
    }

    /// Column `index` as a boolean (`t` or `f`); nil for NULL or anything else.
    package func bool(_ index: Int) -> Bool? {
        switch string(index) {
        case "t": true
        case "f": false
        default: nil
        }
    }

    /// Column `index` as a floating-point number; nil for NULL or text that is not one.
    package func double(_ index: Int) -> Double? {
        string(index).flatMap { Double($0) }
    }
}
