#if canImport(Glibc)
    import Glibc
#endif

/// Wall-clock timestamps for logs, `/api/health` and the store's rows.
package enum Timestamp {
    /// Now, as seconds and milliseconds since the epoch.
    package static func realtime() -> (seconds: Int, milliseconds: Int) {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return (ts.tv_sec, ts.tv_nsec / 1_000_000)
    }

    /// `2026-11-29T12:00:00.123Z`.
    package static func iso8601(now: (seconds: Int, milliseconds: Int)) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        appendISO8601(now: now, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `2026-11-29T12:00:00.123Z` to `bytes`, its digits written in place.
    package static func appendISO8601(now: (seconds: Int, milliseconds: Int), to bytes: inout [UInt8]) {
        var seconds = time_t(now.seconds)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func digits(_ value: Int, _ width: Int) {
            // Padded to `width`; a year past 9999 keeps all its digits.
            let value = max(0, value)
            var place = 1
            for _ in 1..<width { place *= 10 }
            while place <= value / 10 { place *= 10 }
            while place > 0 {
                bytes.append(UInt8(ascii: "0") + UInt8(value / place % 10))
                place /= 10
            }
        }
        digits(Int(parts.tm_year) + 1900, 4)
        bytes.append(UInt8(ascii: "-"))
        digits(Int(parts.tm_mon) + 1, 2)
        bytes.append(UInt8(ascii: "-"))
        digits(Int(parts.tm_mday), 2)
        bytes.append(UInt8(ascii: "T"))
        digits(Int(parts.tm_hour), 2)
        bytes.append(UInt8(ascii: ":"))
        digits(Int(parts.tm_min), 2)
        bytes.append(UInt8(ascii: ":"))
        digits(Int(parts.tm_sec), 2)
        bytes.append(UInt8(ascii: "."))
        digits(now.milliseconds, 3)
        bytes.append(UInt8(ascii: "Z"))
    }

    /// `2026-11-29T12:00:00.123Z` for milliseconds since the epoch.
    package static func iso8601(milliseconds: Int64) -> String {
        let seconds = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        return iso8601(now: (Int(seconds), Int(milliseconds - seconds * 1000)))
    }

    /// `2026-11-29` for a UTC day (days since the epoch).
    package static func date(day: Int64) -> String {
        String(iso8601(milliseconds: day * 86_400_000).prefix(10))
    }

    /// The UTC day (days since the epoch) of `YYYY-MM-DD`, or nil when it is not a real date.
    package static func day(fromDate text: String) -> Int64? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            parts.allSatisfy({ $0.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") } }),
            let year = Int32(parts[0]), let month = Int32(parts[1]), let dayOfMonth = Int32(parts[2]),
            (1...12).contains(month), (1...31).contains(dayOfMonth)
        else { return nil }
        var fields = tm()
        fields.tm_year = year - 1900
        fields.tm_mon = month - 1
        fields.tm_mday = dayOfMonth
        let seconds = timegm(&fields)
        let day = Int64(seconds) / 86_400
        // timegm normalises 2026-02-31 into March: such a date is not real.
        guard date(day: day) == text else { return nil }
        return day
    }
}
