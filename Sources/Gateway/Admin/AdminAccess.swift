import Access
import HTTPServer

/// The console's lock: every `/api/admin/…` call needs `Authorization: Bearer <ADMIN_TOKEN>`,
/// compared in constant time. A caller token opens nothing here, and the admin token is no
/// caller anywhere else: the routes behind it have no limits and leave no rows.
struct AdminAccess: Middleware {
    let token: String

    func handle(_ request: HTTPRequest, context: RequestContext, next: @escaping RouteResponder) async throws
        -> RouteAnswer
    {
        guard BearerCredentials.matches(authorization: request.headers["Authorization"], secret: token) else {
            context.update {
                $0.authFailure = request.headers["Authorization"] == nil ? "admin_missing" : "admin_token"
            }
            throw GatewayError.adminUnauthorized
        }
        return try await next(request, context)
    }
}
