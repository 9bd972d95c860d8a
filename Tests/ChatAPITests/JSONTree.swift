import JSON

/// A decoded JSON tree, so tests compare JSON by structure rather than by spelling.
enum JSONTree: Decodable, Equatable, CustomStringConvertible {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONTree])
    case object([String: JSONTree])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let array = try? container.decode([JSONTree].self) {
            self = .array(array)
        } else {
            self = .object(try container.decode([String: JSONTree].self))
        }
    }

    /// Parses JSON text.
    init(parsing text: String) throws {
        self = try JSON.decode(JSONTree.self, from: Array(text.utf8))
    }

    /// Encodes `value` with the module's encoder and parses the result.
    init(encoding value: some Encodable) throws {
        self = try JSON.decode(JSONTree.self, from: JSON.encode(value))
    }

    var description: String {
        switch self {
        case .null: "null"
        case .bool(let bool): "\(bool)"
        case .number(let number): "\(number)"
        case .string(let string): "\"\(string)\""
        case .array(let array): "[\(array.map(\.description).joined(separator: ","))]"
        case .object(let object):
            "{\(object.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ","))}"
        }
    }
}
