import HTTPServer
import JSON
import Telemetry

/// `GET|HEAD /api/health`: liveness, with the time and the version.
struct HealthRoute: ResponseHandler {
    let version: String

    func handle(_ request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        var body = JSONWriter(capacity: 96)
        body.object {
            $0.field("status", "ok")
            $0.field("timestamp", Timestamp.iso8601(now: Timestamp.realtime()))
            $0.field("version", version)
        }
        return HTTPResponse(headers: ["Content-Type": "application/json; charset=utf-8"], body: .bytes(body.bytes))
    }
}
