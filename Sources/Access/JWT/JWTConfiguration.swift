/// Sign-in with the app's own JWTs (docs/api.md, "Sign-in with the app's JWTs"): the keys
/// and the policy, as the `JWT_*` variables set them.
package struct JWTConfiguration: Sendable {
    package var policy = JWTPolicy()
    /// `JWT_HS256_SECRET`'s bytes (at least ``minimumSecretBytes``).
    package var hs256Secret: [UInt8]?
    /// `JWT_JWKS_FILE`, and the key set it held when the configuration was read.
    package var jwksFile: (path: String, keys: JWKSet)?
    /// `JWT_JWKS_URL`.
    package var jwksURL: String?
    /// `JWT_JWKS_REFRESH_SECONDS`.
    package var jwksRefresh: Duration = .seconds(600)
    /// `JWT_CACHE_ENTRIES`: most verified tokens remembered.
    package var cacheEntries = 10_000

    /// The shortest HS256 secret accepted: 256 bits, the hash's size (RFC 7518 §3.2).
    package static let minimumSecretBytes = 32

    package init() {}

    /// What the start log says: the key sources, never a secret or a URL's query.
    package var logDescription: String {
        var sources: [String] = []
        if hs256Secret != nil { sources.append("hs256") }
        if jwksFile != nil { sources.append("jwks_file") }
        if jwksURL != nil { sources.append("jwks_url") }
        return sources.joined(separator: "+")
    }

    /// A verifier for this configuration, with the file's key set in force.
    package func makeVerifier() -> JWTVerifier {
        JWTVerifier(
            policy: policy, hs256Secret: hs256Secret, keySet: jwksFile?.keys ?? JWKSet(keys: []),
            cacheCapacity: cacheEntries)
    }

    /// Whether a `JWT_JWKS_URL` may be fetched: `https://`, or `http://` to a loopback
    /// address only (a key set read in clear from elsewhere could be anyone's keys).
    package static func isAcceptableKeySetURL(_ url: String) -> Bool {
        let lower = url.lowercased()
        if lower.hasPrefix("https://") { return lower.count > "https://".count }
        guard lower.hasPrefix("http://") else { return false }
        let rest = lower.dropFirst("http://".count)
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !authority.contains("@") else { return false }
        let host: Substring
        if authority.hasPrefix("[") {
            host = authority.prefix { $0 != "]" }.dropFirst()
        } else {
            host = authority.prefix { $0 != ":" }
        }
        return host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }
}
