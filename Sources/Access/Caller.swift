/// Who made a request, as a valid bearer token told the gateway: the user id it was issued
/// to and the name of its plan.
///
/// Safe to log (the access log carries ``userID``); it holds nothing secret.
package struct Caller: Sendable, Hashable {
    /// The user the token was issued to; `jwt:<sub>` for a sign-in JWT's subject.
    package let userID: String
    /// The plan the token's limits come from; see ``PlanCatalog/plan(named:)``.
    package let plan: String
    /// The store token's id when the token came from the store (its last use is recorded).
    package let tokenID: String?

    /// The user id of a sign-in JWT's `sub`: `jwt:<sub>`. A gateway token's user id can hold
    /// no `:` (``CallerToken/isValidUserID(_:)``), so a JWT's `sub` of `erin` can never reach
    /// the rows, limits or history of the gateway-token user `erin`.
    package static func userID(jwtSubject subject: String) -> String { "jwt:" + subject }

    package init(userID: String, plan: String, tokenID: String? = nil) {
        self.userID = userID
        self.plan = plan
        self.tokenID = tokenID
    }
}
