import JSON

/// Checks a ``JSONValue`` against the small subset of JSON Schema the task schemas use:
/// `type` (`object`, `array`, `string`), `properties`, `required`, `additionalProperties:
/// false`, `items`, `minItems`, `maxItems`. Other keywords are not read. One rule beyond the
/// schema: a string must not be empty once trimmed (a model held to a schema can still
/// answer `""`, which no client could show).
enum JSONSchemaCheck {
    /// The first violation found, depth first in schema order; nil when `value` matches.
    static func violation(of schema: JSONValue, by value: JSONValue, at path: String = "$") -> SchemaViolation? {
        switch schema["type"]?.stringValue {
        case "object":
            guard case .object(let members) = value else { return .wrongType(path: path, expected: "object") }
            let properties: [String: JSONValue]
            if case .object(let declared)? = schema["properties"] { properties = declared } else { properties = [:] }
            if case .array(let required)? = schema["required"] {
                for case .string(let name) in required where members[name] == nil {
                    return .missingMember(path: path + "." + name)
                }
            }
            if schema["additionalProperties"] == .bool(false), members.keys.contains(where: { properties[$0] == nil }) {
                return .unexpectedMember(path: path)
            }
            // In the order of the names' bytes, so the same answer always gives the same violation.
            for name in properties.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
                guard let member = members[name], let memberSchema = properties[name] else { continue }
                if let violation = violation(of: memberSchema, by: member, at: path + "." + name) { return violation }
            }
            return nil
        case "array":
            guard case .array(let items) = value else { return .wrongType(path: path, expected: "array") }
            let minimum = schema["minItems"]?.intValue
            let maximum = schema["maxItems"]?.intValue
            if items.count < (minimum ?? 0) || items.count > (maximum ?? Int.max) {
                return .itemCount(path: path, count: items.count, minimum: minimum, maximum: maximum)
            }
            if let itemSchema = schema["items"] {
                for (index, item) in items.enumerated() {
                    if let violation = violation(of: itemSchema, by: item, at: "\(path)[\(index)]") { return violation }
                }
            }
            return nil
        case "string":
            guard case .string(let text) = value else { return .wrongType(path: path, expected: "string") }
            return TextTrim.trimmed(text).isEmpty ? .emptyString(path: path) : nil
        default:
            return nil
        }
    }
}
