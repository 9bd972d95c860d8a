/// Writing a ``JSONValue`` back as compact JSON.
extension JSONValue {
    /// The value as compact UTF-8 JSON. Object members are written in the order of their
    /// names' bytes, so the same value always gives the same bytes (a `Dictionary` has no
    /// order of its own); whole numbers within ±2⁵³ are written without a fraction (`10`,
    /// not `10.0`); a non-finite number, which JSON cannot hold, as `null`.
    package func jsonBytes() -> [UInt8] {
        var bytes: [UInt8] = []
        append(to: &bytes)
        return bytes
    }

    /// Appends ``jsonBytes()`` to `bytes`.
    package func append(to bytes: inout [UInt8]) {
        switch self {
        case .null:
            bytes.append(contentsOf: "null".utf8)
        case .bool(let value):
            bytes.append(contentsOf: (value ? "true" : "false").utf8)
        case .number(let value):
            if !value.isFinite {
                bytes.append(contentsOf: "null".utf8)
            } else if value.rounded() == value, abs(value) <= 9_007_199_254_740_992 {
                bytes.append(contentsOf: String(Int(value)).utf8)
            } else {
                bytes.append(contentsOf: value.description.utf8)
            }
        case .string(let value):
            Self.appendString(value, to: &bytes)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                element.append(to: &bytes)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            // Bytes, not `<`: String comparison is Unicode's canonical ordering.
            let names = members.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            for (index, name) in names.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                Self.appendString(name, to: &bytes)
                bytes.append(UInt8(ascii: ":"))
                members[name]?.append(to: &bytes)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    private static func appendString(_ value: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        JSONWriter.appendStringContents(of: value, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }
}

extension JSONWriter {
    /// A member whose value is a ``JSONValue`` (``JSONValue/jsonBytes()``).
    package mutating func field(_ name: String, _ value: JSONValue) {
        field(name, json: value.jsonBytes())
    }
}
