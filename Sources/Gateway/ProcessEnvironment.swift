#if canImport(Glibc)
import Glibc
#endif

/// The process environment as a dictionary, read once from `/proc/self/environ` (the
/// gateway never calls `setenv`, so this is the whole environment).
public enum ProcessEnvironment {
    /// Nil when `/proc` is not mounted: better to refuse to start than to run on defaults.
    public static func read() -> [String: String]? {
        guard let bytes = readFile("/proc/self/environ") else { return nil }
        var environment: [String: String] = [:]
        for entry in bytes.split(separator: 0) {
            guard let equals = entry.firstIndex(of: UInt8(ascii: "=")) else { continue }
            let key = String(decoding: entry[entry.startIndex..<equals], as: UTF8.self)
            environment[key] = String(decoding: entry[(equals + 1)...], as: UTF8.self)
        }
        return environment
    }

    private static func readFile(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while bytes.count < 4 * 1024 * 1024 {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += chunk[0..<count]
        }
        return bytes
    }
}
