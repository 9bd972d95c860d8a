/// Who made a request, as a valid bearer token told the gateway: the user id it was issued
/// to and the name of its plan.
///
/// Safe to log (the access log carries ``userID``); it holds nothing secret.
public struct Caller: Sendable, Hashable {
    /// The user the token was issued to.
    public let userID: String
    /// The plan the token's limits come from; see ``PlanCatalog/plan(named:)``.
    public let plan: String
    /// The store token's id when the token came from the store (its last use is recorded).
    public let tokenID: String?

    public init(userID: String, plan: String, tokenID: String? = nil) {
        self.userID = userID
        self.plan = plan
        self.tokenID = tokenID
    }
}
