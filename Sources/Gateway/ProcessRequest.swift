#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A validated `POST /api/process` body.
struct ProcessRequest: Equatable {
    static let minimumCharacters = 20
    static let maximumCharacters = 12_000

    let task: TextTask
    let tone: Tone?
    /// Trimmed of leading and trailing whitespace and newlines.
    let text: String
    /// Characters (grapheme clusters) of `text`.
    let characterCount: Int
    /// `"stream": true` was asked for.
    let stream: Bool

    /// Checks the content type, then the JSON shape, the task, the tone and the text length,
    /// in that order, and throws the first failure.
    static func parse(body: [UInt8], contentType: String?) throws(GatewayError) -> ProcessRequest {
        if let contentType, !isJSON(contentType) { throw .unsupportedMediaType }
        let raw: RawBody
        do {
            raw = try JSONDecoder().decode(RawBody.self, from: Data(body))
        } catch {
            throw .invalidJSON
        }
        guard let task = TextTask(rawValue: raw.task) else { throw .invalidTask }
        let tone: Tone?
        switch raw.tone {
        case .absent: tone = nil
        case .invalid: throw .invalidTone
        case .value(let value):
            guard let known = Tone(rawValue: value) else { throw .invalidTone }
            tone = known
        }
        let text = trimmed(raw.text)
        let count = text.count
        if count < minimumCharacters { throw .textTooShort }
        if count > maximumCharacters { throw .textTooLong }
        return ProcessRequest(task: task, tone: tone, text: text, characterCount: count, stream: raw.stream)
    }

    /// `application/json`, any case, with or without parameters.
    static func isJSON(_ contentType: String) -> Bool {
        let mediaType = contentType.split(separator: ";", maxSplits: 1).first ?? ""
        return mediaType.lowercased().filter { $0 != " " && $0 != "\t" } == "application/json"
    }

    /// `text` without leading or trailing Unicode whitespace and newlines.
    static func trimmed(_ text: String) -> String {
        guard let first = text.firstIndex(where: { !$0.isWhitespace }),
              let last = text.lastIndex(where: { !$0.isWhitespace })
        else { return "" }
        return String(text[first...last])
    }
}

/// The body as sent: `task` and `text` must be strings; `tone` may be absent or null.
private struct RawBody: Decodable {
    enum ToneField { case absent, value(String), invalid }

    let task: String
    let text: String
    let tone: ToneField
    let stream: Bool

    enum CodingKeys: String, CodingKey { case task, text, tone, stream }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        task = try container.decode(String.self, forKey: .task)
        text = try container.decode(String.self, forKey: .text)
        if try !container.contains(.tone) || container.decodeNil(forKey: .tone) {
            tone = .absent
        } else if let value = try? container.decode(String.self, forKey: .tone) {
            tone = .value(value)
        } else {
            tone = .invalid
        }
        stream = (try? container.decodeIfPresent(Bool.self, forKey: .stream)) ?? false
    }
}
