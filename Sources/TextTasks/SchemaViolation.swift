/// Why a model's answer is not what its ``TaskSchema`` asks for. Paths name only the
/// schema's own members and array indices (`$.points[3]`), never a name or value the model
/// wrote, so a violation can go to the log.
package enum SchemaViolation: Error, Sendable, Equatable {
    /// Not one JSON value (after the fence and whitespace around it are taken off).
    case notJSON
    /// A value of another type than the schema's.
    case wrongType(path: String, expected: String)
    /// A required member is absent.
    case missingMember(path: String)
    /// An object has a member its schema does not list.
    case unexpectedMember(path: String)
    /// An array with fewer or more items than the schema allows.
    case itemCount(path: String, count: Int, minimum: Int?, maximum: Int?)
    /// A string that is empty once trimmed.
    case emptyString(path: String)

    /// One short English phrase for the log.
    package var logReason: String {
        switch self {
        case .notJSON: return "not JSON"
        case .wrongType(let path, let expected): return "\(path): not \(expected)"
        case .missingMember(let path): return "\(path): missing"
        case .unexpectedMember(let path): return "\(path): unexpected member"
        case .itemCount(let path, let count, let minimum, let maximum):
            return
                "\(path): \(count) items, allowed \(minimum.map(String.init) ?? "0")…\(maximum.map(String.init) ?? "∞")"
        case .emptyString(let path): return "\(path): empty string"
        }
    }

    /// The same, in Persian, for the repair message to the model.
    var persian: String {
        switch self {
        case .notJSON:
            return "پاسخ یک JSON معتبر نبود"
        case .wrongType(let path, let expected):
            return "مقدار \(path) از نوع \(expected) نبود"
        case .missingMember(let path):
            return "\(path) وجود نداشت"
        case .unexpectedMember(let path):
            return "در \(path) عضوی بیرون از ساختار خواسته\u{200C}شده آمده بود"
        case .itemCount(let path, let count, let minimum, let maximum):
            let allowed: String
            if let minimum, let maximum {
                allowed = minimum == maximum ? "دقیقاً \(minimum)" : "بین \(minimum) تا \(maximum)"
            } else if let minimum {
                allowed = "دست\u{200C}کم \(minimum)"
            } else {
                allowed = "حداکثر \(maximum ?? 0)"
            }
            return "\(path) به جای \(allowed) مورد، \(count) مورد داشت"
        case .emptyString(let path):
            return "مقدار \(path) خالی بود"
        }
    }
}
