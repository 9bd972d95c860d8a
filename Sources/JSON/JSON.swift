#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The JSON coders this module's wire types are meant to be used with.
///
/// The wire types spell out their own snake_case keys, so the coders use no key strategy;
/// the encoder leaves `/` unescaped (as OpenAI does) and does not sort keys. Both coders are
/// created once and shared: they are safe to use from any thread.
package enum JSON {
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return encoder
    }()

    private static let decoder = JSONDecoder()

    /// Encodes `value` as compact UTF-8 JSON.
    /// - Throws: `EncodingError` when the value cannot be represented in JSON
    ///   (for example a non-finite `Double`).
    package static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        Array(try encoder.encode(value))
    }

    /// Decodes a value of type `T` from UTF-8 JSON.
    /// - Throws: `DecodingError` when the bytes are not JSON or do not have the shape of `T`.
    package static func decode<T: Decodable>(_ type: T.Type = T.self, from bytes: [UInt8]) throws -> T {
        try decoder.decode(type, from: Data(bytes))
    }

    /// Decodes a body a client sent, which must be I-JSON (RFC 7493): the bytes are first
    /// checked as ``JSONValue/parse(_:maximumDepth:)`` checks them, because `JSONDecoder`
    /// keeps the first of a repeated member name where other readers keep the last.
    /// - Throws: `DecodingError` when the bytes are not I-JSON or do not have the shape of `T`.
    package static func decode<T: IJSONDecodable>(_ type: T.Type = T.self, from bytes: [UInt8]) throws -> T {
        do {
            try JSONValue.validate(bytes, maximumDepth: maximumClientDepth)
        } catch {
            throw DecodingError.dataCorrupted(
                .init(codingPath: [], debugDescription: error.description, underlyingError: error))
        }
        return try decoder.decode(type, from: Data(bytes))
    }

    /// The nesting `JSONDecoder` itself allows, so the check refuses no deeper document.
    package static let maximumClientDepth = 512
}

/// A type read from what clients send, held to I-JSON (RFC 7493) by
/// `JSON.decode(_:from:)`: no repeated member name in any object,
/// no lone surrogate escape.
package protocol IJSONDecodable: Decodable {}
