/// What a streamed chat completion yields, as read by ``ChatStreamDecoder``.
package enum ChatStreamEvent: Hashable, Sendable {
    /// One chunk of the completion: a piece of text, a finish reason, or the usage.
    case chunk(ChatCompletionChunk)
    /// The stream's terminator, `data: [DONE]`.
    case done
}
