/// Remembers the last formatted second, so that a server formatting a `Date` field for
/// every response builds the string at most once per second.
package struct HTTPDateCache: Sendable {
    private var second = Int.min
    private var cached = ""

    /// Creates an empty cache.
    package init() {}

    /// The IMF-fixdate for this Unix time in seconds, from the cache when it is the same
    /// second as the last call.
    package mutating func string(for seconds: Int) -> String {
        if seconds != second {
            second = seconds
            cached = HTTPDate.format(unixSeconds: seconds)
        }
        return cached
    }
}
