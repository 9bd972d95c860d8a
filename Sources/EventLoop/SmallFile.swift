#if canImport(Glibc)
    import Glibc
#endif

/// Reads small files whole, the one reader for them: `/proc` and cgroup entries, read once
/// or now and then, and configuration files (`.env`, token files) read at start.
package enum SmallFile {
    /// Why a file could not be read.
    package enum Failure: Error, Hashable, Sendable {
        /// `open`, `fstat` or `read` failed with this errno.
        case system(errno: CInt)
        /// The path names a directory, a FIFO, a device…
        case notRegularFile
        /// The file holds more than the limit.
        case tooLarge
    }

    /// The file's first `limit` bytes (all of it when shorter, what was read before a read
    /// fails); nil when it cannot be opened.
    package static func read(_ path: String, upTo limit: Int) -> [UInt8]? {
        try? read(path, limit: limit, wholeRegularFile: false)
    }

    /// The whole of the regular file at `path`, at most `maximumSize` bytes; nil when it does
    /// not exist. A path with a NUL byte is `EINVAL` (a C path would end there and name
    /// another file); a FIFO cannot hang the caller (it is opened non-blocking, then refused).
    package static func readRegularFile(_ path: String, maximumSize: Int) throws(Failure) -> [UInt8]? {
        try read(path, limit: maximumSize, wholeRegularFile: true)
    }

    private static func read(_ path: String, limit: Int, wholeRegularFile: Bool) throws(Failure) -> [UInt8]? {
        guard !path.utf8.contains(0) else { throw .system(errno: EINVAL) }
        let flags = O_RDONLY | O_CLOEXEC | (wholeRegularFile ? O_NONBLOCK : 0)
        let fd = Syscall.retryingInterrupts { open(path, flags) }
        if fd < 0 {
            let code = errno
            if code == ENOENT { return nil }
            throw .system(errno: code)
        }
        defer { close(fd) }
        if wholeRegularFile {
            var status = stat()
            guard fstat(fd, &status) == 0 else { throw .system(errno: errno) }
            guard status.st_mode & S_IFMT == S_IFREG else { throw .notRegularFile }
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: max(1, min(limit + (wholeRegularFile ? 1 : 0), 65536)))
        while wholeRegularFile || bytes.count < limit {
            let wanted = wholeRegularFile ? chunk.count : min(chunk.count, limit - bytes.count)
            let count = chunk.withUnsafeMutableBytes { buffer in
                Syscall.retryingInterrupts { Glibc.read(fd, buffer.baseAddress, wanted) }
            }
            if count < 0 {
                if wholeRegularFile { throw .system(errno: errno) }
                break
            }
            if count == 0 { break }
            // Checked before appending: a file that grows past the limit is refused too.
            if wholeRegularFile && bytes.count + count > limit { throw .tooLarge }
            bytes += chunk[0..<count]
        }
        return bytes
    }
}
