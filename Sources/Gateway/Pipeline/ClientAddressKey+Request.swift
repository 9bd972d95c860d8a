import Access
import HTTPServer

extension ClientAddressKey {
    /// The per-address key of the client that sent `request`: its socket's peer, or the
    /// address a trusted proxy's `X-Forwarded-For` (every line of it) names.
    func key(for request: HTTPRequest) -> String {
        let forwardedFor = request.headers.combinedValue("X-Forwarded-For")
        // An IPv4 peer without X-Forwarded-For is its own key: the socket's host is already
        // the address's one written form, so it is not parsed and written again.
        if forwardedFor == nil, case .v4(let host, _)? = request.remoteAddress { return host }
        return key(peer: request.remoteAddress?.host ?? "unknown", forwardedFor: forwardedFor)
    }
}
