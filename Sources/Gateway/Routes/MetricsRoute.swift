import Access
import HTTPServer
import Telemetry

/// `GET /metrics`: the Prometheus exposition; with `METRICS_TOKEN` set, only for a bearer of it.
struct MetricsRoute: ResponseHandler {
    let registry: MetricsRegistry
    let token: String?

    func handle(_ request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        if let token {
            guard BearerCredentials.matches(authorization: request.headers["Authorization"], secret: token) else {
                throw .unauthorized
            }
        }
        return HTTPResponse(
            headers: ["Content-Type": MetricsRegistry.contentType], body: .bytes(Array(registry.exposition().utf8)))
    }
}
