import Pricing

/// One budget: at most `amount` of `unit` per `period`.
package struct BudgetLimit: Sendable, Hashable, CustomStringConvertible {
    package let period: BudgetPeriod
    package let unit: BudgetUnit
    /// Micro-units of the currency, or tokens.
    package let amount: Int64

    package init(period: BudgetPeriod, unit: BudgetUnit, amount: Int64) {
        self.period = period
        self.unit = unit
        self.amount = max(0, amount)
    }

    package var description: String {
        switch unit {
        case .micros: "\(Micros.format(amount, minorUnits: 6))/\(period.rawValue)"
        case .tokens: "\(amount)tokens/\(period.rawValue)"
        }
    }

    /// `AMOUNT/day` or `AMOUNT/month` (money in units of the currency, at most six digits after
    /// the point), or `COUNTtokens/day` and `COUNTtokens/month`; several joined by `+`
    /// (`5/day+100/month`). Nil for anything else, or for two budgets of the same unit and period.
    package static func parseList(_ text: Substring) -> [BudgetLimit]? {
        var limits: [BudgetLimit] = []
        for part in text.split(separator: "+", omittingEmptySubsequences: false) {
            let fields = part.split(separator: "/", omittingEmptySubsequences: false)
            guard fields.count == 2, let period = BudgetPeriod(rawValue: String(fields[1])) else { return nil }
            let amount = fields[0]
            let limit: BudgetLimit
            if amount.hasSuffix("tokens") {
                let digits = amount.dropLast("tokens".count)
                guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), digits.count <= 15,
                    let count = Int64(digits)
                else { return nil }
                limit = BudgetLimit(period: period, unit: .tokens, amount: count)
            } else {
                guard let micros = Micros.parse(amount) else { return nil }
                limit = BudgetLimit(period: period, unit: .micros, amount: micros)
            }
            guard !limits.contains(where: { $0.period == limit.period && $0.unit == limit.unit }) else { return nil }
            limits.append(limit)
        }
        return limits.isEmpty ? nil : limits
    }
}

/// `BUDGETS`: the budgets of all guests, all device sessions and the whole gateway (a
/// caller's own come from its plan, ``Plan/budgets``).
///
///     BUDGETS=gateway=50/day+1000/month;guests=2/day+300000tokens/day;devices=10/day
package struct BudgetSettings: Sendable, Hashable {
    package var guests: [BudgetLimit] = []
    package var devices: [BudgetLimit] = []
    package var gateway: [BudgetLimit] = []

    package init(guests: [BudgetLimit] = [], devices: [BudgetLimit] = [], gateway: [BudgetLimit] = []) {
        self.guests = guests
        self.devices = devices
        self.gateway = gateway
    }

    package var isEmpty: Bool { guests.isEmpty && devices.isEmpty && gateway.isEmpty }

    /// Parses `BUDGETS`: `SCOPE=LIMITS` entries separated by `;`, each scope at most once.
    package static func parse(_ text: String) -> Result<BudgetSettings, BudgetConfigError> {
        var settings = BudgetSettings()
        var seen: Set<String> = []
        for entry in text.split(separator: ";") {
            let trimmed = entry.filter { $0 != " " && $0 != "\t" }
            guard !trimmed.isEmpty else { continue }
            guard let equals = trimmed.firstIndex(of: "=") else {
                return .failure(BudgetConfigError("an entry is SCOPE=AMOUNT/PERIOD (gateway, guests or devices)"))
            }
            let scope = String(trimmed[..<equals])
            guard ["gateway", "guests", "devices"].contains(scope) else {
                return .failure(
                    BudgetConfigError(
                        "\(scope.prefix(40)) is not a scope: gateway, guests or devices "
                            + "(a caller's budget is its plan's)"
                    ))
            }
            guard seen.insert(scope).inserted else { return .failure(BudgetConfigError("\(scope) is listed twice")) }
            guard let limits = BudgetLimit.parseList(trimmed[trimmed.index(after: equals)...]) else {
                return .failure(
                    BudgetConfigError(
                        "\(scope): a budget is AMOUNT/day or AMOUNT/month (money) or COUNTtokens/day or "
                            + "COUNTtokens/month, several joined by +, one of each unit and period"))
            }
            switch scope {
            case "gateway": settings.gateway = limits
            case "guests": settings.guests = limits
            default: settings.devices = limits
            }
        }
        return .success(settings)
    }
}

/// Why `BUDGETS` was refused.
package struct BudgetConfigError: Error, Hashable, Sendable, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }
}
