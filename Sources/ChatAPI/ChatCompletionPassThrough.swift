import JSON

/// A `/v1/chat/completions` body as a client sent it: checked only where the gateway relies
/// on it, and written upstream with every other field exactly as it came.
///
/// A typed request (``ChatCompletionRequest``) drops what it does not model — `tools`, `n`,
/// an assistant's `tool_calls`, image parts — and respells numbers; this type keeps the bytes
/// of each top-level member's value, so what a client's SDK sends is what the provider gets.
/// The whole body is held to I-JSON (RFC 7493) as ``JSONValue/parse(_:maximumDepth:)`` holds
/// it; `null` for an optional field the gateway reads counts as absent.
package struct ChatCompletionPassThrough: Sendable {
    /// The model the client asked for (an alias, on the gateway).
    package let model: String
    /// Whether the client asked for a streamed answer, `stream: true`.
    package let stream: Bool
    /// Whether the client asked for the usage chunk, `stream_options.include_usage: true`.
    package let includeUsage: Bool
    /// `max_tokens`, when present.
    package let maxTokens: Int?
    /// `max_completion_tokens`, when present.
    package let maxCompletionTokens: Int?
    /// `n`, the number of answers asked for: 1 when absent.
    package let choices: Int

    private let bytes: [UInt8]
    /// The top-level members in the order they came; each value as its range of `bytes`.
    private let members: [Member]
    private let streamOptions: Range<Int>?

    struct Member: Sendable {
        let name: String
        let value: Range<Int>
    }

    /// Reads `bytes`, which must be a JSON object with a string `model` and 1 to
    /// `maximumMessages` objects in `messages`, each with a string `role`; `stream` a
    /// boolean, `max_tokens` and `max_completion_tokens` whole numbers from 0, `n` one from 1, and
    /// `stream_options` an object, when present.
    package init(jsonBytes bytes: [UInt8], maximumMessages: Int) throws(ChatCompletionPassThroughError) {
        let reading: JSONByteParser.PassThroughReading?
        do {
            reading = try bytes.withUnsafeBufferPointer { buffer throws(JSONParseError) in
                var parser = JSONByteParser(maximumDepth: JSON.maximumClientDepth)
                return try parser.readPassThrough(buffer)
            }
        } catch {
            throw .invalidJSON(error)
        }
        guard let reading else { throw .notAnObject }
        let known = reading.known

        guard let model = known["model"]?.stringValue else { throw .invalidField("model") }
        switch reading.messages {
        case nil, .notArray?:
            throw .invalidField("messages")
        case .array(let count, let problem)?:
            switch problem {
            case .notObject(let index)?: throw .invalidField("messages[\(index)]")
            case .role(let index)?: throw .invalidField("messages[\(index)].role")
            case nil: break
            }
            guard count > 0, count <= maximumMessages else { throw .messageCount(count) }
        }
        switch known["stream"] {
        case nil, .null?: stream = false
        case .bool(let value)?: stream = value
        default: throw .invalidField("stream")
        }
        maxTokens = try Self.tokenCount(known["max_tokens"], "max_tokens")
        maxCompletionTokens = try Self.tokenCount(known["max_completion_tokens"], "max_completion_tokens")
        switch known["n"] {
        case nil, .null?: choices = 1
        case let value?:
            guard let count = value.intValue, count >= 1 else { throw .invalidField("n") }
            choices = count
        }
        switch known["stream_options"] {
        case nil, .null?:
            includeUsage = false
            streamOptions = nil
        case .object(let options)?:
            streamOptions = reading.members.first { $0.name == "stream_options" }?.value
            switch options["include_usage"] {
            case nil, .null?: includeUsage = false
            case .bool(let value)?: includeUsage = value
            default: throw .invalidField("stream_options.include_usage")
            }
        default:
            throw .invalidField("stream_options")
        }
        self.model = model
        self.bytes = bytes
        members = reading.members
    }

    private static func tokenCount(_ value: JSONValue?, _ field: String) throws(ChatCompletionPassThroughError) -> Int?
    {
        switch value {
        case nil, .null?: return nil
        case let value?:
            guard let count = value.intValue, count >= 0 else { throw .invalidField(field) }
            return count
        }
    }

    /// The body to send upstream: the same object, every member as it came, except `model`
    /// (set to `model`), the token limit and, with `addUsageOption`, `stream_options`.
    ///
    /// The limit: `max_completion_tokens` and `max_tokens` are each capped at `maxTokensCap`
    /// when present; when `max_completion_tokens` is not, `max_tokens` is the cap if absent.
    /// `addUsageOption` merges `include_usage: true` into `stream_options` (the gateway
    /// counts a stream's tokens whatever the client asked), keeping its other members.
    package func body(model: String, maxTokensCap: Int, addUsageOption: Bool) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + model.utf8.count + 64)
        out.append(UInt8(ascii: "{"))
        var first = true
        func name(_ name: String) {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            Self.appendString(name, to: &out)
            out.append(UInt8(ascii: ":"))
        }
        var wroteMaxTokens = false
        var wroteStreamOptions = false
        for member in members {
            name(member.name)
            switch member.name {
            case "model":
                Self.appendString(model, to: &out)
            case "max_completion_tokens" where maxCompletionTokens != nil:
                out += String(min(maxCompletionTokens!, maxTokensCap)).utf8
            case "max_tokens" where maxTokens != nil || maxCompletionTokens == nil:
                out += String(min(maxTokens ?? maxTokensCap, maxTokensCap)).utf8
                wroteMaxTokens = true
            case "stream_options" where addUsageOption:
                appendStreamOptionsWithUsage(to: &out)
                wroteStreamOptions = true
            default:
                out += bytes[member.value]
            }
        }
        if maxCompletionTokens == nil, !wroteMaxTokens {
            name("max_tokens")
            out += String(maxTokensCap).utf8
        }
        if addUsageOption, !wroteStreamOptions {
            name("stream_options")
            appendStreamOptionsWithUsage(to: &out)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// The client's `stream_options` object with `include_usage: true` in place of its own.
    private func appendStreamOptionsWithUsage(to out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        if let streamOptions {
            let options = bytes.withUnsafeBufferPointer { buffer in
                var parser = JSONByteParser(maximumDepth: JSON.maximumClientDepth)
                return try? parser.memberRanges(ofObjectIn: buffer, at: streamOptions.lowerBound)
            }
            for member in options ?? [] where member.name != "include_usage" {
                Self.appendString(member.name, to: &out)
                out.append(UInt8(ascii: ":"))
                out += bytes[member.value]
                out.append(UInt8(ascii: ","))
            }
        }
        out += #""include_usage":true}"#.utf8
    }

    private static func appendString(_ value: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        JSONWriter.appendStringContents(of: value, to: &out)
        out.append(UInt8(ascii: "\""))
    }
}

