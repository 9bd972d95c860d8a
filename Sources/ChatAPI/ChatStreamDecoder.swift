import JSON

#if canImport(Glibc)
    import Glibc
#endif

/// Reads a streamed chat completion, the `text/event-stream` body of a chat-completions call
/// with `"stream": true`, into chunks and its `[DONE]` terminator. Pure and incremental.
///
/// Each event of the default type (or `message`) holds either `[DONE]`, a
/// ``ChatCompletionChunk``, or an error object (`{"error": {…}}`, see
/// ``UpstreamErrorBody``); an event of type `error` is an error whatever its data. Events
/// of other types and events whose data is blank are ignored. After `[DONE]` everything
/// else is ignored, unread.
///
/// Any error is final: the decoder then throws it again on every call.
package struct ChatStreamDecoder: Sendable {
    private enum State: Sendable {
        case streaming
        case done
        case failed(ChatStreamError)
    }

    private var reader: ServerSentEventReader
    private var state = State.streaming

    /// Creates a decoder whose event-stream reader has the given bounds (in bytes).
    package init(
        maximumLineLength: Int = ServerSentEventReader.defaultMaximumLineLength,
        maximumEventLength: Int = ServerSentEventReader.defaultMaximumEventLength
    ) {
        self.reader = ServerSentEventReader(
            maximumLineLength: maximumLineLength, maximumEventLength: maximumEventLength)
    }

    /// Whether `[DONE]` has been read.
    package var isDone: Bool {
        if case .done = state { true } else { false }
    }

    /// How many comments (heartbeats) the stream has had so far.
    package var commentCount: Int {
        reader.commentCount
    }

    /// Reads the next bytes of the stream and returns the events they complete; after
    /// ``ChatStreamEvent/done`` it returns nothing more.
    /// - Throws: ``ChatStreamError/malformedChunk(length:)``,
    ///   ``ChatStreamError/upstreamError(_:)`` or ``ChatStreamError/eventStream(_:)``.
    package mutating func feed(_ bytes: some Collection<UInt8>) throws(ChatStreamError) -> [ChatStreamEvent] {
        switch state {
        case .done: return []
        case .failed(let error): throw error
        case .streaming: break
        }
        let events: [ServerSentEvent]
        do {
            events = try reader.feed(bytes)
        } catch {
            throw fail(.eventStream(error))
        }
        return try interpret(events, atEnd: false)
    }

    /// Ends the stream and returns the events of a last block that had no blank line after
    /// it (see ``ServerSentEventReader/finish()``).
    /// - Throws: ``ChatStreamError/truncated`` when `[DONE]` was never read, including when
    ///   the last block is an incomplete chunk; or the error of an earlier call.
    package mutating func finish() throws(ChatStreamError) -> [ChatStreamEvent] {
        switch state {
        case .done: return []
        case .failed(let error): throw error
        case .streaming: break
        }
        let result = try interpret(reader.finish(), atEnd: true)
        guard isDone else { throw fail(.truncated) }
        return result
    }

    private mutating func fail(_ error: ChatStreamError) -> ChatStreamError {
        state = .failed(error)
        return error
    }

    private mutating func interpret(_ events: [ServerSentEvent], atEnd: Bool) throws(ChatStreamError)
        -> [ChatStreamEvent]
    {
        var result: [ChatStreamEvent] = []
        result.reserveCapacity(events.count)
        for event in events {
            do {
                if let item = try Self.interpret(event) {
                    result.append(item)
                    if item == .done {
                        state = .done
                        break
                    }
                }
            } catch {
                // A malformed last block at the end of the stream is a cut-off chunk.
                if atEnd, case .malformedChunk = error {
                    throw fail(.truncated)
                }
                throw fail(error)
            }
        }
        return result
    }

    /// What one event of the stream holds: `[DONE]`, a chunk, or nothing of interest (nil);
    /// throws for an error object or a malformed chunk.
    package static func interpret(_ event: ServerSentEvent) throws(ChatStreamError) -> ChatStreamEvent? {
        switch event.event {
        case nil, "message":
            // Read where the event's text lies: no copy of it unless a chunk takes the slow way.
            var data = event.data
            let read = data.withUTF8 { utf8 -> Result<ChatStreamEvent?, ChatStreamError> in
                guard let payload = trimmed(utf8) else { return .success(nil) }
                if payload.elementsEqual("[DONE]".utf8) { return .success(.done) }
                // Only JSON with the token `"error"` can be an error object; the others skip
                // the check. (Inside a JSON string a quote is escaped, so `"error"` there is
                // a whole string value or a key.)
                let mayBeError = Self.containsErrorToken(payload)
                if !mayBeError, let chunk = try? ChatCompletionReader.readChunk(payload) {
                    return .success(.chunk(chunk))
                }
                return decode(Array(payload), mayBeError: mayBeError, length: utf8.count)
            }
            return try read.get()
        case "error":
            let body = UpstreamErrorBody.decode(from: Array(event.data.utf8))
            throw .upstreamError(body ?? UpstreamErrorBody(message: event.data))
        default:
            return nil
        }
    }

    /// A message event's JSON read by `JSONDecoder`: a chunk of a shape the byte reader left,
    /// or, when it holds the token `"error"`, maybe an error object.
    private static func decode(_ bytes: [UInt8], mayBeError: Bool, length: Int) -> Result<
        ChatStreamEvent?, ChatStreamError
    > {
        let decoded: Payload
        do {
            if mayBeError {
                decoded = try JSON.decode(Payload.self, from: bytes)
            } else {
                decoded = .chunk(try JSON.decode(ChatCompletionChunk.self, from: bytes))
            }
        } catch {
            return .failure(.malformedChunk(length: length))
        }
        switch decoded {
        case .chunk(let chunk): return .success(.chunk(chunk))
        case .error(let body): return .failure(.upstreamError(body))
        }
    }

    /// Whether `bytes` contain `"error"`, quotes included.
    private static func containsErrorToken(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let token: StaticString = #""error""#
        let length = token.utf8CodeUnitCount
        guard let base = bytes.baseAddress, bytes.count >= length else { return false }
        let last = bytes.count - length
        var start = 0
        // memchr finds each quote; memcmp compares the token there.
        while start <= last, let found = memchr(base + start, Int32(token.utf8Start.pointee), last - start + 1) {
            let quote = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
            if memcmp(base + quote, token.utf8Start, length) == 0 { return true }
            start = quote + 1
        }
        return false
    }

    /// The bytes without surrounding ASCII whitespace; `nil` when nothing is left.
    private static func trimmed(_ utf8: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8>? {
        func isSpace(_ byte: UInt8) -> Bool {
            byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
        }
        guard let first = utf8.firstIndex(where: { !isSpace($0) }),
            let last = utf8.lastIndex(where: { !isSpace($0) })
        else { return nil }
        return UnsafeBufferPointer(rebasing: utf8[first...last])
    }

    /// The JSON of a message event: a chunk or an error object, told apart in one parse.
    private enum Payload: Decodable {
        case chunk(ChatCompletionChunk)
        case error(UpstreamErrorBody)

        init(from decoder: any Decoder) throws {
            if let body = UpstreamErrorBody(ifErrorIn: decoder) {
                self = .error(body)
            } else {
                self = .chunk(try ChatCompletionChunk(from: decoder))
            }
        }
    }
}
