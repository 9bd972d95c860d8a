/// One element of a comma-separated header value such as `Accept`, `Accept-Language` or
/// `Content-Type`: `text/event-stream;q=0.9`, `en-US; q=0.8`, `application/json; charset=utf-8`.
///
/// The three headers are read the same way: the value is everything before the first `;`,
/// compared without case, spaces or tabs, and empty when the element starts with `;` (so
/// `;application/json` is no media type at all).
struct HeaderElement {
    /// Before the first `;`: lower-cased, spaces and tabs removed.
    let value: String
    /// What follows each `;`, unparsed.
    let parameters: [Substring]

    init(_ element: Substring) {
        let parts = element.split(separator: ";", omittingEmptySubsequences: false)
        value = Self.compact(parts.first ?? "")
        parameters = Array(parts.dropFirst())
    }

    /// The non-empty elements of a comma-separated value, at most `limit` of them.
    static func list(_ header: String, limit: Int = 32) -> [HeaderElement] {
        header.split(separator: ",").prefix(limit).map(HeaderElement.init)
    }

    /// The `q` parameter's weight: 1 when there is none, 0 when it is not a number.
    var weight: Double {
        for parameter in parameters {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            if pair.count == 2, Self.compact(pair[0]) == "q" { return Double(Self.compact(pair[1])) ?? 0 }
        }
        return 1
    }

    private static func compact(_ text: Substring) -> String {
        text.lowercased().filter { $0 != " " && $0 != "\t" }
    }
}
