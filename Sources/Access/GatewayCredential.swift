/// The shapes of the credentials the gateway itself issues or verifies. A token in one of
/// them that does not get in has failed — unknown, revoked, expired or forged — and is
/// refused on every configuration; only a token in none of them can be an OpenAI SDK's
/// placeholder key (``AuthMiddleware``).
package enum GatewayCredential {
    /// A store token's prefix (`text-gateway tokens create`).
    static let storeTokenPrefix = "tgk_"
    /// A device session's prefix (App Attest), reserved so that no placeholder rule can
    /// ever take one for a guest.
    static let deviceSessionPrefix = "tgd_"

    /// Whether `token` is in one of the gateway's own formats: a store token, a device
    /// session, or anything JWT-shaped (``CompactJWS/looksLikeJWT(_:)``).
    package static func isGatewayFormat(_ token: [UInt8]) -> Bool {
        hasPrefix(token, storeTokenPrefix) || hasPrefix(token, deviceSessionPrefix) || CompactJWS.looksLikeJWT(token)
    }

    /// Why `token`, which matched nothing, failed, for the access log (never the token).
    package static func failureReason(_ token: [UInt8], jwtConfigured: Bool) -> String {
        if CompactJWS.looksLikeJWT(token) && !jwtConfigured { return "a JWT, and sign-in is not configured" }
        if hasPrefix(token, storeTokenPrefix) { return "unknown or revoked store token" }
        if hasPrefix(token, deviceSessionPrefix) { return "unknown or expired device session" }
        return "unknown token"
    }

    private static func hasPrefix(_ token: [UInt8], _ prefix: String) -> Bool {
        token.count > prefix.utf8.count && token.starts(with: prefix.utf8)
    }
}
