import Synchronization

/// Tokens verified before, by the SHA-256 of the token, until their `exp` (plus the leeway):
/// a returning caller costs one hash and one lookup instead of a signature check.
///
/// Bounded at `capacity` in two generations, an approximate LRU with O(1) work and no list
/// to maintain: entries go into the current generation; when it holds half the capacity it
/// becomes the previous one, and the old previous one is dropped. A hit in the previous
/// generation moves the entry back into the current one, so tokens in use survive.
///
/// An entry remembers the key set's generation that verified it and counts only while that
/// set is in force: a key removed from the set stops its tokens at once.
final class JWTCache: Sendable {
    struct Entry: Sendable {
        let caller: Caller
        /// Seconds since the epoch after which the token is expired (its `exp` plus the leeway).
        let expiresAt: Double
        let keyGeneration: UInt64
    }

    /// A SHA-256 digest as four words: hashed and compared without an array.
    struct Digest: Hashable, Sendable {
        let words: (UInt64, UInt64, UInt64, UInt64)

        init(_ bytes: [UInt8]) {
            precondition(bytes.count == 32)
            words = bytes.withUnsafeBytes { raw in
                (
                    raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self),
                    raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
                    raw.loadUnaligned(fromByteOffset: 16, as: UInt64.self),
                    raw.loadUnaligned(fromByteOffset: 24, as: UInt64.self)
                )
            }
        }

        static func == (lhs: Digest, rhs: Digest) -> Bool { lhs.words == rhs.words }

        func hash(into hasher: inout Hasher) {
            hasher.combine(words.0)
            hasher.combine(words.1)
            hasher.combine(words.2)
            hasher.combine(words.3)
        }
    }

    private struct Generations {
        var current: [Digest: Entry] = [:]
        var previous: [Digest: Entry] = [:]
    }

    private let generations = Mutex(Generations())
    private let half: Int

    init(capacity: Int) {
        half = max(1, capacity / 2)
    }

    /// The still-valid entry verified under `keyGeneration`, or nil.
    func entry(for digest: Digest, now: Double, keyGeneration: UInt64) -> Entry? {
        generations.withLock { state in
            if let entry = state.current[digest] {
                guard entry.keyGeneration == keyGeneration, now <= entry.expiresAt else {
                    state.current[digest] = nil
                    return nil
                }
                return entry
            }
            guard let entry = state.previous.removeValue(forKey: digest) else { return nil }
            guard entry.keyGeneration == keyGeneration, now <= entry.expiresAt else { return nil }
            Self.insert(entry, for: digest, into: &state, half: half)
            return entry
        }
    }

    func insert(_ entry: Entry, for digest: Digest) {
        generations.withLock { Self.insert(entry, for: digest, into: &$0, half: half) }
    }

    /// How many entries are held now.
    var count: Int {
        generations.withLock { $0.current.count + $0.previous.count }
    }

    private static func insert(_ entry: Entry, for digest: Digest, into state: inout Generations, half: Int) {
        if state.current.count >= half, state.current[digest] == nil {
            state.previous = state.current
            state.current = [:]
            state.current.reserveCapacity(half)
        }
        state.current[digest] = entry
    }
}
