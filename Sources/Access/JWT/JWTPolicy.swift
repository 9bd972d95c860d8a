import JSON
import Telemetry

/// What a verified token's claims must say, from configuration (docs/api.md, "Sign-in with
/// the app's JWTs"), and who the caller then is.
package struct JWTPolicy: Sendable {
    /// `JWT_ISSUER`: when set, `iss` must equal it.
    package var issuer: String?
    /// `JWT_AUDIENCE` (a comma-separated list): when set, `aud` (a string or an array of
    /// them) must name one of these.
    package var audiences: [String] = []
    /// `JWT_LEEWAY_SECONDS`: the clock skew allowed on `exp`, `nbf` and `iat`.
    package var leewaySeconds: Double = 30
    /// `JWT_PLAN_CLAIM`: the claim naming the caller's plan, a dotted path into nested
    /// objects (`app_metadata.plan`). A plan the catalog does not have is `default`.
    package var planClaim = ["plan"]
    /// The plans a token may name.
    package var plans = PlanCatalog()
    /// `JWT_ALGORITHMS`: the algorithms accepted at all (each also needs its key).
    package var algorithms: Set<JWTAlgorithm> = Set(JWTAlgorithm.allCases)

    /// The longest `sub` accepted.
    package static let maximumSubjectLength = 128

    package init() {}

    /// The caller the claims name, or why they are refused at `now`.
    func caller(for claims: JWTClaims, now: Instant) throws(JWTFailure) -> (caller: Caller, expiresAt: Double) {
        let seconds = now.secondsSinceEpoch
        guard let expiry = try? claims.date("exp") else { throw .missingExpiry }
        guard seconds <= expiry + leewaySeconds else { throw .expired }
        if let notBefore = try claims.date("nbf"), seconds + leewaySeconds < notBefore { throw .notYetValid }
        if let issuedAt = try claims.date("iat"), seconds + leewaySeconds < issuedAt { throw .notYetValid }
        if let issuer {
            guard claims["iss"] == .string(issuer) else { throw .issuer }
        }
        if !audiences.isEmpty {
            switch claims["aud"] {
            case .string(let audience)?:
                guard audiences.contains(audience) else { throw .audience }
            case .array(let list)?:
                guard list.contains(where: { $0.stringValue.map(audiences.contains) == true }) else { throw .audience }
            default:
                throw .audience
            }
        }
        guard case .string(let subject)? = claims["sub"], Self.isValidSubject(subject) else { throw .subject }
        var plan = PlanCatalog.defaultName
        if case .string(let name)? = claims.value(at: planClaim), plans.contains(name) { plan = name }
        return (Caller(userID: Caller.userID(jwtSubject: subject), plan: plan), expiry + leewaySeconds)
    }

    /// Whether `subject` is 1–128 printable ASCII characters without spaces: as `jwt:<sub>`
    /// it becomes the user id of logs, limits and history.
    static func isValidSubject(_ subject: String) -> Bool {
        let bytes = subject.utf8
        return !bytes.isEmpty && bytes.count <= maximumSubjectLength && bytes.allSatisfy { (0x21...0x7E).contains($0) }
    }
}
