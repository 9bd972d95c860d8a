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
public enum JSON {
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return encoder
    }()

    private static let decoder = JSONDecoder()

    /// Encodes `value` as compact UTF-8 JSON.
    /// - Throws: `EncodingError` when the value cannot be represented in JSON
    ///   (for example a non-finite `Double`).
    public static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        Array(try encoder.encode(value))
    }

    /// Decodes a value of type `T` from UTF-8 JSON.
    /// - Throws: `DecodingError` when the bytes are not JSON or do not have the shape of `T`.
    public static func decode<T: Decodable>(_ type: T.Type = T.self, from bytes: [UInt8]) throws -> T {
        try decoder.decode(type, from: Data(bytes))
    }
}
