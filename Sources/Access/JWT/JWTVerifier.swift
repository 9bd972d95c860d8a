import Crypto
import Synchronization
package import Telemetry

/// Verifies the JWTs an app's identity service issues (docs/api.md, "Sign-in with the app's
/// JWTs") and says who the caller is.
///
/// In order, doing no more work than the token has earned: the size, before anything is
/// decoded; the three parts and the header; the algorithm, from the allow-list; the key —
/// the HS256 secret, or the key set's key named by `kid`, which must be a key for that
/// algorithm (the key decides, so an RSA public key is never taken for an HMAC secret); the
/// signature; only then the claims, as strict JSON, and ``JWTPolicy``'s checks on them.
///
/// A token that passed is cached by its SHA-256 until it expires (``JWTCache``), for the
/// key set that verified it.
package final class JWTVerifier: Sendable {
    /// The longest token verified, in bytes; a longer one is refused before any work.
    package static let maximumTokenBytes = 8192

    /// A token the verifier accepted.
    package struct Acceptance: Sendable, Equatable {
        package let caller: Caller
        /// Whether it came from the cache (no signature was checked).
        package let cached: Bool
        /// When it stops being accepted: its `exp` plus the leeway, in seconds since the epoch.
        package let expiresAt: Double
    }

    package let policy: JWTPolicy
    private let secret: [UInt8]?

    private struct Keys {
        var set: JWKSet
        var generation: UInt64
        var fingerprint: [String]
    }

    private let keys: Mutex<Keys>
    private let cache: JWTCache
    private let unknownKeyHandler = Mutex<(@Sendable () async -> Void)?>(nil)

    /// - Parameters:
    ///   - hs256Secret: `JWT_HS256_SECRET`'s bytes; nil: HS256 is refused.
    ///   - keySet: the RS256 / ES256 keys to start with (replaced by ``install(_:)``).
    ///   - cacheCapacity: most verified tokens remembered.
    package init(
        policy: JWTPolicy, hs256Secret: [UInt8]?, keySet: JWKSet = JWKSet(keys: []), cacheCapacity: Int = 10_000
    ) {
        self.policy = policy
        secret = hs256Secret
        keys = Mutex(Keys(set: keySet, generation: 0, fingerprint: keySet.keys.map(\.jwk)))
        cache = JWTCache(capacity: cacheCapacity)
    }

    /// The key set in force.
    package var keySet: JWKSet { keys.withLock { $0.set } }

    /// How many verified tokens are cached now.
    var cachedCount: Int { cache.count }

    /// Puts `set` in force; returns whether it differs from the set in force. A different set
    /// ends every cached verification the old one made.
    @discardableResult
    package func install(_ set: JWKSet) -> Bool {
        let fingerprint = set.keys.map(\.jwk)
        return keys.withLock { keys in
            guard keys.fingerprint != fingerprint else { return false }
            keys = Keys(set: set, generation: keys.generation &+ 1, fingerprint: fingerprint)
            return true
        }
    }

    /// What to run when a token names a `kid` the set does not have: the key set's source
    /// fetches it again (rate-limited), and the token is checked once more afterwards.
    func onUnknownKey(_ handler: @escaping @Sendable () async -> Void) {
        unknownKeyHandler.withLock { $0 = handler }
    }

    /// The caller `token` names at `now`, or why it is refused. Answers without suspending
    /// whenever the key set in force decides; only a token naming an unknown `kid` waits, for
    /// the key set's source to fetch the set again (it decides whether it may, now), and is
    /// checked once more if the set changed.
    package func verify(_ token: [UInt8], now: Instant) async -> Result<Acceptance, JWTFailure> {
        let first = verifyNow(token, now: now)
        guard case .failure(.unknownKey) = first, let handler = unknownKeyHandler.withLock({ $0 }) else { return first }
        let before = keys.withLock { $0.generation }
        await handler()
        guard keys.withLock({ $0.generation }) != before else { return first }
        return verifyNow(token, now: now)
    }

    /// ``verify(_:now:)`` without waiting for a key set: what a request gets when the set in
    /// force is all there is. `useCache: false` always checks the signature (benchmarks).
    package func verifyNow(_ token: [UInt8], now: Instant, useCache: Bool = true) -> Result<Acceptance, JWTFailure> {
        guard token.count <= Self.maximumTokenBytes else { return .failure(.oversized) }
        let digest = useCache ? JWTCache.Digest(SHA256.hash(token)) : nil
        if let digest {
            let generation = keys.withLock { $0.generation }
            if let entry = cache.entry(for: digest, now: now.secondsSinceEpoch, keyGeneration: generation) {
                return .success(Acceptance(caller: entry.caller, cached: true, expiresAt: entry.expiresAt))
            }
        }
        // The set and its generation read together: an entry made from an older set is never
        // taken for the newer one's.
        let (set, generation) = keys.withLock { ($0.set, $0.generation) }
        do throws(JWTFailure) {
            let (caller, expiresAt) = try check(token, keySet: set, now: now)
            if let digest {
                cache.insert(
                    JWTCache.Entry(caller: caller, expiresAt: expiresAt, keyGeneration: generation), for: digest)
            }
            return .success(Acceptance(caller: caller, cached: false, expiresAt: expiresAt))
        } catch {
            return .failure(error)
        }
    }

    /// Every check of a token, against `keySet`.
    private func check(_ token: [UInt8], keySet: JWKSet, now: Instant) throws(JWTFailure) -> (Caller, Double) {
        let jws = try CompactJWS.parse(token)
        guard let algorithm = jws.header.algorithm, policy.algorithms.contains(algorithm) else {
            throw .algorithmNotAllowed
        }
        guard !jws.header.hasCritical else { throw .unsupportedCritical }
        guard jws.header.hasAcceptableType else { throw .wrongType }
        switch algorithm {
        case .hs256:
            guard let secret else { throw .algorithmNotAllowed }
            guard ConstantTime.equals(HMAC.sha256(key: secret, message: jws.signingInput), jws.signature) else {
                throw .signature
            }
        case .rs256, .es256:
            let key = try keySet.key(id: jws.header.keyID, algorithm: algorithm).get()
            guard let scheme = algorithm.signatureAlgorithm,
                key.publicKey.isValidSignature(jws.signature, for: jws.signingInput, algorithm: scheme)
            else { throw .signature }
        }
        return try policy.caller(for: jws.claims(), now: now)
    }
}
