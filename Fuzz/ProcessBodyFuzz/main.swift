// libFuzzer target for the `POST /api/process` body: ProcessRequest.parse(body:contentType:).
// Every invariant violation traps, which libFuzzer reports as a crash with the input saved.
//
// Input: one byte picks the Content-Type (the last choices take it from the input, up to
// the first LF), the rest is the body.
import JSON

@testable import Gateway
@testable import TextTasks

private let contentTypes: [String?] = [
    nil,
    "application/json",
    "application/json; charset=utf-8",
    "Application/JSON ;\tcharset=UTF-8",
    "text/plain",
    "application/json5",
]

/// `application/json` by bytes: what precedes the first `;`, without SP and HTAB, ASCII
/// lowercased.
private func isJSONByBytes(_ contentType: String) -> Bool {
    let mediaType = contentType.utf8.prefix { $0 != UInt8(ascii: ";") }
        .filter { $0 != 0x20 && $0 != 0x09 }
        .map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
    return mediaType.elementsEqual("application/json".utf8)
}

private func parse(_ body: [UInt8], _ contentType: String?) -> Result<ProcessRequest, GatewayError> {
    do {
        return .success(try ProcessRequest.parse(body: body, contentType: contentType))
    } catch {
        return .failure(error)
    }
}

/// Absent, null or a string: the types `tone` may have.
private func isToneShape(_ value: JSONValue?) -> Bool {
    switch value {
    case nil, .null?, .string?: return true
    default: return false
    }
}

/// Absent, null or one of the tones.
private func isValidTone(_ value: JSONValue?) -> Bool {
    switch value {
    case nil, .null?: return true
    case .string(let name)?: return Tone.allCases.contains { $0.rawValue == name }
    default: return false
    }
}

/// Absent, null or one of the formats.
private func isValidFormat(_ value: JSONValue?) -> Bool {
    switch value {
    case nil, .null?: return true
    case .string(let name)?: return OutputFormat.allCases.contains { $0.rawValue == name }
    default: return false
    }
}

/// Absent, null or a bool: the types `stream` may have.
private func isStreamShape(_ value: JSONValue?) -> Bool {
    switch value {
    case nil, .null?, .bool?: return true
    default: return false
    }
}

/// `text` without the whitespace characters at its ends, one character at a time.
private func trimmedByCharacters(_ text: String) -> Substring {
    var rest = Substring(text)
    while rest.first?.isWhitespace == true { rest.removeFirst() }
    while rest.last?.isWhitespace == true { rest.removeLast() }
    return rest
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let input = UnsafeBufferPointer(start: data, count: size)
    let choice = Int(input[0]) % (contentTypes.count + 2)
    var rest = input[1...]
    let contentType: String?
    if choice < contentTypes.count {
        contentType = contentTypes[choice]
    } else {
        let end = rest.firstIndex(of: 0x0A) ?? rest.endIndex
        contentType = String(decoding: rest[..<end], as: UTF8.self)
        rest = rest[min(end + 1, rest.endIndex)...]
    }
    let body = Array(rest)

    let result = parse(body, contentType)
    require(parse(body, contentType) == result, "parsing is not deterministic")

    // The content type is checked first; whatever the Unicode, accepting it means its bytes
    // say application/json, and for ASCII the bytes decide.
    if let contentType {
        let accepted = ProcessRequest.isJSON(contentType)
        if accepted { require(isJSONByBytes(contentType), "accepted a content type that is not JSON") }
        if contentType.utf8.allSatisfy({ $0 < 0x80 }) {
            require(accepted == isJSONByBytes(contentType), "the fast and the general content type checks disagree")
        }
        if !accepted {
            require(result == .failure(.unsupportedMediaType), "a refused content type did not fail first")
            return 0
        }
    }

    // Any bytes as text: the counter's fast path against the full grapheme rules.
    let anyText = String(decoding: body, as: UTF8.self)
    let count = anyText.count
    require(CharacterCount.of(anyText) == count, "CharacterCount differs from String.count")
    // And with a limit: exact up to it, one more past it.
    let limit = Int(body.last ?? 0) % 48
    require(
        CharacterCount.of(anyText, limit: limit) == min(count, limit + 1),
        "CharacterCount with a limit differs from String.count")

    // Then the shape: anything but an I-JSON object with string task and text, tone and format
    // a string and stream a bool (each maybe absent or null), and no U+0000 in the text is invalid JSON.
    guard let document = try? JSONValue.parse(body), case .object = document,
        let taskName = document["task"]?.stringValue, let rawText = document["text"]?.stringValue,
        isToneShape(document["tone"]), isToneShape(document["format"]), isStreamShape(document["stream"]),
        !rawText.unicodeScalars.contains("\u{0}")
    else {
        require(result == .failure(.invalidJSON), "a body that is not a task object did not fail with invalid_json")
        return 0
    }
    // The counter's fast path against the full grapheme rules, on any text.
    require(CharacterCount.of(rawText) == rawText.count, "CharacterCount differs from String.count")

    // Then the task, the tone, the format and the length, in that order.
    let expected: GatewayError?
    let trimmedCount = trimmedByCharacters(rawText).count
    if TextTask(rawValue: taskName) == nil {
        expected = .invalidTask
    } else if !isValidTone(document["tone"]) {
        expected = .invalidTone
    } else if !isValidFormat(document["format"]) {
        expected = .invalidFormat
    } else if trimmedCount < TextLimits.minimumCharacters {
        expected = .textTooShort
    } else if trimmedCount > TextLimits.maximumCharacters {
        expected = .textTooLong
    } else {
        expected = nil
    }
    switch result {
    case .failure(let error):
        require(error == expected, "\(error.code) where \(expected?.code.rawValue ?? "success") was due")
    case .success(let request):
        require(expected == nil, "success where \(expected?.code.rawValue ?? "") was due")
        require(request.task.rawValue == taskName, "task differs from the body")
        switch document["tone"] {
        case nil, .null?: require(request.tone == nil, "a tone from nowhere")
        case .string(let tone)?: require(request.tone?.rawValue == tone, "tone differs from the body")
        default: fatalError("a tone that is not a string was accepted")
        }
        require(request.stream == (document["stream"] == .bool(true)), "stream differs from the body")
        require(
            request.format == (document["format"] == .string("json") ? .json : .text), "format differs from the body")
        let text = request.text
        require(text == String(trimmedByCharacters(rawText)), "text is not the trimmed text")
        require(text.first?.isWhitespace == false && text.last?.isWhitespace == false, "text has whitespace at an end")
        require(request.characterCount == text.count, "characterCount differs from String.count")
        require(
            (TextLimits.minimumCharacters...TextLimits.maximumCharacters).contains(request.characterCount),
            "text length outside TextLimits"
        )
    }
    return 0
}
