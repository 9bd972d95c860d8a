import Access
import Pricing
import Telemetry
import Upstream

extension GatewayConfiguration {
    /// `CURRENCY`, `CURRENCY_MINOR_UNITS`, `PRICES` or `PRICES_FILE`, and `PRICES_REQUIRED`.
    mutating func readPrices(
        value: (String) -> String?, integer: (String, ClosedRange<Int>) throws(ConfigurationError) -> Int?,
        flag: (String) throws(ConfigurationError) -> Bool?, now: Instant = .now
    ) throws(ConfigurationError) {
        let minorUnits = try integer("CURRENCY_MINOR_UNITS", 0...6)
        do {
            currency = try Currency(code: value("CURRENCY") ?? Currency.standard.code, minorUnits: minorUnits)
        } catch {
            throw ConfigurationError("\(error)")
        }
        switch (value("PRICES"), value("PRICES_FILE")) {
        case (_?, _?):
            throw ConfigurationError("set PRICES or PRICES_FILE, not both")
        case (let text?, nil):
            do {
                prices = try PriceList.parse(text, currency: currency)
            } catch {
                throw ConfigurationError("PRICES: \(error)")
            }
        case (nil, let path?):
            guard let text = DotEnv.readText(path: path) else {
                throw ConfigurationError("PRICES_FILE cannot be read (at most 1 MiB of UTF-8 text)")
            }
            do {
                prices = try PriceList.parse(file: text, currency: currency)
            } catch {
                throw ConfigurationError("PRICES_FILE: \(error)")
            }
        case (nil, nil):
            prices = nil
        }
        pricesRequired = try flag("PRICES_REQUIRED") ?? false
        try readBudgets(value: value)
        guard pricesRequired else { return }
        guard let prices else {
            throw ConfigurationError("PRICES_REQUIRED is on but no price is set: set PRICES or PRICES_FILE")
        }
        let unpriced = unpricedModels(prices, at: now)
        guard unpriced.isEmpty else {
            throw ConfigurationError(
                "PRICES_REQUIRED is on but these models have no price in force: \(unpriced.joined(separator: ", "))")
        }
    }

    /// `BUDGETS` and `BUDGET_TIMEZONE` (read after `PLANS` and the prices).
    mutating func readBudgets(value: (String) -> String?) throws(ConfigurationError) {
        if let text = value("BUDGETS") {
            switch BudgetSettings.parse(text) {
            case .success(let settings): budgets = settings
            case .failure(let error): throw ConfigurationError("BUDGETS: \(error)")
            }
        }
        if let zone = value("BUDGET_TIMEZONE") {
            guard let calendar = BudgetCalendar(zone: zone) else {
                throw ConfigurationError(
                    "BUDGET_TIMEZONE must be UTC, an offset such as +03:30, or a zone without daylight saving time "
                        + "such as Asia/Tehran")
            }
            budgetCalendar = calendar
        }
        let moneyBudgets = (budgets.guests + budgets.devices + budgets.gateway + plans.all.flatMap(\.budgets))
            .contains { $0.unit == .micros }
        if moneyBudgets, prices == nil {
            throw ConfigurationError("a budget in money needs prices: set PRICES or PRICES_FILE, or budget in tokens")
        }
    }

    /// Whether any budget is set: `BUDGETS`, or a plan's own.
    var hasBudgets: Bool { !budgets.isEmpty || plans.all.contains { !$0.budgets.isEmpty } }

    /// Every model id an upstream may be asked for: each upstream's default, per-task and
    /// `/v1` alias models.
    var upstreamModels: Set<String> {
        var models: Set<String> = []
        for upstream in effectiveUpstreams {
            if let model = upstream.defaultModel { models.insert(model) }
            models.formUnion(upstream.taskModels.values)
            models.formUnion(upstream.aliasModels.values)
        }
        return models
    }

    /// The upstream models without a price in force at `now`, sorted.
    func unpricedModels(_ prices: PriceList, at now: Instant) -> [String] {
        let milliseconds = Int64((now.secondsSinceEpoch * 1000).rounded(.down))
        return upstreamModels.filter { prices.price(of: $0, at: milliseconds) == nil }.sorted()
    }
}
