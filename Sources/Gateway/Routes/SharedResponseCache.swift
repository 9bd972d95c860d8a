import ChatAPI
import Crypto
import EventLoop
import JSON
import Redis
import Synchronization
import Telemetry

/// The response cache every instance shares through Redis (`CACHE_BACKEND=redis`), with
/// single flight across instances.
///
/// An answer lives under `tg:cache:<SHA-256 of the key>` (never the user's text in a key)
/// for the time to live. In front of Redis sits this instance's ``ResponseCache``: its single
/// flight sends one request per key and instance to Redis, and it keeps what it saw for no
/// longer than Redis does. A miss takes the key's lock (`SET NX PX`, a token of its own),
/// makes the upstream call, stores the answer and releases the lock; an instance that finds
/// the lock held polls for the holder's answer, and makes its own call when the lock is gone
/// with no answer (the holder failed or died) or after waiting as long as an upstream call
/// may take. Redis never fails a request: when it cannot answer within its timeout, the
/// request is served by the in-process cache and the upstream, and the error is counted.
final class SharedResponseCache: AnswerCache {
    /// A lock lives this long unless its holder renews it: a holder that died blocks the
    /// others at most this long; a live one renews it every third of it.
    let lockTimeToLive: Duration
    /// The longest a request waits for another instance's call before making its own.
    let waitLimit: Duration
    /// Larger answers are served but not shared (Redis values stay bounded).
    static let maximumValueBytes = 256 * 1024

    private let redis: RedisClient
    private let local: ResponseCache
    private let errors: CounterFamily

    init(
        redis: RedisClient, local: ResponseCache, lockTimeToLive: Duration, waitLimit: Duration,
        registry: MetricsRegistry
    ) {
        self.redis = redis
        self.local = local
        self.lockTimeToLive = lockTimeToLive
        self.waitLimit = waitLimit
        errors = registry.counter(
            "textgateway_cache_redis_errors_total",
            help:
                "Shared cache operations that failed (Redis away, slow or refusing, or a value it could not read); "
                + "the request went on without them. By operation.",
            labels: ["operation"]
        )
    }

    /// The lock's time to live for an upstream timeout: long enough for most calls without a
    /// renewal, short enough that a dead holder stalls no one for long.
    static func lockTimeToLive(upstreamTimeout: Duration) -> Duration {
        min(upstreamTimeout, .seconds(5))
    }

    func answer(
        for key: ResponseCache.Key, compute: @escaping @Sendable () async throws(GatewayError) -> ResponseCache.Answer
    ) async throws(GatewayError) -> (answer: ResponseCache.Answer, hit: Bool) {
        let called = UpstreamCalled()
        let (answer, hit) = try await local.answer(for: key, now: { .now() }) { [self] () throws(GatewayError) in
            try await shared(key) { () throws(GatewayError) in
                called.flag.store(true, ordering: .relaxed)
                return try await compute()
            }
        }
        // The request that led the local flight may still have been answered from Redis.
        return (answer, hit || !called.flag.load(ordering: .relaxed))
    }

    /// The answer from Redis, from the instance holding the key's lock, or from `compute`;
    /// with how long this instance may keep it.
    private func shared(
        _ key: ResponseCache.Key, compute: @escaping @Sendable () async throws(GatewayError) -> ResponseCache.Answer
    ) async throws(GatewayError) -> (ResponseCache.Answer, lifetime: Duration) {
        let name = Self.entryKey(key)
        let entry = RedisArgument(name)
        let lock = RedisArgument(name + ":lock")
        let token = RedisArgument(SHA256.hexString(SecureRandom.bytes(16)))
        let deadline = MonotonicInstant.now().advanced(by: waitLimit)
        var pause = Duration.milliseconds(10)
        while true {
            let reply: RedisValue
            do {
                reply = try await redisCall { [redis, lockTimeToLive] () throws(RedisError) in
                    try await redis.evalSHA(
                        Self.lookup, keys: [entry, lock], arguments: [token, Self.milliseconds(lockTimeToLive)])
                }
            } catch {
                if error.code == .cancelled { throw .clientClosedRequest }
                // Redis is away or slow: this instance answers alone, without waiting on it again.
                errors.labels("lookup").increment()
                return (try await compute(), local.timeToLive)
            }
            switch reply.array?.first?.integer {
            case 1:
                if let elements = reply.array, elements.count == 3, let answer = Self.decode(elements[1]) {
                    let remaining = elements[2].integer.map { Duration.milliseconds($0) } ?? local.timeToLive
                    return (answer, remaining > .zero ? remaining : local.timeToLive)
                }
                // A value this version cannot read: answered as a miss, replaced when stored.
                errors.labels("decode").increment()
                return try await callAndStore(compute, entry: entry, lock: nil, token: token)
            case 2:
                return try await callAndStore(compute, entry: entry, lock: lock, token: token)
            case 3:
                guard MonotonicInstant.now() < deadline else {
                    return try await callAndStore(compute, entry: entry, lock: nil, token: token)
                }
                do {
                    try await Task.sleep(for: pause)
                } catch {
                    throw .clientClosedRequest
                }
                pause = min(pause * 2, .milliseconds(100))
            default:
                errors.labels("lookup").increment()
                return (try await compute(), local.timeToLive)
            }
        }
    }

