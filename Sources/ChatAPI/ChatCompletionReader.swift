import JSON

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

    private var parser: JSONByteParser
    /// What is read, and so which general reading each result must equal: a completion's
    /// (``JSONValue``: counts read through a `Double`, the last of a repeated key kept) or a
    /// chunk's (`JSONDecoder`: counts as plain digits, every digit of a large one kept; a
    /// repeated key is left to it).
    private let mode: Mode

    private enum Mode { case completion, chunk }

    /// Lenient for a whole completion, as its general reading is; for a chunk, whatever reads
    /// otherwise (a lone surrogate escape, a repeated name in a skipped value) is left to
    /// `JSONDecoder`, which decides.
    private init(_ mode: Mode) {
        parser = JSONByteParser(maximumDepth: 64, strictness: mode == .completion ? .lenient : .interoperable)
        self.mode = mode
    }

    static func read(_ bytes: [UInt8]) throws(Failure) -> ChatCompletion {
        try bytes.withUnsafeBufferPointer { buffer throws(Failure) in
            var reader = ChatCompletionReader(.completion)
            reader.parser.begin(buffer)
            let completion = try reader.completion()
            reader.parser.skipWhitespace()
            guard reader.parser.index == buffer.count else { throw .syntax }
            return completion
        }
    }

    /// Reads one streamed chunk (a `data:` event's JSON). Unlike a whole completion, a chunk
    /// whose shape is not read here goes to `JSONDecoder`, which decides; so every failure
    /// here, ``Failure/syntax`` included, only means "not this way". A key repeated in an
    /// object is left to it too (it may keep another one than the last).
    static func readChunk(_ bytes: UnsafeBufferPointer<UInt8>) throws(Failure) -> ChatCompletionChunk {
        var reader = ChatCompletionReader(.chunk)
        reader.parser.begin(bytes)
        reader.parser.skipWhitespace()
        let chunk = try reader.chunk()
        reader.parser.skipWhitespace()
        guard reader.parser.index == bytes.count else { throw .syntax }
        return chunk
    }

    // MARK: - The completion's objects

    private mutating func completion() throws(Failure) -> ChatCompletion {
        parser.skipWhitespace()
        var completion = ChatCompletion(object: nil, choices: [])
        try object { reader, key throws(Failure) in
            if Self.matches(key, "id") {
                completion.id = try reader.optionalString()
            } else if Self.matches(key, "object") {
                completion.object = try reader.optionalString()
            } else if Self.matches(key, "created") {
                completion.created = try reader.optionalInt()
            } else if Self.matches(key, "model") {
                completion.model = try reader.optionalString()
            } else if Self.matches(key, "choices") {
                completion.choices = try reader.choices()
            } else if Self.matches(key, "usage") {
                completion.usage = try reader.usage()
            } else {
                return false
            }
            return true
        }
        return completion
    }

    private mutating func choices() throws(Failure) -> [ChatCompletion.Choice] {
        try array { reader throws(Failure) in try reader.choice() }
    }

    /// An array whose elements `element` reads, or null (no elements); anything else is left
    /// to the general reading.
    private mutating func array<Element>(_ element: (inout Self) throws(Failure) -> Element) throws(Failure)
        -> [Element]
    {
        if try null() { return [] }
        guard peek() == UInt8(ascii: "[") else { throw .unhandled }
        try enter()
        parser.index += 1
        var elements: [Element] = []
        var first = true
        while try nextElement(&first) { elements.append(try element(&self)) }
        return elements
    }

    private mutating func choice() throws(Failure) -> ChatCompletion.Choice {
        var choice = ChatCompletion.Choice(index: nil, message: nil)
        try object { reader, key throws(Failure) in
            if Self.matches(key, "index") {
                choice.index = try reader.optionalInt()
            } else if Self.matches(key, "message") {
                choice.message = try reader.message()
            } else if Self.matches(key, "finish_reason") {
                choice.finishReason = try reader.optionalString()
            } else {
                return false
            }
            return true
        }
        return choice
    }

    private mutating func message() throws(Failure) -> ChatCompletion.Message? {
        if try null() { return nil }
        var message = ChatCompletion.Message(role: nil, content: nil)
        try object { reader, key throws(Failure) in
            if Self.matches(key, "role") {
                message.role = try reader.optionalString().map(ChatRole.init(rawValue:))
            } else if Self.matches(key, "content") {
                message.content = try reader.optionalString() // an array of parts is left to the general reading
            } else {
                return false
            }
            return true
        }
        return message
    }

    /// Usage, in a completion or a stream's last chunk. A repeated key, or a count that is not
    /// plain digits, is left to the general reading.
    private mutating func usage() throws(Failure) -> Usage? {
        if try null() { return nil }
        var usage = Usage(promptTokens: nil, completionTokens: nil, totalTokens: nil)
        var seen = Seen(enforced: mode == .chunk)
        try object { reader, key throws(Failure) in
            if Self.matches(key, "prompt_tokens") {
                try seen.once(0)
                usage.promptTokens = try reader.count()
            } else if Self.matches(key, "completion_tokens") {
                try seen.once(1)
                usage.completionTokens = try reader.count()
            } else if Self.matches(key, "total_tokens") {
                try seen.once(2)
                usage.totalTokens = try reader.count()
            } else if Self.matches(key, "prompt_tokens_details") {
                try seen.once(3)
                usage.cachedPromptTokens = try reader.cachedTokens()
            } else {
                return false
            }
            return true
        }
        return usage
    }

    /// `prompt_tokens_details`'s `cached_tokens`, or nil (the object, or the member, absent or null).
    private mutating func cachedTokens() throws(Failure) -> Int? {
        if try null() { return nil }
        var cached: Int?
        var seen = Seen(enforced: mode == .chunk)
        try object { reader, key throws(Failure) in
            guard Self.matches(key, "cached_tokens") else { return false }
            try seen.once(0)
            cached = try reader.count()
            return true
        }
        return cached
    }

    // MARK: - A chunk's objects

    private mutating func chunk() throws(Failure) -> ChatCompletionChunk {
        var chunk = ChatCompletionChunk(object: nil, choices: [])
        var seen = Seen()
        try object { reader, key throws(Failure) in
            if Self.matches(key, "id") {
                try seen.once(0)
                chunk.id = try reader.optionalString()
            } else if Self.matches(key, "object") {
                try seen.once(1)
                chunk.object = try reader.optionalString()
            } else if Self.matches(key, "created") {
                try seen.once(2)
                chunk.created = try reader.optionalDigits()
            } else if Self.matches(key, "model") {
                try seen.once(3)
                chunk.model = try reader.optionalString()
            } else if Self.matches(key, "choices") {
                try seen.once(4)
                chunk.choices = try reader.chunkChoices()
            } else if Self.matches(key, "usage") {
                try seen.once(5)
                chunk.usage = try reader.usage()
            } else {
                return false
            }
            return true
        }
        return chunk
    }

    private mutating func chunkChoices() throws(Failure) -> [ChatCompletionChunk.Choice] {
        try array { reader throws(Failure) in try reader.chunkChoice() }
    }

    private mutating func chunkChoice() throws(Failure) -> ChatCompletionChunk.Choice {
        var choice = ChatCompletionChunk.Choice(index: nil, delta: ChatCompletionChunk.Delta())
        var seen = Seen()
        try object { reader, key throws(Failure) in
            if Self.matches(key, "index") {
                try seen.once(0)
                choice.index = try reader.optionalDigits()
            } else if Self.matches(key, "delta") {
                try seen.once(1)
                choice.delta = try reader.delta()
            } else if Self.matches(key, "finish_reason") {
                try seen.once(2)
                choice.finishReason = try reader.optionalString()
            } else {
                return false
            }
            return true
        }
        return choice
    }

    private mutating func delta() throws(Failure) -> ChatCompletionChunk.Delta {
        var delta = ChatCompletionChunk.Delta()
        if try null() { return delta }
        var seen = Seen()
        try object { reader, key throws(Failure) in
            if Self.matches(key, "role") {
                try seen.once(0)
                delta.role = try reader.optionalString().map(ChatRole.init(rawValue:))
            } else if Self.matches(key, "content") {
                try seen.once(1)
                delta.content = try reader.optionalString() // an array of parts is left to JSONDecoder
            } else if Self.matches(key, "tool_calls") {
                try seen.once(2)
                // Only whether it is there: the calls are relayed as they came.
                delta.hasToolCalls = try !reader.null()
                if delta.hasToolCalls { try reader.skipValue(ofUnknownKey: key) }
            } else {
                return false
            }
            return true
        }
        return delta
    }

    /// The known keys an object has had: in a chunk, a second one is left to the general
    /// reading; in a completion, the last one is kept, as its general reading keeps it.
    private struct Seen {
        private var bits: UInt8 = 0
        var enforced = true

        init(enforced: Bool = true) {
            self.enforced = enforced
        }

        mutating func once(_ bit: UInt8) throws(Failure) {
            guard !enforced || bits & 1 << bit == 0 else { throw .unhandled }
            bits |= 1 << bit
        }
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
        guard let byte = peek(), byte == UInt8(ascii: "-") || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
        else {
            throw .unhandled
        }
        let number: Double
        do { number = try parser.parseNumber() } catch { throw .syntax }
        guard let whole = JSONValue.number(number).intValue else { throw .unhandled }
        return whole
    }

    /// A count, read as ``mode``'s general reading reads it.
    private mutating func count() throws(Failure) -> Int? {
        switch mode {
        case .completion: return try optionalInt()
        case .chunk: return try optionalDigits()
        }
    }

    /// A whole number written as plain digits (an optional `-`, no fraction or exponent) that
    /// fits `Int`, or null; any other number is left to the general reading.
    private mutating func optionalDigits() throws(Failure) -> Int? {
        if try null() { return nil }
        var index = parser.index
        let input = parser.input
        let negative = index < input.count && input[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        let start = index
        var value = 0
        while index < input.count, input[index] >= UInt8(ascii: "0"), input[index] <= UInt8(ascii: "9") {
            let (times, overflow) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(Int(input[index] - UInt8(ascii: "0")))
            guard !overflow, !overflow2 else { throw .unhandled }
            value = sum
            index += 1
        }
        // No digits, a leading zero, or a fraction or exponent next: not read here.
        guard index > start, input[start] != UInt8(ascii: "0") || index == start + 1 else { throw .unhandled }
        if index < input.count {
            let next = input[index]
            guard next != UInt8(ascii: "."), next | 0x20 != UInt8(ascii: "e") else { throw .unhandled }
        }
        parser.index = index
        return negative ? -value : value
    }

    /// Checks and skips the value of a member this reader does not use.
    private mutating func skipValue(ofUnknownKey key: UnsafeBufferPointer<UInt8>) throws(Failure) {
        guard UTF8Text.isValid(key) else { throw .syntax }
        do { _ = try parser.parseValue() } catch { throw .syntax }
    }

    // MARK: - Objects

    private mutating func enter() throws(Failure) {
        do { try parser.enter() } catch { throw .syntax }
    }

    private mutating func nextElement(_ first: inout Bool) throws(Failure) -> Bool {
        do { return try parser.nextElement(&first) } catch { throw .syntax }
    }

    /// Reads the object at the reader. `member` reads the value of a key it knows and returns
    /// true; the values of the other keys are checked and skipped. Anything but an object is
    /// left to the general reading.
    private mutating func object(_ member: (inout Self, UnsafeBufferPointer<UInt8>) throws(Failure) -> Bool)
        throws(Failure)
    {
        guard peek() == UInt8(ascii: "{") else { throw .unhandled }
        try enter()
        parser.index += 1
        var first = true
        while true {
            let name: JSONByteParser.MemberName?
            do { name = try parser.nextMemberName(&first) } catch { throw .syntax }
            switch name {
            case nil: return
            case .escaped?: throw .unhandled
            case .plain(let key)?:
                if try !member(&self, key) { try skipValue(ofUnknownKey: key) }
            }
        }
    }

    private static func matches(_ key: UnsafeBufferPointer<UInt8>, _ name: StaticString) -> Bool {
        JSONByteParser.name(key, is: name)
    }
}
