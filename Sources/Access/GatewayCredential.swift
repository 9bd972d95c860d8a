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
    /// session (a prefix alone included), or anything JWT-shaped
    /// (``CompactJWS/looksLikeJWT(_:)``).
    package static func isGatewayFormat(_ token: [UInt8]) -> Bool {
        token.starts(with: storeTokenPrefix.utf8) || token.starts(with: deviceSessionPrefix.utf8)
            || CompactJWS.looksLikeJWT(token)
    }

    /// Whether `token` is a prefix of the gateway's and nothing after it (`tgk_`, `tgd_`): a
    /// malformed credential, refused before any lookup and never taken for a placeholder key.
    package static func isBarePrefix(_ token: [UInt8]) -> Bool {
        token.elementsEqual(storeTokenPrefix.utf8) || token.elementsEqual(deviceSessionPrefix.utf8)
    }

    /// Why `token`, which matched nothing, failed, for the access log (never the token).
    package static func failureReason(_ token: [UInt8], jwtConfigured: Bool) -> String {
        if isBarePrefix(token) { return "malformed gateway credential" }
        if CompactJWS.looksLikeJWT(token) && !jwtConfigured { return "a JWT, and sign-in is not configured" }
        if token.starts(with: storeTokenPrefix.utf8) { return "unknown or revoked store token" }
        if token.starts(with: deviceSessionPrefix.utf8) { return "unknown or expired device session" }
        return "unknown token"
    }
}
