import Upstream

extension UpstreamFailure {
    /// What the client is answered with: the one place an upstream failure becomes the
    /// gateway's error (it carries the kind, which the finisher records as the outcome).
    var error: GatewayError {
        var error: GatewayError
        switch kind {
        case .connect, .tls, .rejected, .serverError, .streamError, .unreadable, .transport: error = .upstreamError
        case .timeout: error = .upstreamTimeout
        case .busy:
            error = .upstreamBusy
            if let retryAfter { error.headers.add(name: "Retry-After", value: retryAfter) }
        case .contextLength: error = .contextLengthExceeded
        case .noContent: error = .emptyResult
        case .invalidOutput: error = .invalidModelOutput
        }
        error.upstreamKind = kind
        return error
    }
}