extension JSONByteParser {
    /// What ``readPassThrough(_:)`` found in a body.
    struct PassThroughReading {
        var members: [ChatCompletionPassThrough.Member] = []
        /// The values of the members the gateway reads, other than `messages`.
        var known: [String: JSONValue] = [:]
        var messages: Messages?
    }

    /// The shape of `messages`, as far as the gateway cares.
    enum Messages {
        case notArray
        /// `problem` is the first element that is not an object with a string `role`.
        case array(count: Int, problem: MessageProblem?)
    }

    enum MessageProblem {
        case notObject(Int)
        case role(Int)
    }

    private static let knownNames: Set<String> = [
        "model", "stream", "max_tokens", "max_completion_tokens", "n", "stream_options",
    ]

    /// Reads a body in one pass, checking it exactly as ``validateDocument(_:)`` does; nil
    /// for a valid document that is not an object. `messages` is walked without building it
    /// (it holds the conversation, by far the largest part).
    mutating func readPassThrough(_ buffer: UnsafeBufferPointer<UInt8>) throws(JSONParseError) -> PassThroughReading? {
        begin(buffer)
        skipWhitespace()
        guard index < input.count, input[index] == UInt8(ascii: "{") else {
            try validateDocument(buffer) // valid or not, but not an object
            return nil
        }
        let start = index
        try enter()
        index += 1
        var reading = PassThroughReading()
        var seen = JSONMemberNames()
        var first = true
        while let name = try nextMemberName(&first) {
            let key = try key(of: name)
            if !seen.insert(name) { throw JSONParseError(offset: start, reason: "repeated member name") }
            let valueStart = index
            if key == "messages" {
                reading.messages = try readMessages()
            } else if Self.knownNames.contains(key) {
                reading.known[key] = try parseValue()
            } else {
                try skipValue()
            }
            reading.members.append(ChatCompletionPassThrough.Member(name: key, value: valueStart..<index))
        }
        skipWhitespace()
        guard index == input.count else { throw error("text after the value") }
        return reading
    }

    private mutating func readMessages() throws(JSONParseError) -> Messages {
        guard index < input.count, input[index] == UInt8(ascii: "[") else {
            try skipValue()
            return .notArray
        }
        try enter()
        index += 1
        var count = 0
        var problem: MessageProblem?
        var first = true
        while try nextElement(&first) {
            if index < input.count, input[index] == UInt8(ascii: "{") {
                if try !readMessage(), problem == nil { problem = .role(count) }
            } else {
                try skipValue()
                if problem == nil { problem = .notObject(count) }
            }
            count += 1
        }
        return .array(count: count, problem: problem)
    }

    /// Checks one message object as `skipValue` would; true when it has a string `role`.
    private mutating func readMessage() throws(JSONParseError) -> Bool {
        let start = index
        try enter()
        index += 1
        var seen = JSONMemberNames()
        var first = true
        var hasRole = false
        while let name = try nextMemberName(&first) {
            if case .plain(let bytes) = name, !UTF8Text.isValid(bytes) { throw error("invalid UTF-8") }
            if !seen.insert(name) { throw JSONParseError(offset: start, reason: "repeated member name") }
            let isRole: Bool
            switch name {
            case .plain(let bytes): isRole = Self.name(bytes, is: "role")
            case .escaped(let text): isRole = text == "role"
            }
            // skipValue checks the string
            if isRole { hasRole = index < input.count && input[index] == UInt8(ascii: "\"") }
            try skipValue()
        }
        return hasRole
    }

    /// The members of the (valid) object that starts at `offset`: names and value ranges.
    mutating func memberRanges(ofObjectIn buffer: UnsafeBufferPointer<UInt8>, at offset: Int) throws(JSONParseError)
        -> [ChatCompletionPassThrough.Member]
    {
        begin(buffer)
        index = offset
        guard index < input.count, input[index] == UInt8(ascii: "{") else { throw error("expected an object") }
        try enter()
        index += 1
        var members: [ChatCompletionPassThrough.Member] = []
        var first = true
        while let name = try nextMemberName(&first) {
            let key = try key(of: name)
            let valueStart = index
            try skipValue()
            members.append(ChatCompletionPassThrough.Member(name: key, value: valueStart..<index))
        }
        return members
    }
}
