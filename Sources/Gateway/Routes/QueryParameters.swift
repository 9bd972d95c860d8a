/// The parameters of a request's query (`limit=20&before=…`), for routes that take a few
/// plain values. A parameter given twice is an error: which one would win is guesswork.
/// Values are taken as sent (the ones read here are digits); `+` and `%` escapes are not
/// decoded, so an escaped value simply does not parse.
struct QueryParameters {
    private var values: [Substring: Substring] = [:]

    init(_ query: String?) throws(GatewayError) {
        guard let query, !query.isEmpty else { return }
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = parts[0]
            guard values[name] == nil else { throw .invalidParameter }
            values[name] = parts.count > 1 ? parts[1] : ""
        }
    }

    subscript(_ name: String) -> Substring? { values[name[...]] }

    /// An integer parameter in `range`, `fallback` when absent; anything else is `400`.
    func integer(_ name: String, in range: ClosedRange<Int>, default fallback: Int) throws(GatewayError) -> Int {
        guard let text = self[name] else { return fallback }
        guard text.utf8.count <= 6, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            let value = Int(text), range.contains(value)
        else { throw .invalidParameter }
        return value
    }
}
