import Access
import HTTPServer

extension ClientAddressKey {
    /// The per-address key of the client that sent `request`: its socket's peer, or the
    /// address a trusted proxy's `X-Forwarded-For` (every line of it) names.
    func key(for request: HTTPRequest) -> String {
        key(
            peer: request.remoteAddress?.host ?? "unknown",
            forwardedFor: request.headers.combinedValue("X-Forwarded-For"))
    }
}
