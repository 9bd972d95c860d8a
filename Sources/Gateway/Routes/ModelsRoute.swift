import HTTPServer
import JSON

/// `GET /v1/models`: the model aliases this gateway allows.
struct ModelsRoute: ResponseHandler {
    let aliases: [(alias: String, model: String)]

    func handle(_ request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        var body = JSONWriter()
        body.object {
            $0.field("object", "list")
            $0.field("data", array: aliases) { item, alias in
                item.field("id", alias.alias)
                item.field("object", "model")
                item.field("created", 0)
                item.field("owned_by", "text-gateway")
            }
        }
        return HTTPResponse(headers: ["Content-Type": "application/json; charset=utf-8"], body: .bytes(body.bytes))
    }
}
