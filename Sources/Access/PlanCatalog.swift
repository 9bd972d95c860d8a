/// The plans a gateway knows, by name, from `PLANS`.
///
/// `PLANS` is a comma-separated list of `name:rpm:concurrent:tokensPerDay[:budgets]` entries,
/// each limit a whole number or `-` for unlimited, and the optional budgets a caller of the
/// plan may spend (money in units of `CURRENCY`, or tokens; ``BudgetLimit/parseList(_:)``):
///
/// ```
/// PLANS=free:20:2:50000,pro:600:16:5000000:2/day+30/month,internal:-:-:-
/// ```
///
/// Two plans always exist: ``guest``, for callers without a token, and ``default``, for
/// tokens whose plan is not listed. `PLANS` may redefine either by listing its name.
package struct PlanCatalog: Sendable {
    /// The name of the plan callers without a token get.
    package static let guestName = "guest"
    /// The name of the plan for tokens whose plan is not listed.
    package static let defaultName = "default"

    /// The built-in guest plan: 30 requests a minute, 4 at once, 200,000 tokens a day.
    package static let builtInGuest = Plan(
        name: guestName, requestsPerMinute: 30, concurrentRequests: 4, tokensPerDay: 200_000)
    /// The built-in default plan: 60 requests a minute, 8 at once, 1,000,000 tokens a day.
    package static let builtInDefault = Plan(
        name: defaultName, requestsPerMinute: 60, concurrentRequests: 8, tokensPerDay: 1_000_000)

    /// The largest limit `PLANS` accepts (far above any real plan; keeps arithmetic safe).
    package static let maximumLimit = 1_000_000_000

    private let plans: [String: Plan]

    /// A catalog of the built-in plans and `plans`; a listed plan named `guest` or `default`
    /// replaces the built-in one, and of two plans with the same name the last one wins.
    package init(plans: [Plan] = []) {
        var table = [Self.guestName: Self.builtInGuest, Self.defaultName: Self.builtInDefault]
        for plan in plans { table[plan.name] = plan }
        self.plans = table
    }

    /// The plan for callers without a token.
    package var guest: Plan { plans[Self.guestName] ?? Self.builtInGuest }

    /// The plan for tokens whose plan is not listed.
    package var `default`: Plan { plans[Self.defaultName] ?? Self.builtInDefault }

    /// The plan called `name`, or ``default`` when none is.
    package func plan(named name: String) -> Plan {
        plans[name] ?? self.default
    }

    /// Whether a plan called `name` exists, built in or listed.
    package func contains(_ name: String) -> Bool {
        plans[name] != nil
    }

    /// The plan `caller` runs under: its own plan, or ``guest`` when there is no caller.
    package func plan(for caller: Caller?) -> Plan {
        guard let caller else { return guest }
        return plan(named: caller.plan)
    }

    /// Every plan, by name.
    package var all: [Plan] {
        plans.values.sorted { $0.name < $1.name }
    }

    /// Parses `PLANS`. Blanks around entries and fields are ignored, and so are empty
    /// entries; an empty text gives the built-in plans only.
    package static func parse(_ text: String) throws(PlanConfigError) -> PlanCatalog {
        var parsed: [Plan] = []
        var firstPosition: [String: Int] = [:]
        for (offset, piece) in text.split(separator: ",", omittingEmptySubsequences: false).enumerated() {
            let position = offset + 1
            let entry = trimmed(piece)
            guard !entry.isEmpty else { continue }
            let fields = entry.split(separator: ":", omittingEmptySubsequences: false).map(trimmed)
            guard fields.count == 4 || fields.count == 5 else {
                throw PlanConfigError(.wrongFieldCount(found: fields.count), position: position)
            }
            let name = String(fields[0])
            guard Plan.isValidName(name) else { throw PlanConfigError(.invalidName, position: position) }
            if let first = firstPosition[name] {
                throw PlanConfigError(.duplicateName(first: first), position: position)
            }
            firstPosition[name] = position
            let rpm = try limit(fields[1], .requestsPerMinute, position: position)
            let concurrent = try limit(fields[2], .concurrentRequests, position: position)
            let tokens = try limit(fields[3], .tokensPerDay, position: position)
            var budgets: [BudgetLimit] = []
            if fields.count == 5, fields[4] != "-" {
                guard let limits = BudgetLimit.parseList(fields[4]) else {
                    throw PlanConfigError(.invalidBudget, position: position)
                }
                budgets = limits
            }
            parsed.append(
                Plan(
                    name: name, requestsPerMinute: rpm, concurrentRequests: concurrent, tokensPerDay: tokens,
                    budgets: budgets))
        }
        return PlanCatalog(plans: parsed)
    }

    /// `nil` for `-`, else a whole number from 1 to ``maximumLimit``.
    private static func limit(_ text: Substring, _ field: PlanConfigError.Field, position: Int) throws(PlanConfigError)
        -> Int?
    {
        if text == "-" { return nil }
        // ASCII digits only: `Int(_:)` would also take a sign.
        guard !text.isEmpty, text.utf8.count <= 10,
            text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            let value = Int(text), value >= 1, value <= maximumLimit
        else { throw PlanConfigError(.invalidLimit(field), position: position) }
        return value
    }

    private static func trimmed(_ text: Substring) -> Substring {
        var text = text
        while let first = text.first, first.isWhitespace { text.removeFirst() }
        while let last = text.last, last.isWhitespace { text.removeLast() }
        return text
    }
}
