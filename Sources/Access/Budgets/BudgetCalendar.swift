import Pricing

/// Where a budget's days and months begin: UTC, or a zone at a fixed offset from it
/// (`BUDGET_TIMEZONE`: `UTC`, `+03:30`, or a named zone that keeps one offset all year, such
/// as `Asia/Tehran`). A zone with daylight saving time is refused: its days are not all 24
/// hours, and a budget's day must be the same on every instance.
package struct BudgetCalendar: Sendable, Hashable {
    /// Seconds east of UTC.
    package let offsetSeconds: Int64

    package static let utc = BudgetCalendar(offsetSeconds: 0)

    package init(offsetSeconds: Int64) {
        self.offsetSeconds = offsetSeconds
    }

    /// Named zones without daylight saving time (Iran's ended in 2022), by their offset.
    static let fixedZones: [String: Int64] = [
        "UTC": 0, "Etc/UTC": 0, "GMT": 0, "Asia/Tehran": 12_600, "Asia/Kabul": 16_200, "Asia/Dubai": 14_400,
        "Asia/Baku": 14_400, "Asia/Baghdad": 10_800, "Asia/Riyadh": 10_800, "Asia/Qatar": 10_800,
        "Europe/Istanbul": 10_800, "Europe/Moscow": 10_800, "Asia/Karachi": 18_000, "Asia/Kolkata": 19_800,
        "Asia/Tashkent": 18_000, "Asia/Shanghai": 28_800, "Asia/Tokyo": 32_400,
    ]

    /// `BUDGET_TIMEZONE`'s value; nil for one that is neither a fixed zone nor `±HH:MM`.
    package init?(zone text: String) {
        if let offset = Self.fixedZones[text] {
            self.init(offsetSeconds: offset)
            return
        }
        let bytes = Array(text.utf8)
        guard bytes.count == 6, bytes[0] == UInt8(ascii: "+") || bytes[0] == UInt8(ascii: "-"),
            bytes[3] == UInt8(ascii: ":"),
            let hours = Int64(String(decoding: bytes[1...2], as: UTF8.self)),
            let minutes = Int64(String(decoding: bytes[4...5], as: UTF8.self)),
            hours <= 14, minutes < 60, bytes[1...2].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            bytes[4...5].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
        else { return nil }
        let sign: Int64 = bytes[0] == UInt8(ascii: "-") ? -1 : 1
        self.init(offsetSeconds: sign * (hours * 3600 + minutes * 60))
    }

    /// The day or month `seconds` (since the epoch) falls in, as a number that only grows:
    /// days since the epoch, or `year × 12 + month − 1`.
    package func period(_ period: BudgetPeriod, at seconds: Int64) -> Int64 {
        let day = Self.floorDivide(seconds + offsetSeconds, 86_400)
        switch period {
        case .day: return day
        case .month:
            let (year, month, _) = Self.civil(fromDays: day)
            return year * 12 + month - 1
        }
    }

    /// When the day or month `seconds` falls in began, in seconds since the epoch.
    package func start(of period: BudgetPeriod, at seconds: Int64) -> Int64 {
        let local = seconds + offsetSeconds
        let day = Self.floorDivide(local, 86_400)
        switch period {
        case .day: return day * 86_400 - offsetSeconds
        case .month:
            let (year, month, _) = Self.civil(fromDays: day)
            return Self.days(year: year, month: month, day: 1) * 86_400 - offsetSeconds
        }
    }

    /// Seconds from `seconds` to the end of its day or month (at least 1).
    package func secondsToEnd(of period: BudgetPeriod, at seconds: Int64) -> Int64 {
        let local = seconds + offsetSeconds
        let day = Self.floorDivide(local, 86_400)
        let end: Int64
        switch period {
        case .day:
            end = (day + 1) * 86_400
        case .month:
            let (year, month, _) = Self.civil(fromDays: day)
            let next = month == 12 ? (year + 1, Int64(1)) : (year, month + 1)
            end = Self.days(year: next.0, month: next.1, day: 1) * 86_400
        }
        return max(1, end - local)
    }

    static func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        value >= 0 ? value / divisor : -((-value + divisor - 1) / divisor)
    }

    /// The proleptic Gregorian date of a day since the epoch.
    static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let date = RFC3339.civilDate(daysSinceEpoch: Int(days))
        return (Int64(date.year), Int64(date.month), Int64(date.day))
    }

    /// Days since the epoch of a date.
    static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        Int64(RFC3339.daysSinceEpoch(year: Int(year), month: Int(month), day: Int(day)))
    }
}
