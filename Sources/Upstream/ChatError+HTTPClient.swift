import ChatAPI
import HTTPClient

extension ChatError {
    /// Maps a transport-level failure of the HTTP client.
    init(_ error: HTTPClientError) {
        switch error.kind {
        case .connectFailed: self = .couldNotConnect(detail: error.detail)
        case .timedOut: self = .timedOut
        case .cancelled: self = .cancelled
        case .responseTooLarge: self = .unreadableBody
        case .tls: self = .tlsFailed(detail: error.detail)
        case .invalidRequest, .transport, .shutdown: self = .transport(detail: error.description)
        }
    }
}
