/// Reads a message's `content`, which OpenAI clients send in three shapes: a string, `null`,
/// or an array of content parts (`[{"type": "text", "text": "…"}]`).
///
/// Text parts are flattened into one string joined with `"\n"` (as vLLM does). A part of any
/// other type (an image, audio, a file) cannot be represented as text, so it fails decoding
/// rather than being dropped silently.
enum MessageContent {
    static func decode<Key: CodingKey>(
        from container: KeyedDecodingContainer<Key>,
        forKey key: Key
    ) throws -> String? {
        guard container.contains(key), try !container.decodeNil(forKey: key) else {
            return nil
        }
        if let text = try? container.decode(String.self, forKey: key) {
            return text
        }
        let parts = try container.decode([Part].self, forKey: key)
        return parts.map(\.text).joined(separator: "\n")
    }

    /// One element of a content-part array; only text parts are accepted.
    struct Part: Decodable {
        var text: String

        private enum CodingKeys: String, CodingKey {
            case type
            case text
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            let type = try container.decodeIfPresent(String.self, forKey: .type)
            guard type == nil || type == "text" else {
                throw DecodingError.dataCorruptedError(
                    forKey: .type,
                    in: container,
                    debugDescription: "Only text content parts are supported."
                )
            }
            self.text = try container.decode(String.self, forKey: .text)
        }
    }
}
