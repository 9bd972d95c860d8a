/// Why a streamed chat completion could not be read to its end.
///
/// Descriptions never contain the stream's data, which may hold user text or model output.
package enum ChatStreamError: Error, Hashable, Sendable, CustomStringConvertible {
    /// An event's data was neither `[DONE]` nor a chunk; `length` is its size in bytes.
    case malformedChunk(length: Int)
    /// The server sent an error object (`data: {"error": {…}}` or `event: error`) in the
    /// stream.
    case upstreamError(UpstreamErrorBody)
    /// The stream ended before `data: [DONE]`.
    case truncated
    /// The event stream broke its memory bounds.
    case eventStream(ServerSentEventError)

    package var description: String {
        switch self {
        case .malformedChunk(let length):
            "malformed stream chunk (\(length) bytes)"
        case .upstreamError(let body):
            "upstream error in stream (type: \(body.type ?? "none"), code: \(body.code ?? "none"))"
        case .truncated:
            "stream ended before [DONE]"
        case .eventStream(let error):
            error.description
        }
    }
}
