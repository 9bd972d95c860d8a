#if canImport(Glibc)
import Glibc
#endif

/// Reads small system files whole: `/proc` and cgroup entries, read once or now and then.
public enum SmallFile {
    /// The file's first `limit` bytes (all of it when shorter, what was read before a read
    /// fails); nil when it cannot be opened.
    public static func read(_ path: String, upTo limit: Int) -> [UInt8]? {
        let fd = Syscall.retryingInterrupts { open(path, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: min(limit, 65536))
        while bytes.count < limit {
            let wanted = min(chunk.count, limit - bytes.count)
            let count = chunk.withUnsafeMutableBytes { buffer in
                Syscall.retryingInterrupts { Glibc.read(fd, buffer.baseAddress, wanted) }
            }
            guard count > 0 else { break }
            bytes += chunk[0..<count]
        }
        return bytes
    }
}
