import Access
import EventLoop
import Telemetry

/// Who the caller is: the gateway's tokens, the store's, App Attest's device sessions and
/// sign-in JWTs, whose key set's sources (`JWT_JWKS_FILE`, `JWT_JWKS_URL`) are its services.
struct AuthenticationFeature: GatewayFeature {
    private let configuration: GatewayConfiguration
    private let store: GatewayStore?
    private let clock: @Sendable () -> Instant
    /// The verifier of sign-in JWTs, when `JWT_*` configure them.
    private let jwt: JWTVerifier?
    private let jwtMetrics: JWTMetrics?
    /// `JWT_JWKS_FILE`'s watcher, read again on SIGHUP.
    let keyFile: JWKSFileSource?
    let services: [any Service]

    init(_ parts: GatewayParts) {
        configuration = parts.configuration
        store = parts.store
        clock = parts.clock
        let jwt = parts.configuration.jwt?.makeVerifier()
        let jwtMetrics = jwt.map { JWTMetrics(registry: parts.registry, verifier: $0) }
        self.jwt = jwt
        self.jwtMetrics = jwtMetrics
        var keyFile: JWKSFileSource?
        var services: [any Service] = []
        if let settings = parts.configuration.jwt, let jwt {
            if let file = settings.jwksFile {
                let source = JWKSFileSource(path: file.path, verifier: jwt, logger: parts.logger, metrics: jwtMetrics)
                services.append(source.service)
                keyFile = source
            }
            // The URL's first fetch ends before the server listens: the first requests find the keys in force.
            if let url = settings.jwksURL, let client = parts.httpClient {
                services.append(
                    JWKSURLSource(
                        url: url, client: client, verifier: jwt, refreshInterval: settings.jwksRefresh,
                        logger: parts.logger, metrics: jwtMetrics
                    ))
            }
        }
        self.keyFile = keyFile
        self.services = services
    }

    /// Authentication is always a layer: even a gateway that knows no credential must refuse
    /// one in its own formats rather than serve it as a guest.
    func caller(required: Bool, placeholderGuests: Bool = false) -> AuthMiddleware {
        var middleware = AuthMiddleware(
            tokens: configuration.tokens, storeTokens: store?.tokens, jwt: jwt,
            jwtMetrics: configuration.metricsEnabled ? jwtMetrics : nil,
            required: required, placeholderGuests: placeholderGuests, clock: clock
        )
        middleware.devices = store?.devices
        middleware.devicesOnly = configuration.appAttest?.requirement == .all
        middleware.faults = store?.faults
        return middleware
    }
}
