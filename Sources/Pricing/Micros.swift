/// Money as whole micro-units of the operator's currency (millionths of its unit), end to
/// end: prices, costs and budgets are integers, so sums are exact and no two instances round
/// the same amount differently.
package enum Micros {
    /// Micro-units in one unit of the currency.
    package static let perUnit: Int64 = 1_000_000

    /// The largest amount a price or a budget may be written with: a thousand trillion units
    /// (10^21 micro-units would not fit), far above any bill in any currency.
    package static let maximum: Int64 = 1_000_000_000_000_000_000

    /// `text` as micro-units: digits with at most one `.` and at most six digits after it
    /// (`0.15` is 150,000; `12` is 12,000,000). Nil for anything else, for a value over
    /// ``maximum``, and for a finer amount than one micro-unit, which cannot be kept exactly.
    package static func parse(_ text: some StringProtocol) -> Int64? {
        var whole: Int64 = 0
        var fraction: Int64 = 0
        var fractionDigits = 0
        var digits = 0
        var seenPoint = false
        for byte in text.utf8 {
            if byte == UInt8(ascii: ".") {
                guard !seenPoint else { return nil }
                seenPoint = true
                continue
            }
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let digit = Int64(byte - UInt8(ascii: "0"))
            digits += 1
            if seenPoint {
                fractionDigits += 1
                guard fractionDigits <= 6 else { return nil }
                fraction = fraction * 10 + digit
            } else {
                // At most 10^12 before this digit: no overflow.
                whole = whole * 10 + digit
                guard whole <= maximum / perUnit else { return nil }
            }
        }
        guard digits > 0, !(seenPoint && fractionDigits == 0) else { return nil }
        for _ in fractionDigits..<6 { fraction *= 10 }
        let value = whole * perUnit + fraction
        return value <= maximum ? value : nil
    }

    /// `micros` in units of the currency, with `minorUnits` digits after the point, rounded
    /// half away from zero (`1_235_000` with 2 minor units is `1.24`): for people to read;
    /// sums are made of the micro-units, never of these.
    package static func format(_ micros: Int64, minorUnits: Int) -> String {
        let places = min(6, max(0, minorUnits))
        var step: Int64 = 1
        for _ in places..<6 { step *= 10 }
        let negative = micros < 0
        let magnitude = micros.magnitude
        let rounded = (magnitude / UInt64(step)) + (magnitude % UInt64(step) * 2 >= UInt64(step) ? 1 : 0)
        var scale: UInt64 = 1
        for _ in 0..<places { scale *= 10 }
        var text = negative && rounded > 0 ? "-" : ""
        text += String(rounded / scale)
        if places > 0 {
            let fraction = String(rounded % scale)
            text += "." + String(repeating: "0", count: places - fraction.count) + fraction
        }
        return text
    }
}
