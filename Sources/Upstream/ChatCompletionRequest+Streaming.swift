import ChatAPI

extension ChatCompletionRequest {
    /// The request as a streamed call's body: `stream: true` and the usage chunk asked for,
    /// which the gateway needs to count tokens.
    package func streamingBody() -> [UInt8] {
        var request = self
        request.stream = true
        request.streamOptions = StreamOptions(includeUsage: true)
        return request.jsonBytes()
    }
}
