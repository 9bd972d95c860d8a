#if canImport(Glibc)
import Glibc
#endif

/// Wall-clock timestamps for logs and `/api/health`.
enum Timestamp {
    /// Now, as seconds and milliseconds since the epoch.
    static func realtime() -> (seconds: Int, milliseconds: Int) {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return (ts.tv_sec, ts.tv_nsec / 1_000_000)
    }

    /// `2026-11-29T12:00:00.123Z`.
    static func iso8601(now: (seconds: Int, milliseconds: Int)) -> String {
        var seconds = time_t(now.seconds)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(now.milliseconds), 3))Z"
    }
}