    /// Makes the upstream call, holding `lock` (renewed while the call runs) when given, then
    /// stores a success and releases the lock; a failure only releases it.
    private func callAndStore(
        _ compute: @escaping @Sendable () async throws(GatewayError) -> ResponseCache.Answer,
        entry: RedisArgument, lock: RedisArgument?, token: RedisArgument
    ) async throws(GatewayError) -> (ResponseCache.Answer, lifetime: Duration) {
        let result: Result<ResponseCache.Answer, GatewayError> = await withTaskGroup(of: Void.self) { group in
            if let lock { group.addTask { await self.renew(lock, token: token) } }
            let result: Result<ResponseCache.Answer, GatewayError>
            do throws(GatewayError) {
                result = .success(try await compute())
            } catch {
                result = .failure(error)
            }
            group.cancelAll()
            return result
        }
        let value = (try? result.get()).flatMap(Self.encode)
        // In a task of its own, so the others waiting get the answer (or the lock) even when
        // this flight was cancelled; each call is bounded by the Redis timeout.
        await Task { [self] in
            do {
                let ttl = ttlMilliseconds
                if let value, let lock {
                    _ = try await redisCall { [redis] () throws(RedisError) in
                        try await redis.evalSHA(Self.store, keys: [entry, lock], arguments: [value, ttl, token])
                    }
                } else if let value {
                    _ = try await redisCall { [redis] () throws(RedisError) in
                        try await redis.send(["SET", entry, value, "PX", ttl])
                    }
                } else if let lock {
                    _ = try await redisCall { [redis] () throws(RedisError) in
                        try await redis.evalSHA(Self.release, keys: [lock], arguments: [token])
                    }
                }
            } catch {
                errors.labels(value == nil ? "release" : "store").increment()
            }
        }.value
        return (try result.get(), local.timeToLive)
    }

    /// Keeps the lock while the call runs; ends when cancelled or when the lock is lost.
    private func renew(_ lock: RedisArgument, token: RedisArgument) async {
        let milliseconds = Self.milliseconds(lockTimeToLive)
        while true {
            do {
                try await Task.sleep(for: lockTimeToLive / 3)
            } catch {
                return
            }
            do {
                let renewed = try await redisCall { [redis] () throws(RedisError) in
                    try await redis.evalSHA(Self.renewal, keys: [lock], arguments: [token, milliseconds])
                }
                guard renewed.integer == 1 else { return }
            } catch {
                if error.code == .cancelled { return }
                errors.labels("renew").increment()
            }
        }
    }

    /// Runs `command`, once more when it was not sent because its connection is down (free:
    /// it failed at once, and the next try may go out on another loop's connection).
    private func redisCall(_ command: () async throws(RedisError) -> RedisValue) async throws(RedisError) -> RedisValue
    {
        do {
            return try await command()
        } catch  where error.code == .connectionFailed {
            return try await command()
        }
    }

    private var ttlMilliseconds: RedisArgument { Self.milliseconds(local.timeToLive) }

    private static func milliseconds(_ duration: Duration) -> RedisArgument {
        RedisArgument(max(1, Int((duration / .milliseconds(1)).rounded(.up))))
    }

    /// `tg:cache:` and the SHA-256 of the key's fields, each with its length (no two keys
    /// share a digest input). A format other than text adds `|<format>` after the text, so
    /// text answers keep the keys they had before formats.
    static func entryKey(_ key: ResponseCache.Key) -> String {
        var input = "v1"
        for field in [key.task, key.tone, key.model, key.text] {
            if let field {
                input += "|\(field.utf8.count):\(field)"
            } else {
                input += "|-"
            }
        }
        if key.format != .text { input += "|" + key.format.rawValue }
        return "tg:cache:" + SHA256.hexDigest(input.utf8)
    }

    /// What Redis holds for an answer; `data` only for a `"format": "json"` one (absent, a
    /// value reads as it did before formats, and an older instance reads this one).
    private struct Stored: Codable {
        let result: String
        let usage: Usage?
        var data: JSONValue?
    }

    static func encode(_ answer: ResponseCache.Answer) -> RedisArgument? {
        guard let bytes = try? JSON.encode(Stored(result: answer.result, usage: answer.usage, data: answer.data)),
            bytes.count <= maximumValueBytes
        else { return nil }
        return RedisArgument(bytes)
    }

    static func decode(_ value: RedisValue) -> ResponseCache.Answer? {
        guard case .bulkString(let bytes?) = value, bytes.count <= maximumValueBytes,
            let stored = try? JSON.decode(Stored.self, from: bytes)
        else { return nil }
        return ResponseCache.Answer(result: stored.result, usage: stored.usage, data: stored.data)
    }

    /// One round trip per look: the answer and its remaining milliseconds (`{1, value, pttl}`),
    /// or the lock taken (`{2}`), or the lock held by another (`{3}`).
    /// KEYS: entry, lock. ARGV: token, lock milliseconds.
    static let lookup = RedisScript(
        source: """
            local value = redis.call('GET', KEYS[1])
            if value then return {1, value, redis.call('PTTL', KEYS[1])} end
            if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return {2} end
            return {3}
            """)

    /// Stores the answer and releases the lock if this holder still has it.
    /// KEYS: entry, lock. ARGV: value, milliseconds, token.
    static let store = RedisScript(
        source: """
            redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
            if redis.call('GET', KEYS[2]) == ARGV[3] then redis.call('DEL', KEYS[2]) end
            return 1
            """)

    /// Releases the lock if this holder still has it. KEYS: lock. ARGV: token.
    static let release = RedisScript(
        source: """
            if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
            return 0
            """)

    /// Extends the lock if this holder still has it. KEYS: lock. ARGV: token, milliseconds.
    static let renewal = RedisScript(
        source: """
            if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
            return 0
            """)

    static let scripts = [lookup, store, release, renewal]
}

/// Whether the local flight's leader called the upstream itself.
private final class UpstreamCalled: Sendable {
    let flag = Atomic<Bool>(false)
}
