/// `GET /api/health`: open to anyone, outside every limit.
struct HealthFeature: GatewayFeature {
    let version: String

    var routes: [Route] {
        [Route(method: .GET, path: "/api/health", middleware: [], handler: HealthRoute(version: version))]
    }
}
