#if canImport(Glibc)
import Glibc
#endif

/// Reads the usual shape of a chat completion straight from its bytes, without building a
/// ``JSONValue`` tree (no dictionary per object, no hashing of keys): the answer of every
/// non-streamed upstream call goes through here.
///
/// It handles objects whose keys are plain (no escapes), with values of the types the fields
/// expect (or `null`); unknown members are checked and skipped, and of a repeated key the
/// last one wins, as in the general reading. Anything else — an escaped key, a field of
/// another type, `content` as an array of parts — is ``Failure/unhandled``, and the caller
/// reads the document with ``JSONValue`` instead, which decides. So the result is always
/// the one the general reading gives. Bytes that are not JSON at all are ``Failure/syntax``.
struct ChatCompletionReader {
    enum Failure: Error {
        /// Not a JSON document: the general reading would refuse it too.
        case syntax
        /// Valid so far, but not a shape read here.
        case unhandled
    }

    private var parser = JSONByteParser(maximumDepth: 64)

    static func read(_ bytes: [UInt8]) throws(Failure) -> ChatCompletion {
        try bytes.withUnsafeBufferPointer { buffer throws(Failure) in
            var reader = ChatCompletionReader()
            reader.parser.begin(buffer)
            let completion = try reader.completion()
            reader.parser.skipWhitespace()
            guard reader.parser.index == buffer.count else { throw .syntax }
            return completion
        }
    }

    // MARK: - The completion's objects

    private mutating func completion() throws(Failure) -> ChatCompletion {
        parser.skipWhitespace()
        try openObject()
        var completion = ChatCompletion(object: nil, choices: [])
        var first = true
        while let key = try nextKey(&first) {
            if Self.matches(key, "id") {
                completion.id = try optionalString()
            } else if Self.matches(key, "object") {
                completion.object = try optionalString()
            } else if Self.matches(key, "created") {
                completion.created = try optionalInt()
            } else if Self.matches(key, "model") {
                completion.model = try optionalString()
            } else if Self.matches(key, "choices") {
                completion.choices = try choices()
            } else if Self.matches(key, "usage") {
                completion.usage = try usage()
            } else {
                try skipValue(ofUnknownKey: key)
            }
        }
        return completion
    }

