import EventLoop
import Store

#if canImport(Glibc)
    import Glibc
#endif

/// The writer's rate with the console's roll-ups on and off: rounds alternate (on, off, off,
/// on, …) so a machine that drifts weighs on both alike; each run writes a fresh store.
/// Rows as traffic leaves them: 50 callers (and some guests), 4 tasks, 2 models, 97 % successes,
/// upstream times of a few hundred milliseconds, a millisecond apart.
func compareRollups(_ arguments: [String]) async {
    var rows = 200_000
    var rounds = 6
    var producers = 64
    var rest = arguments[...]
    while let flag = rest.popFirst() {
        guard let value = rest.popFirst().flatMap({ Int($0) }) else { fatalError("\(flag) needs a number") }
        switch flag {
        case "--rows": rows = value
        case "--rounds": rounds = max(1, value)
        case "--producers": producers = max(1, value)
        default: fatalError("unknown option \(flag)")
        }
    }
    var rates: [Bool: [Double]] = [true: [], false: []]
    var cpus: [Bool: [Double]] = [true: [], false: []]
    for round in 0..<rounds {
        // ABBA order: each setting goes first as often as the other.
        let order = round % 2 == 0 ? [true, false] : [false, true]
        for enabled in order {
            let (rate, cpu) = await writerRate(rows: rows, producers: producers, rollups: enabled)
            rates[enabled, default: []].append(rate)
            cpus[enabled, default: []].append(cpu)
            let label = enabled ? "on " : "off"
            print("round \(round + 1) roll-ups \(label): \(Int(rate)) rows/s, \(hundredths(cpu)) µs CPU a row")
        }
    }
    let on = median(rates[true] ?? [])
    let off = median(rates[false] ?? [])
    print("median roll-ups on:  \(Int(on)) rows/s")
    print("median roll-ups off: \(Int(off)) rows/s")
    print("ratio on/off:        \(String(Int((on / off * 1000).rounded())).paddedRatio)")
    let cpuOn = median(cpus[true] ?? [])
    let cpuOff = median(cpus[false] ?? [])
    print("median CPU a row on:  \(hundredths(cpuOn)) µs")
    print("median CPU a row off: \(hundredths(cpuOff)) µs")
    print("CPU ratio on/off:     \(String(Int((cpuOn / cpuOff * 1000).rounded())).paddedRatio)")
}

private func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    return sorted.count % 2 == 1
        ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

extension String {
    /// Thousandths as "0.xyz".
    fileprivate var paddedRatio: String {
        let digits = String(repeating: "0", count: max(0, 4 - count)) + self
        return digits.dropLast(3) + "." + digits.suffix(3)
    }
}

/// A row of the comparison: what `index` makes it, the same in every run.
func trafficRow(_ index: Int, base: Int64) -> LedgerRow {
    var hash = UInt64(truncatingIfNeeded: index) &* 0x9E37_79B9_7F4A_7C15
    hash ^= hash >> 29
    let user = hash % 20 == 0 ? nil : "caller-\(hash % 50)"
    let tasks = ["summarize", "translate", "tone", "keywords"]
    let failure = (hash >> 8) % 100 < 3
    let (status, code): (Int, String?) =
        failure
        ? [(502, "upstream_error"), (504, "upstream_timeout"), (429, "rate_limited")][Int((hash >> 16) % 3)]
        : (200, nil)
    let upstream = status == 429 ? nil : Double(150 + (hash >> 20) % 2_000)
    return LedgerRow(
        requestID: "bench-\(index)-0123456789abcdef", userID: user, task: tasks[Int((hash >> 4) % 4)], tone: nil,
        route: "/api/process", model: (hash >> 6) % 2 == 0 ? "model-a" : "model-b", inputLength: 310,
        inputTokens: 141, outputTokens: 37, status: status, code: code, outcome: failure ? "error" : "done",
        cacheHit: false, durationMilliseconds: (upstream ?? 0) + 1.5, createdAtMilliseconds: base + Int64(index),
        plan: user == nil ? nil : "free", upstream: upstream == nil ? nil : "primary", upstreamMilliseconds: upstream)
}

/// `value` with two decimals.
private func hundredths(_ value: Double) -> String {
    let scaled = Int((value * 100).rounded())
    let fraction = scaled % 100
    return "\(scaled / 100)." + (fraction < 10 ? "0" : "") + "\(fraction)"
}

/// The process's CPU time so far (user and system), in seconds.
private func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// Rows committed per second of wall time, and microseconds of the process's CPU per row
/// (what the roll-ups cost with the disk's noise left out).
private func writerRate(rows: Int, producers: Int, rollups: Bool) async -> (rate: Double, cpu: Double) {
    do {
        var template = Array("/tmp/bench-rollups-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { fatalError("mkdtemp failed") }
        let base = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let path = base + "/bench.sqlite"
        let pool = try BlockingPool(threadCount: 2, name: "bench-store")
        let store = try await SQLiteStore.open(path: path, pool: pool)
        store.rollupsEnabled = rollups
        let writer = LedgerWriter(store: store)
        try await writer.start()
        let start = MonotonicInstant.now()
        let cpuStart = cpuSeconds()
        await withTaskGroup(of: Void.self) { group in
            for producer in 0..<producers {
                group.addTask {
                    var index = producer
                    while index < rows {
                        await writer.submit(trafficRow(index, base: 1_764_547_200_000))
                        index += producers
                    }
                }
            }
        }
        await writer.flush()
        let seconds = Double(start.nanoseconds(until: .now())) / 1e9
        let cpu = cpuSeconds() - cpuStart
        let committed = writer.statistics.committed
        await writer.stop(deadline: .now().advanced(by: .seconds(30)))
        await store.close()
        await pool.shutdown()
        for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
        rmdir(base)
        return (Double(committed) / seconds, cpu * 1e6 / Double(max(1, committed)))
    } catch {
        fatalError("\(error)")
    }
}
