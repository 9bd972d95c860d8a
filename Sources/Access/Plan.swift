/// The limits one class of callers runs under. `nil` means unlimited.
///
/// Plans come from `PLANS` through ``PlanCatalog``; a caller's plan is named by its token
/// entry, and callers without a token get ``PlanCatalog/guest``.
package struct Plan: Sendable, Hashable {
    /// The plan's name: 1–64 of `[A-Za-z0-9._-]`.
    package let name: String
    /// Requests a key may start in any 60-second window (sliding, one-second resolution).
    package let requestsPerMinute: Int?
    /// Requests a key may have running at once.
    package let concurrentRequests: Int?
    /// Upstream tokens a key may use per UTC day. A request is refused once the quota is
    /// used up; one that starts under it may finish over it.
    package let tokensPerDay: Int?
    /// What one caller of the plan may spend a day or a month, in money or tokens
    /// (``BudgetKeeper``); none: no budget of its own.
    package let budgets: [BudgetLimit]

    /// A plan. Limits below zero count as zero (every request refused).
    package init(
        name: String, requestsPerMinute: Int?, concurrentRequests: Int?, tokensPerDay: Int?,
        budgets: [BudgetLimit] = []
    ) {
        self.name = name
        self.budgets = budgets
        self.requestsPerMinute = requestsPerMinute.map { max(0, $0) }
        self.concurrentRequests = concurrentRequests.map { max(0, $0) }
        self.tokensPerDay = tokensPerDay.map { max(0, $0) }
    }

    /// Whether the plan limits nothing (a limiter keeps no state for it).
    package var isUnlimited: Bool {
        requestsPerMinute == nil && concurrentRequests == nil && tokensPerDay == nil
    }

    /// The longest plan name accepted.
    package static let maximumNameLength = 64

    /// Whether `text` is 1–64 of `[A-Za-z0-9._-]`.
    package static func isValidName(_ text: some StringProtocol) -> Bool {
        let bytes = text.utf8
        guard !bytes.isEmpty, bytes.count <= maximumNameLength else { return false }
        return bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                true
            default:
                false
            }
        }
    }
}
