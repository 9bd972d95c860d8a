import EventLoop
import Synchronization
package import Telemetry

#if canImport(Glibc)
    import Glibc
#endif

/// `JWT_JWKS_FILE`: the key set read from a file at start, and again on SIGHUP or when the
/// file changes (checked every ``pollInterval``: its inode, size and modification time). A
/// file that cannot be read or parsed keeps the last good set in force; that is logged and
/// counted, never silent.
package final class JWKSFileSource: Sendable {
    let path: String
    private let verifier: JWTVerifier
    private let logger: Logger
    private let metrics: JWTMetrics?
    /// What the file looked like at the last load, so an unchanged file is not read again.
    private let lastSeen = Mutex<FileIdentity?>(nil)
    static let pollInterval: Duration = .seconds(2)

    struct FileIdentity: Equatable, Sendable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modified: Int64
        var modifiedNanoseconds: Int64

        /// The identity of the file at `path` now, nil when it cannot be stat'ed.
        init?(path: String) {
            var info = stat()
            guard stat(path, &info) == 0 else { return nil }
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
            size = Int64(info.st_size)
            modified = Int64(info.st_mtim.tv_sec)
            modifiedNanoseconds = Int64(info.st_mtim.tv_nsec)
        }
    }

    package init(path: String, verifier: JWTVerifier, logger: Logger, metrics: JWTMetrics?) {
        self.path = path
        self.verifier = verifier
        self.logger = logger
        self.metrics = metrics
    }

    /// Reads the key set from `path` (at most ``JWKSet/maximumBytes``).
    package static func read(path: String) throws(JWKSetError) -> JWKSet {
        let bytes: [UInt8]?
        do {
            bytes = try SmallFile.readRegularFile(path, maximumSize: JWKSet.maximumBytes)
        } catch {
            switch error {
            case .system(let code): throw JWKSetError("cannot read the file (errno \(code))")
            case .notRegularFile: throw JWKSetError("not a regular file")
            case .tooLarge: throw JWKSetError("the file is larger than \(JWKSet.maximumBytes) bytes")
            }
        }
        guard let bytes else { throw JWKSetError("no such file") }
        return try JWKSet.parse(bytes)
    }

    /// Loads the file when it changed since the last load (or always, with `force`: SIGHUP).
    package func reload(force: Bool) {
        let identity = FileIdentity(path: path)
        if !force, identity == lastSeen.withLock({ $0 }) { return }
        lastSeen.withLock { $0 = identity }
        do {
            let set = try Self.read(path: path)
            let changed = verifier.install(set)
            metrics?.recordLoad(source: "file", succeeded: true)
            logger.info(
                "jwks_loaded",
                [
                    ("source", .string("file")), ("keys", .int(set.keys.count)), ("skipped", .int(set.skipped)),
                    ("changed", .bool(changed)),
                ])
        } catch {
            metrics?.recordLoad(source: "file", succeeded: false)
            logger.error(
                "jwks_load_failed",
                [
                    ("source", .string("file")), ("reason", .string(error.description)),
                    ("effect", .string("the last good key set stays in force")),
                ])
        }
    }

    /// The service that watches the file. Its first look, at start, loads the file again: it
    /// may have changed since the configuration read it.
    package var service: PeriodicService {
        PeriodicService(name: "jwks_file", interval: Self.pollInterval, immediately: true) { [self] in
            reload(force: false)
        }
    }
}
