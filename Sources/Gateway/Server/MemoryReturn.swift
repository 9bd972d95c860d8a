import EventLoop
import HTTPClient
import Synchronization
import Telemetry

#if canImport(Glibc)
    import Glibc
#endif

/// When to give the heap's free memory back to the system.
///
/// glibc keeps what a burst of requests freed: its arenas shrink only from the top, and a few
/// live blocks anywhere in them (an idle connection, a cached value) hold the rest in place, so
/// after thousands of requests in flight the resident set stays at its peak. `malloc_trim`
/// releases every free page, but it walks each arena under that arena's lock: it is for when
/// the gateway is quiet, never on a request's path.
///
/// The policy sees, once a tick, the requests in flight and the resident set, and says when
/// to return memory: once the resident set has grown since the last return (by
/// ``minimumGrowth``, and by an eighth) and the requests in flight have stayed low for
/// ``quietPeriod``: at most ``quietFloor``, or an eighth of the most seen since the last return
/// (a burst that ends leaves the steady traffic it came on). What a burst leaves behind in
/// the upstream client (its idle connections, closed after the client's idle timeout) is
/// returned by one more return ``lateReturnDelay`` after the first, once quiet. A pure value:
/// time comes in with each observation.
struct MemoryReturnPolicy: Sendable {
    /// How long the requests in flight must stay low before memory is returned.
    var quietPeriod: Duration = .seconds(5)
    /// Requests in flight that count as quiet whatever came before.
    var quietFloor = 8
    /// The least growth of the resident set, in bytes, worth a return.
    var minimumGrowth = 2 << 20
    /// One more return this long after one that growth asked for (nil: none).
    var lateReturnDelay: Duration? = .seconds(60)

    /// The resident set after the last return (its lowest since), in bytes; nil before the
    /// first observation.
    private(set) var baseline: Int?
    /// The most requests in flight seen since the last return.
    private(set) var peak = 0
    /// Since when the requests in flight have been low; nil while they are not.
    private var quietSince: MonotonicInstant?
    /// When the late return is due, if one is.
    private(set) var lateReturnAt: MonotonicInstant?

    init() {}

    /// One tick: `inFlight` requests are being answered and `residentBytes` are resident at
    /// `now`. True when memory should be returned now; then the caller returns it and tells
    /// ``returned(residentBytes:)`` what is left.
    mutating func observe(inFlight: Int, residentBytes: Int, at now: MonotonicInstant) -> Bool {
        let base = min(baseline ?? residentBytes, residentBytes)
        baseline = base
        peak = max(peak, inFlight)
        guard inFlight <= max(quietFloor, peak / 8) else {
            quietSince = nil
            return false
        }
        let since = quietSince ?? now
        quietSince = since
        guard now >= since.advanced(by: quietPeriod) else { return false }
        let grown = residentBytes - base >= max(minimumGrowth, base / 8)
        let late = lateReturnAt.map { now >= $0 } ?? false
        guard grown || late else { return false }
        peak = inFlight
        lateReturnAt = grown ? lateReturnDelay.map { now.advanced(by: $0) } : nil
        return true
    }

    /// Memory was returned; `residentBytes` are left, the baseline for the next growth.
    mutating func returned(residentBytes: Int) {
        baseline = residentBytes
    }
}

/// Returns the heap's free memory to the system when ``MemoryReturnPolicy`` says so: a tick
/// every few seconds reads the requests in flight and the resident set, and a return runs `malloc_trim`
/// on a thread of its own (it can take milliseconds on a large heap; no loop or pool thread
/// waits for it).
final class MemoryReturner: Sendable {
    private let policy: Mutex<MemoryReturnPolicy>
    private let inFlight: @Sendable () -> Int
    private let residentBytes: @Sendable () -> Int?
    private let clock: @Sendable () -> MonotonicInstant
    private let trim: @Sendable () -> Void
    /// Returns done, for tests and logs.
    private let returns = Atomic<Int>(0)

    /// - Parameters:
    ///   - inFlight: the requests being answered now.
    ///   - residentBytes: the process's resident set (nil when unknown: no tick then).
    ///   - trim: gives the free memory back (`malloc_trim`); runs on a thread of its own.
    init(
        policy: MemoryReturnPolicy = MemoryReturnPolicy(),
        inFlight: @escaping @Sendable () -> Int,
        residentBytes: @escaping @Sendable () -> Int? = MemoryReturner.residentBytes,
        clock: @escaping @Sendable () -> MonotonicInstant = { .now() },
        trim: @escaping @Sendable () -> Void = MemoryReturner.trimHeap
    ) {
        self.policy = Mutex(policy)
        self.inFlight = inFlight
        self.residentBytes = residentBytes
        self.clock = clock
        self.trim = trim
    }

    /// How many times memory was returned.
    var returnCount: Int { returns.load(ordering: .relaxed) }

    /// One tick: asks the policy, and returns memory when it says so.
    func tick() async {
        guard let resident = residentBytes() else { return }
        let load = inFlight()
        let now = clock()
        guard policy.withLock({ $0.observe(inFlight: load, residentBytes: resident, at: now) }) else { return }
        let trim = self.trim
        await DetachedThread.run { trim() }
        returns.add(1, ordering: .relaxed)
        let left = residentBytes() ?? resident
        policy.withLock { $0.returned(residentBytes: left) }
    }

    /// The service that ticks every `interval` while the gateway runs: often enough to return
    /// a burst's memory seconds after it ends, seldom enough that an idle gateway does next
    /// to nothing (a tick reads a file and sleeps again).
    func service(interval: Duration = .seconds(5)) -> any Service {
        PeriodicService(name: "memory_return", interval: interval, immediately: true) { [self] in await tick() }
    }

    /// The resident set from `/proc/self/statm` (its second field, in pages); nil off Linux.
    static let residentBytes: @Sendable () -> Int? = {
        guard let bytes = SmallFile.read("/proc/self/statm", upTo: 256) else { return nil }
        let fields = bytes.split(separator: UInt8(ascii: " "), maxSplits: 2)
        guard fields.count >= 2 else { return nil }
        var pages = 0
        for byte in fields[1] {
            let digit = byte &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            pages = pages &* 10 &+ Int(digit)
        }
        return pages &* pageSize
    }

    private static let pageSize: Int = {
        #if canImport(Glibc)
            return max(1, sysconf(Int32(_SC_PAGESIZE)))
        #else
            return 4096
        #endif
    }()

    /// Gives every free page of every arena back to the system (``Heap/trim()``).
    static let trimHeap: @Sendable () -> Void = { Heap.trim() }
}

extension MemoryReturner {
    /// The gateway's: its requests in flight, and a late return after the upstream client
    /// closed a burst's idle connections.
    static func forGateway(_ gateway: Gateway, client: HTTPClient) -> MemoryReturner {
        var policy = MemoryReturnPolicy()
        policy.lateReturnDelay = client.configuration.idleConnectionTimeout
        let metrics = gateway.metrics
        return MemoryReturner(policy: policy, inFlight: { Int(max(0, metrics.inFlight.value)) })
    }
}