    private mutating func choices() throws(Failure) -> [ChatCompletion.Choice] {
        if try null() { return [] }
        guard peek() == UInt8(ascii: "[") else { throw .unhandled }
        try enter()
        parser.index += 1
        var choices: [ChatCompletion.Choice] = []
        parser.skipWhitespace()
        if peek() == UInt8(ascii: "]") {
            parser.index += 1
            parser.depth -= 1
            return choices
        }
        while true {
            parser.skipWhitespace()
            choices.append(try choice())
            parser.skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): parser.index += 1
            case UInt8(ascii: "]"):
                parser.index += 1
                parser.depth -= 1
                return choices
            default: throw .syntax
            }
        }
    }

    private mutating func choice() throws(Failure) -> ChatCompletion.Choice {
        try openObject()
        var choice = ChatCompletion.Choice(index: nil, message: nil)
        var first = true
        while let key = try nextKey(&first) {
            if Self.matches(key, "index") {
                choice.index = try optionalInt()
            } else if Self.matches(key, "message") {
                choice.message = try message()
            } else if Self.matches(key, "finish_reason") {
                choice.finishReason = try optionalString()
            } else {
                try skipValue(ofUnknownKey: key)
            }
        }
        return choice
    }

    private mutating func message() throws(Failure) -> ChatCompletion.Message? {
        if try null() { return nil }
        try openObject()
        var message = ChatCompletion.Message(role: nil, content: nil)
        var first = true
        while let key = try nextKey(&first) {
            if Self.matches(key, "role") {
                message.role = try optionalString().map(ChatRole.init(rawValue:))
            } else if Self.matches(key, "content") {
                message.content = try optionalString()  // an array of parts is left to the general reading
            } else {
                try skipValue(ofUnknownKey: key)
            }
        }
        return message
    }

    private mutating func usage() throws(Failure) -> Usage? {
        if try null() { return nil }
        try openObject()
        var usage = Usage(promptTokens: nil, completionTokens: nil, totalTokens: nil)
        var first = true
        while let key = try nextKey(&first) {
            if Self.matches(key, "prompt_tokens") {
                usage.promptTokens = try optionalInt()
            } else if Self.matches(key, "completion_tokens") {
                usage.completionTokens = try optionalInt()
            } else if Self.matches(key, "total_tokens") {
                usage.totalTokens = try optionalInt()
            } else {
                try skipValue(ofUnknownKey: key)
            }
        }
        return usage
    }

    // MARK: - Values

    private func peek() -> UInt8? {
        parser.index < parser.input.count ? parser.input[parser.index] : nil
    }

    /// Reads `null` if it comes next.
    private mutating func null() throws(Failure) -> Bool {
        guard peek() == UInt8(ascii: "n") else { return false }
        do { try parser.literal("null") } catch { throw .syntax }
        return true
    }

    private mutating func optionalString() throws(Failure) -> String? {
        if try null() { return nil }
        guard peek() == UInt8(ascii: "\"") else { throw .unhandled }
        do { return try parser.parseString() } catch { throw .syntax }
    }

    /// A whole number that fits `Int`, as ``JSONValue/intValue`` reads it, or null.
    private mutating func optionalInt() throws(Failure) -> Int? {
        if try null() { return nil }
        guard let byte = peek(), byte == UInt8(ascii: "-") || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) else {
            throw .unhandled
        }
        let number: Double
        do { number = try parser.parseNumber() } catch { throw .syntax }
        guard let whole = JSONValue.number(number).intValue else { throw .unhandled }
        return whole
    }

    /// Checks and skips the value of a member this reader does not use.
    private mutating func skipValue(ofUnknownKey key: UnsafeBufferPointer<UInt8>) throws(Failure) {
        guard UTF8Text.string(key) != nil else { throw .syntax }
        do { _ = try parser.parseValue() } catch { throw .syntax }
    }

    // MARK: - Objects

    private mutating func enter() throws(Failure) {
        do { try parser.enter() } catch { throw .syntax }
    }

    /// At `{`: enters the object. Anything else is not an object, left to the general reading.
    private mutating func openObject() throws(Failure) {
        guard peek() == UInt8(ascii: "{") else { throw .unhandled }
        try enter()
        parser.index += 1
    }

    /// The next member's key, with the reader on its value; nil after the closing `}`.
    private mutating func nextKey(_ first: inout Bool) throws(Failure) -> UnsafeBufferPointer<UInt8>? {
        parser.skipWhitespace()
        if first {
            first = false
            if peek() == UInt8(ascii: "}") {
                parser.index += 1
                parser.depth -= 1
                return nil
            }
        } else {
            switch peek() {
            case UInt8(ascii: ","):
                parser.index += 1
                parser.skipWhitespace()
            case UInt8(ascii: "}"):
                parser.index += 1
                parser.depth -= 1
                return nil
            default: throw .syntax
            }
        }
        guard peek() == UInt8(ascii: "\"") else { throw .syntax }
        let start = parser.index + 1
        let end = JSONStringScan.firstSpecial(in: parser.input, from: start, delete: false)
        guard end < parser.input.count, parser.input[end] == UInt8(ascii: "\"") else { throw .unhandled }  // escapes
        parser.index = end + 1
        parser.skipWhitespace()
        guard peek() == UInt8(ascii: ":") else { throw .syntax }
        parser.index += 1
        parser.skipWhitespace()
        return UnsafeBufferPointer(rebasing: parser.input[start..<end])
    }

    private static func matches(_ key: UnsafeBufferPointer<UInt8>, _ name: StaticString) -> Bool {
        guard key.count == name.utf8CodeUnitCount, let start = key.baseAddress else { return false }
        return memcmp(start, name.utf8Start, key.count) == 0
    }
}
