/// The IMF-fixdate format of HTTP dates (RFC 9110 §5.6.7): `Sun, 06 Nov 1994 08:49:37 GMT`.
package enum HTTPDate {
    /// Earliest formatted time, 0001-01-01T00:00:00Z; earlier times are clamped to it.
    static let minimumSeconds = -62_135_596_800
    /// Latest formatted time, 9999-12-31T23:59:59Z; later times are clamped to it.
    static let maximumSeconds = 253_402_300_799

    private static let weekdays: [StaticString] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months: [StaticString] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]

    /// The IMF-fixdate for a Unix time in seconds (UTC). Times outside years 1–9999 are
    /// clamped to that range.
    package static func format(unixSeconds: Int) -> String {
        let seconds = min(max(unixSeconds, minimumSeconds), maximumSeconds)
        let days = seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400
        let secondOfDay = seconds - days * 86400
        let (year, month, day) = civilDate(daysSinceEpoch: days)
        let weekday = ((days % 7) + 11) % 7 // 1970-01-01 was a Thursday (4).

        var bytes: [UInt8] = []
        bytes.reserveCapacity(29)
        append(weekdays[weekday], to: &bytes)
        bytes.append(contentsOf: ", ".utf8)
        appendDigits(day, count: 2, to: &bytes)
        bytes.append(ASCII.space)
        append(months[month - 1], to: &bytes)
        bytes.append(ASCII.space)
        appendDigits(year, count: 4, to: &bytes)
        bytes.append(ASCII.space)
        appendDigits(secondOfDay / 3600, count: 2, to: &bytes)
        bytes.append(ASCII.colon)
        appendDigits(secondOfDay / 60 % 60, count: 2, to: &bytes)
        bytes.append(ASCII.colon)
        appendDigits(secondOfDay % 60, count: 2, to: &bytes)
        bytes.append(contentsOf: " GMT".utf8)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Year, month (1–12) and day (1–31) of a day counted from 1970-01-01, in the proleptic
    /// Gregorian calendar (H. Hinnant's `civil_from_days`).
    static func civilDate(daysSinceEpoch days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    private static func append(_ string: StaticString, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: string.utf8Start, count: string.utf8CodeUnitCount))
    }

    private static func appendDigits(_ value: Int, count: Int, to bytes: inout [UInt8]) {
        var divisor = 1
        for _ in 1..<count { divisor *= 10 }
        var rest = value
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(rest / divisor % 10))
            rest %= divisor
            divisor /= 10
        }
    }
}
