package import Access
import Crypto
package import Store
package import Telemetry

/// Makes callers' tokens in the store, for the command line (`text-gateway tokens create`) and
/// the console alike: the same checks of a token's user, plan and label, and a secret that is
/// returned once and kept nowhere.
package enum TokenIssuer {
    /// What is wrong with a token's user, plan or label, if anything: the field and why.
    package static func problem(user: String, plan: String, label: String?, plans: PlanCatalog)
        -> (field: String, message: String)?
    {
        guard CallerToken.isValidUserID(user) else { return ("user", "must be 1-128 of A-Z a-z 0-9 . _ @ + -") }
        guard plans.contains(plan) else {
            let known = plans.all.map(\.name).joined(separator: ", ")
            return ("plan", "\(plan) is not a plan of this gateway (PLANS has: \(known))")
        }
        if let label, !isPrintable(label, maximum: 100) { return ("label", "must be 1-100 printable characters") }
        return nil
    }

    /// Makes a token and stores its digest: the secret is returned, and kept nowhere.
    package static func issue(
        user: String, plan: String, label: String?, in store: any TokenRepository, now: Instant
    ) async throws(StoreError) -> (String, StoredToken) {
        var attempt = 0
        while true {
            let (token, stored) = newToken(user: user, plan: plan, label: label, now: now)
            do {
                try await store.insertToken(stored)
                return (token, stored)
            } catch {
                // A random id or digest that is taken already: draw again.
                attempt += 1
                if error.code != .constraint || attempt == 3 { throw error }
            }
        }
    }

    /// A new token (`tgk_` and 32 random bytes in base64url) and the record the store keeps of it.
    private static func newToken(user: String, plan: String, label: String?, now: Instant) -> (String, StoredToken) {
        let token = "tgk_" + Base64URL.encode(SecureRandom.bytes(32))
        let id = SHA256.hexString(SecureRandom.bytes(6))
        let stored = StoredToken(
            id: id, digest: SHA256.hash(Array(token.utf8)), userID: user, plan: plan, label: label,
            createdAtMilliseconds: Int64((now.secondsSinceEpoch * 1000).rounded(.down))
        )
        return (token, stored)
    }

    private static func isPrintable(_ text: String, maximum: Int) -> Bool {
        !text.isEmpty && text.count <= maximum
            && text.unicodeScalars.allSatisfy { $0.properties.generalCategory != .control }
    }
}
