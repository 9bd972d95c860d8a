/// Why `PLANS` could not be parsed: the 1-based position of the offending comma-separated
/// entry and what is wrong with it.
///
/// ```
/// entry 2: expected 4 or 5 fields (name:rpm:concurrent:tokensPerDay[:budgets]), found 3
/// entry 3: tokensPerDay is not a whole number from 1 to 1000000000 or -
/// ```
package struct PlanConfigError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A numeric field of an entry.
    package enum Field: String, Hashable, Sendable {
        case requestsPerMinute = "rpm"
        case concurrentRequests = "concurrent"
        case tokensPerDay
    }

    /// What is wrong with the entry.
    package enum Problem: Hashable, Sendable {
        /// The entry does not have four or five `:`-separated fields.
        case wrongFieldCount(found: Int)
        /// The fifth field is neither `-` nor budgets (``BudgetLimit/parseList(_:)``).
        case invalidBudget
        /// The name is not 1–64 of `[A-Za-z0-9._-]`.
        case invalidName
        /// A limit is neither `-` nor a whole number from 1 to ``PlanCatalog/maximumLimit``.
        case invalidLimit(Field)
        /// A plan of the same name was already listed at entry `first`.
        case duplicateName(first: Int)
    }

    /// The 1-based position of the entry among the comma-separated pieces (empty ones counted).
    package let position: Int
    package let problem: Problem

    package init(_ problem: Problem, position: Int) {
        self.problem = problem
        self.position = position
    }

    /// What went wrong, without the position.
    package var reason: String {
        switch problem {
        case .wrongFieldCount(let found):
            "expected 4 or 5 fields (name:rpm:concurrent:tokensPerDay[:budgets]), found \(found)"
        case .invalidBudget:
            "budgets is - or AMOUNT/day, AMOUNT/month, COUNTtokens/day or COUNTtokens/month (one of each), joined by +"
        case .invalidName: "the plan name is not 1-\(Plan.maximumNameLength) of [A-Za-z0-9._-]"
        case .invalidLimit(let field):
            "\(field.rawValue) is not a whole number from 1 to \(PlanCatalog.maximumLimit) or -"
        case .duplicateName(let first): "the same plan name as entry \(first)"
        }
    }

    /// `entry 2: expected 4 fields …`.
    package var description: String { "entry \(position): \(reason)" }
}
