import Access
package import Gateway
import HTTPClient
import JSON
package import Telemetry
import TextTasks

/// `text-gateway jwt check`: what the gateway, as configured, decides about one token, in
/// words an operator setting up sign-in can act on. It prints the header, the claims the
/// gateway reads (marked unverified until the signature is checked), the key used and the
/// decision; never the token, its signature or a secret.
package enum JWTCheck {
    /// The report for `token` and the exit status: 0 accepted, 1 refused, 2 not configured.
    package static func run(token input: [UInt8], configuration: GatewayConfiguration, now: Instant = .now) async -> (
        output: String, status: Int32
    ) {
        guard let jwtConfiguration = configuration.jwt else {
            return ("sign-in is not configured: set JWT_HS256_SECRET, JWT_JWKS_FILE or JWT_JWKS_URL\n", 2)
        }
        // The newline `echo` adds, and any blanks around the token, are not part of it.
        let bytes = Array(TextTrim.trimmed(String(decoding: input, as: UTF8.self)).utf8)
        let verifier = jwtConfiguration.makeVerifier()
        var lines: [String] = []
        if let url = jwtConfiguration.jwksURL {
            lines.append(await fetchKeys(url: url, into: verifier))
        } else if let file = jwtConfiguration.jwksFile {
            lines.append("keys: \(describe(file.keys)) from JWT_JWKS_FILE")
        }
        if jwtConfiguration.hs256Secret != nil { lines.append("keys: an HS256 secret (JWT_HS256_SECRET)") }
        lines += describeToken(bytes, keySet: verifier.keySet, now: now)
        let status: Int32
        switch await verifier.verify(bytes, now: now) {
        case .success(let acceptance):
            lines.append(
                "decision: accepted: user \"\(acceptance.caller.userID)\" on plan \"\(acceptance.caller.plan)\", "
                    + "until \(date(acceptance.expiresAt))"
            )
            status = 0
        case .failure(let failure):
            lines.append("decision: refused (\(failure.reason)): \(failure)")
            lines.append("answer: 401 unauthorized, WWW-Authenticate: Bearer error=\"invalid_token\"")
            status = 1
        }
        return (lines.joined(separator: "\n") + "\n", status)
    }

    private static func fetchKeys(url: String, into verifier: JWTVerifier) async -> String {
        guard let client = try? HTTPClient() else { return "keys: cannot start the HTTP client to fetch JWT_JWKS_URL" }
        let line: String
        switch await JWKSURLSource.fetchSet(url: url, client: client) {
        case .success(let set):
            verifier.install(set)
            line = "keys: \(describe(set)) from JWT_JWKS_URL"
        case .failure(let error):
            line = "keys: JWT_JWKS_URL cannot be used: \(error)"
        }
        await client.shutdown()
        return line
    }

    private static func describe(_ set: JWKSet) -> String {
        let keys = set.keys.map { "\($0.algorithm.rawValue) kid=\($0.id ?? "(none)")" }
        let skipped = set.skipped > 0 ? " (\(set.skipped) other entries skipped)" : ""
        return "\(set.keys.count) key(s) [\(keys.joined(separator: ", "))]\(skipped)"
    }

    /// The header and the claims the gateway reads, before any check.
    private static func describeToken(_ token: [UInt8], keySet: JWKSet, now: Instant) -> [String] {
        guard token.count <= JWTVerifier.maximumTokenBytes else { return ["token: \(token.count) bytes"] }
        guard let jws = try? CompactJWS.parse(token) else {
            return ["token: not a compact JWS (three base64url parts with a JSON header)"]
        }
        let header = jws.header
        var lines = [
            "header: alg=\(header.algorithmName) kid=\(header.keyID ?? "(none)") typ=\(header.type ?? "(none)")"
                + (header.hasCritical ? " crit=(present)" : "")
        ]
        guard let claims = try? jws.claims() else {
            lines.append("claims: not one strict JSON object")
            return lines
        }
        func text(_ name: String) -> String {
            switch claims[name] {
            case nil: return "(none)"
            case .string(let value)?: return "\"\(value)\""
            case .array(let values)?:
                return "[" + values.map { $0.stringValue.map { "\"\($0)\"" } ?? "?" }.joined(separator: ", ") + "]"
            case .number(let value)?: return JSONWriter.decimal(value)
            default: return "(not a string)"
            }
        }
        func time(_ name: String) -> String {
            guard case .number(let seconds)? = claims[name] else { return text(name) }
            let delta = Int((seconds - now.secondsSinceEpoch).rounded())
            return "\(date(seconds)) (\(delta >= 0 ? "in \(delta)" : "\(-delta)") s\(delta < 0 ? " ago" : ""))"
        }
        lines.append("claims (unverified): sub=\(text("sub")) iss=\(text("iss")) aud=\(text("aud"))")
        lines.append(
            "times (unverified): exp=\(time("exp")) nbf=\(time("nbf")) iat=\(time("iat")) "
                + "now=\(date(now.secondsSinceEpoch))"
        )
        if let kid = header.keyID, header.algorithm != .hs256, !keySet.contains(id: kid) {
            lines.append("key: no key in the set has kid \"\(kid)\"")
        }
        return lines
    }

    private static func date(_ seconds: Double) -> String {
        guard seconds.isFinite, abs(seconds) < 1e13 else { return "(out of range)" }
        return Timestamp.iso8601(milliseconds: Int64((seconds * 1000).rounded(.down)))
    }
}
