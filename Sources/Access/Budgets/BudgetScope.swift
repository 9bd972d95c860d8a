/// What a budget bounds the sum of: the requests of one caller (from its plan), of all guests
/// together, of all device sessions together, or of the whole gateway.
package enum BudgetScope: String, Sendable, Hashable, CaseIterable {
    case caller
    case guests
    case devices
    case gateway
}

/// The period a budget's sum runs over: a day or a calendar month of ``BudgetCalendar``'s
/// zone.
package enum BudgetPeriod: String, Sendable, Hashable {
    case day
    case month
}

/// What a budget counts: money (micro-units of the currency) or tokens.
package enum BudgetUnit: String, Sendable, Hashable {
    case micros
    case tokens
}
