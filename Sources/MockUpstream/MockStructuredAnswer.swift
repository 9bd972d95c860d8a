import JSON

/// The mock's answer to a request with a `json_schema` `response_format`: JSON made from the
/// schema, so a round trip through a gateway that checks it passes, or broken on purpose
/// (the `json` behaviour key).
package enum MockStructuredAnswer {
    /// The `json` behaviour key.
    package enum Mode: String, Sendable, Hashable {
        /// JSON that matches the schema.
        case valid
        /// `{"unexpected": …}`: no required member, one the schema does not list.
        case invalid
        /// ``invalid`` in a request without an assistant message (a first call), ``valid``
        /// in one with it (the repair call, which carries the first answer).
        case invalidOnce = "invalid-once"
        /// Valid JSON inside a ```` ```json ```` fence.
        case fenced
    }

    /// The answer text for `chat`, or nil when it asks for no `json_schema`. String values
    /// are the behaviour's `content` (array items numbered after it); an array has its
    /// `minItems`, or 3 within `maxItems`, items.
    static func content(for chat: MockRequest, behaviour: MockBehaviour) -> String? {
        guard let format = chat.responseFormat, format["type"]?.stringValue == "json_schema",
            let schema = format["json_schema"]?["schema"]
        else { return nil }
        // The gateway's repair call ends with a user message of its own: the directive a
        // test wrote is in an earlier one.
        let mode = chat.userTexts.reduce(behaviour) { $0.applying(directivesIn: $1) }.json
        let valid = String(decoding: generate(schema, content: behaviour.content).jsonBytes(), as: UTF8.self)
        switch mode {
        case .valid:
            return valid
        case .fenced:
            return "```json\n" + valid + "\n```"
        case .invalid:
            return Self.invalid(behaviour)
        case .invalidOnce:
            return chat.hasAssistantMessage ? valid : Self.invalid(behaviour)
        }
    }

    private static func invalid(_ behaviour: MockBehaviour) -> String {
        String(decoding: JSONValue.object(["unexpected": .string(behaviour.content)]).jsonBytes(), as: UTF8.self)
    }

    /// A value of `schema`: an object with its required properties, a string, or an array.
    static func generate(_ schema: JSONValue, content: String, index: Int? = nil) -> JSONValue {
        switch schema["type"]?.stringValue {
        case "object":
            var members: [String: JSONValue] = [:]
            if case .array(let required)? = schema["required"] {
                for case .string(let name) in required {
                    members[name] = generate(schema["properties"]?[name] ?? .null, content: content)
                }
            }
            return .object(members)
        case "array":
            let maximum = schema["maxItems"]?.intValue ?? 3
            let count = schema["minItems"]?.intValue ?? min(3, maximum)
            let items = schema["items"] ?? .object(["type": .string("string")])
            return .array((0..<max(0, count)).map { generate(items, content: content, index: $0 + 1) })
        case "string":
            return .string(index.map { "\(content) \($0)" } ?? content)
        case "boolean":
            return .bool(true)
        case "number", "integer":
            return .number(Double(index ?? 1))
        default:
            return .null
        }
    }
}
