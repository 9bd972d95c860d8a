import EventLoop

/// The process environment as a dictionary, read once from `/proc/self/environ` (the
/// gateway never calls `setenv`, so this is the whole environment).
package enum ProcessEnvironment {
    /// Nil when `/proc` is not mounted: better to refuse to start than to run on defaults.
    package static func read() -> [String: String]? {
        guard let bytes = SmallFile.read("/proc/self/environ", upTo: 4 * 1024 * 1024) else { return nil }
        var environment: [String: String] = [:]
        for entry in bytes.split(separator: 0) {
            guard let equals = entry.firstIndex(of: UInt8(ascii: "=")) else { continue }
            let key = String(decoding: entry[entry.startIndex..<equals], as: UTF8.self)
            environment[key] = String(decoding: entry[(equals + 1)...], as: UTF8.self)
        }
        return environment
    }
}
