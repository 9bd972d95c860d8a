/// The currency prices, costs and budgets are in (`CURRENCY`): an ISO 4217 code, or `IRT`
/// for tomans, with the digits after the point its amounts are shown with. The gateway
/// converts nothing: every price is written in this currency.
package struct Currency: Sendable, Hashable {
    /// Three capital letters: `USD`, `EUR`, `IRR`, `IRT`, …
    package let code: String
    /// Digits shown after the point (`USD` 2, `IRR` 0 as rials are spent, `KWD` 3).
    package let minorUnits: Int

    /// The currency when `CURRENCY` is unset.
    package static let standard = Currency(uncheckedCode: "USD", minorUnits: 2)

    /// The minor units of the codes an operator is likely to bill in. ISO 4217 gives the rial
    /// two, which no price or bill uses: amounts in rials and in tomans are whole.
    static let knownMinorUnits: [String: Int] = [
        "USD": 2, "EUR": 2, "GBP": 2, "CHF": 2, "CAD": 2, "AUD": 2, "CNY": 2, "INR": 2, "RUB": 2, "TRY": 2,
        "AED": 2, "SAR": 2, "QAR": 2, "JPY": 0, "KRW": 0, "IRR": 0, "IRT": 0, "KWD": 3, "BHD": 3, "OMR": 3,
        "IQD": 3, "AFN": 2,
    ]

    private init(uncheckedCode: String, minorUnits: Int) {
        code = uncheckedCode
        self.minorUnits = minorUnits
    }

    /// `code` (three letters A–Z) with `minorUnits` (0–6) or, when nil, the known count for
    /// the code; an unknown code needs its minor units said.
    package init(code: String, minorUnits: Int? = nil) throws(PriceConfigError) {
        let bytes = Array(code.utf8)
        guard bytes.count == 3, bytes.allSatisfy({ $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) else {
            throw PriceConfigError.currency(
                "must be three capital letters (an ISO 4217 code such as USD or IRR, or IRT)")
        }
        guard let units = minorUnits ?? Self.knownMinorUnits[code] else {
            throw PriceConfigError.currency("\(code) is not a code the gateway knows: set CURRENCY_MINOR_UNITS (0-6)")
        }
        guard (0...6).contains(units) else { throw PriceConfigError.currency("minor units must be 0 to 6") }
        self.init(uncheckedCode: code, minorUnits: units)
    }

    /// `micros` as people read amounts of this currency (`12.35`).
    package func format(_ micros: Int64) -> String {
        Micros.format(micros, minorUnits: minorUnits)
    }
}
