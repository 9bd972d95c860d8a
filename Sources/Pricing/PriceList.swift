/// The prices of the upstream models (`PRICES`, `PRICES_FILE`) in one currency: for each
/// model id, one price or several, each from its own instant on.
///
/// The grammar, one entry per line of `PRICES_FILE` or separated by `;` in `PRICES`:
///
///     MODEL=INPUT/OUTPUT[@FROM]
///     MODEL=INPUT/CACHED/OUTPUT[@FROM]
///
/// Amounts are per million tokens in units of the currency (`0.15`, at most six digits after
/// the point); `FROM` is an RFC 3339 instant (`2026-12-01T00:00:00Z`, `…+03:30`) or a date (its
/// midnight UTC). In a file, `#` starts a comment and blank lines are skipped. A model may be
/// listed again with a later `FROM`: a call is priced by the entry in force when it was made.
package struct PriceList: Sendable {
    package let currency: Currency
    /// Each model's prices, the earliest first (one without `FROM` before any with one).
    private let prices: [String: [ModelPrice]]

    package init(currency: Currency, prices: [String: [ModelPrice]]) {
        self.currency = currency
        self.prices = prices.mapValues { list in
            list.sorted { ($0.effectiveFrom ?? Int64.min) < ($1.effectiveFrom ?? Int64.min) }
        }
    }

    /// The models with a price (at some instant).
    package var models: Set<String> { Set(prices.keys) }

    /// Whether no model has a price.
    package var isEmpty: Bool { prices.isEmpty }

    /// The price of `model` in force at `milliseconds` since the epoch: the entry with the
    /// latest `FROM` not after it; nil when the model has none in force then.
    package func price(of model: String, at milliseconds: Int64) -> ModelPrice? {
        guard let list = prices[model] else { return nil }
        var found: ModelPrice?
        for price in list {
            guard (price.effectiveFrom ?? Int64.min) <= milliseconds else { break }
            found = price
        }
        return found
    }

    /// What `tokens` of `model` cost at `milliseconds`, in micro-units; nil when the model
    /// has no price then (the call is unpriced).
    package func cost(of tokens: TokenCounts, model: String, at milliseconds: Int64) -> Int64? {
        price(of: model, at: milliseconds)?.cost(of: tokens)
    }

    /// The entries of `PRICES`: separated by `;` or line breaks.
    package static func parse(_ text: String, currency: Currency) throws(PriceConfigError) -> PriceList {
        var entries: [(line: Int?, text: Substring)] = []
        for part in text.split(whereSeparator: { $0 == ";" || $0.isNewline }) {
            let trimmed = part.trimmingSpaces
            if !trimmed.isEmpty { entries.append((nil, trimmed)) }
        }
        return try build(entries, currency: currency)
    }

    /// The lines of `PRICES_FILE`: an entry a line, `#` comments, blank lines skipped.
    package static func parse(file text: String, currency: Currency) throws(PriceConfigError) -> PriceList {
        var entries: [(line: Int?, text: Substring)] = []
        // By Character: "\r\n" is one, and a line break either way.
        for (index, line) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let trimmed = content.trimmingSpaces
            if !trimmed.isEmpty { entries.append((index + 1, trimmed)) }
        }
        return try build(entries, currency: currency)
    }

    private static func build(_ entries: [(line: Int?, text: Substring)], currency: Currency)
        throws(PriceConfigError) -> PriceList
    {
        var prices: [String: [ModelPrice]] = [:]
        for (line, text) in entries {
            let (model, price) = try entry(text, line: line)
            if prices[model]?.contains(where: { $0.effectiveFrom == price.effectiveFrom }) == true {
                throw .entry(line: line, "\(model) has two prices from the same instant")
            }
            prices[model, default: []].append(price)
        }
        return PriceList(currency: currency, prices: prices)
    }

    /// One `MODEL=INPUT[/CACHED]/OUTPUT[@FROM]`.
    private static func entry(_ text: Substring, line: Int?) throws(PriceConfigError) -> (String, ModelPrice) {
        guard let equals = text.firstIndex(of: "=") else {
            throw .entry(line: line, "an entry is MODEL=INPUT/OUTPUT or MODEL=INPUT/CACHED/OUTPUT")
        }
        let model = String(text[..<equals].trimmingSpaces)
        guard !model.isEmpty, model.utf8.count <= 200,
            model.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "=") })
        else {
            throw .entry(line: line, "a model id is 1-200 visible ASCII characters")
        }
        var rest = text[text.index(after: equals)...]
        var effectiveFrom: Int64?
        if let at = rest.firstIndex(of: "@") {
            guard let instant = RFC3339.milliseconds(rest[rest.index(after: at)...].trimmingSpaces) else {
                throw .entry(line: line, "\(model): @ takes an RFC 3339 instant (2026-12-01T00:00:00Z) or a date")
            }
            effectiveFrom = instant
            rest = rest[..<at]
        }
        let amounts = rest.split(separator: "/", omittingEmptySubsequences: false).map { $0.trimmingSpaces }
        guard amounts.count == 2 || amounts.count == 3 else {
            throw .entry(line: line, "\(model): the price is INPUT/OUTPUT or INPUT/CACHED/OUTPUT per million tokens")
        }
        var values: [Int64] = []
        for amount in amounts {
            guard let value = Micros.parse(amount) else {
                throw .entry(
                    line: line,
                    "\(model): an amount is a number of units per million tokens, at most six digits after the point")
            }
            values.append(value)
        }
        let price =
            values.count == 2
            ? ModelPrice(input: values[0], output: values[1], effectiveFrom: effectiveFrom)
            : ModelPrice(input: values[0], cachedInput: values[1], output: values[2], effectiveFrom: effectiveFrom)
        return (model, price)
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var slice = self
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" || last == "\r" { slice.removeLast() }
        return slice
    }
}
