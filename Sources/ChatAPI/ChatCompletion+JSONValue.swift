import JSON

extension ChatCompletion {
    /// Reads a completion from raw JSON (the hot path of every call): the usual shape straight
    /// from the bytes (``ChatCompletionReader``), anything else through ``JSONValue``;
    /// the same result and the same leniency as the `Decodable` conformance: every field is
    /// optional, `choices` missing or null is empty, a field of the wrong type fails.
    package init(jsonBytes bytes: [UInt8]) throws(JSONShapeError) {
        do throws(ChatCompletionReader.Failure) {
            self = try ChatCompletionReader.read(bytes)
        } catch .syntax {
            throw JSONShapeError()
        } catch {
            self = try Self(jsonValueBytes: bytes) // .unhandled: a shape the fast reading leaves to this one
        }
    }

    /// The general reading, through a ``JSONValue`` tree: every shape the fields allow. An
    /// upstream's answer is not held to I-JSON: of a repeated name the last one wins.
    init(jsonValueBytes bytes: [UInt8]) throws(JSONShapeError) {
        let document: JSONValue
        do {
            document = try JSONValue.parse(bytes, strictness: .lenient)
        } catch {
            throw JSONShapeError()
        }
        guard case .object = document else { throw JSONShapeError() }
        let choices: [Choice]
        switch document["choices"] {
        case nil, .null?: choices = []
        case .array(let items)?: choices = try items.map { item throws(JSONShapeError) in try Choice(json: item) }
        default: throw JSONShapeError()
        }
        self.init(
            id: try document["id"].optionalString(),
            object: try document["object"].optionalString(),
            created: try document["created"].optionalInt(),
            model: try document["model"].optionalString(),
            choices: choices,
            usage: try document["usage"].map { value throws(JSONShapeError) in try Usage(json: value) } ?? nil
        )
    }
}

extension ChatCompletion.Choice {
    init(json: JSONValue) throws(JSONShapeError) {
        guard case .object = json else { throw JSONShapeError() }
        let message: ChatCompletion.Message?
        switch json["message"] {
        case nil, .null?: message = nil
        case .object(let fields)?:
            let role = try fields["role"].optionalString().map(ChatRole.init(rawValue:))
            message = ChatCompletion.Message(role: role, content: try Self.content(fields["content"]))
        default: throw JSONShapeError()
        }
        self.init(
            index: try json["index"].optionalInt(), message: message,
            finishReason: try json["finish_reason"].optionalString())
    }

    /// A string, null, or an array of text parts joined with "\n"; other parts fail.
    static func content(_ value: JSONValue?) throws(JSONShapeError) -> String? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)?: return text
        case .array(let parts)?:
            var texts: [String] = []
            for part in parts {
                guard case .object = part else { throw JSONShapeError() }
                let type = try part["type"].optionalString()
                guard type == nil || type == "text", let text = part["text"]?.stringValue else {
                    throw JSONShapeError()
                }
                texts.append(text)
            }
            return texts.joined(separator: "\n")
        default: throw JSONShapeError()
        }
    }
}

extension Usage {
    init?(json: JSONValue) throws(JSONShapeError) {
        switch json {
        case .null: return nil
        case .object:
            // Read leniently: a provider's details of another shape only lose the cache's discount.
            let cached = json["prompt_tokens_details"]?["cached_tokens"]?.intValue
            self.init(
                promptTokens: try json["prompt_tokens"].optionalInt(),
                completionTokens: try json["completion_tokens"].optionalInt(),
                totalTokens: try json["total_tokens"].optionalInt(),
                cachedPromptTokens: cached
            )
        default: throw JSONShapeError()
        }
    }
}

/// A JSON document that does not have the expected shape.
package struct JSONShapeError: Error, Hashable, Sendable {
    package init() {}
}

extension Optional where Wrapped == JSONValue {
    /// Absent or null → nil; a string → it; anything else fails.
    func optionalString() throws(JSONShapeError) -> String? {
        switch self {
        case nil, .null?: return nil
        case .string(let text)?: return text
        default: throw JSONShapeError()
        }
    }

    /// Absent or null → nil; a whole number → it; anything else fails.
    func optionalInt() throws(JSONShapeError) -> Int? {
        switch self {
        case nil, .null?: return nil
        case let value?:
            guard let number = value.intValue else { throw JSONShapeError() }
            return number
        }
    }
}
