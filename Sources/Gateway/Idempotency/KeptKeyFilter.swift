import Synchronization

/// A Bloom filter of the keys whose answers a store this process owns (SQLite) keeps: a new
/// key the filter has never seen runs without a look in the store, and only a key it may
/// have seen is looked up. Never a false "absent" once loaded (until then every key is
/// looked up); a false "present" costs one look. Fixed size: past its capacity it answers
/// "present" more often, never wrongly "absent".
///
/// Rebuilt from the store (hourly, and at start), since a Bloom filter cannot forget: keys
/// added while the store is read go into the new filter too.
final class KeptKeyFilter: Sendable {
    /// 2^25 bits (4 MiB): about 3.5 million keys at a 1 % false-present rate with 7 probes.
    static let defaultBits = 1 << 25
    static let probes = 7

    private struct State {
        var words: [UInt64]
        var loaded = false
        /// While a rebuild reads the store: keys added meanwhile, for the new filter.
        var addedDuringRebuild: [(UInt64, UInt64)]?
    }

    private let mask: UInt64
    private let state: Mutex<State>

    init(bits: Int = KeptKeyFilter.defaultBits) {
        let size = max(64, bits).nextPowerOfTwo
        mask = UInt64(size - 1)
        state = Mutex(State(words: [UInt64](repeating: 0, count: size / 64)))
    }

    /// Whether `key` may be kept: true until the first load, and for every key added since.
    func mightContain(_ key: String) -> Bool {
        let (first, second) = Self.hashes(key)
        return state.withLock { state in
            guard state.loaded else { return true }
            for probe in 0..<UInt64(Self.probes) where !Self.test(state.words, bit: (first &+ probe &* second) & mask) {
                return false
            }
            return true
        }
    }

    func insert(_ key: String) {
        let hashes = Self.hashes(key)
        state.withLock { state in
            Self.set(&state.words, hashes, mask: mask)
            state.addedDuringRebuild?.append(hashes)
        }
    }

    /// Replaces the filter with one of the keys `load` reports (the store's kept keys), plus
    /// those added while it ran. A failed load leaves the filter as it was.
    func rebuild(_ load: (_ add: @escaping @Sendable (String) -> Void) async throws -> Void) async rethrows {
        state.withLock { $0.addedDuringRebuild = [] }
        let fresh = Mutex([UInt64](repeating: 0, count: Int(mask + 1) / 64))
        let mask = self.mask
        do {
            try await load { key in fresh.withLock { Self.set(&$0, Self.hashes(key), mask: mask) } }
        } catch {
            state.withLock { $0.addedDuringRebuild = nil }
            throw error
        }
        var words = fresh.withLock { $0 }
        state.withLock { state in
            for hashes in state.addedDuringRebuild ?? [] { Self.set(&words, hashes, mask: mask) }
            state.words = words
            state.addedDuringRebuild = nil
            state.loaded = true
        }
    }

    /// Two independent 64-bit hashes of the key's bytes (FNV-1a, then a SplitMix finaliser),
    /// combined per probe as Kirsch and Mitzenmacher do.
    private static func hashes(_ key: String) -> (UInt64, UInt64) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        var mixed = hash &+ 0x9e37_79b9_7f4a_7c15
        mixed = (mixed ^ (mixed >> 30)) &* 0xbf58_476d_1ce4_e5b9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94d0_49bb_1331_11eb
        mixed ^= mixed >> 31
        return (hash, mixed | 1)
    }

    private static func test(_ words: [UInt64], bit: UInt64) -> Bool {
        words[Int(bit >> 6)] & (1 << (bit & 63)) != 0
    }

    private static func set(_ words: inout [UInt64], _ hashes: (UInt64, UInt64), mask: UInt64) {
        for probe in 0..<UInt64(probes) {
            let bit = (hashes.0 &+ probe &* hashes.1) & mask
            words[Int(bit >> 6)] |= 1 << (bit & 63)
        }
    }
}

extension Int {
    fileprivate var nextPowerOfTwo: Int {
        self <= 1 ? 1 : 1 << (Int.bitWidth - (self - 1).leadingZeroBitCount)
    }
}
