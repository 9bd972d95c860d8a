import EventLoop
import Store

// bench-store: how many ledger rows a second the store's one writer commits, and how large
// the SQLite file grows per million requests. `make bench-store` runs it.
//
//   bench-store [--rows N] [--producers P] [--results on|off] [--directory DIR]
//   bench-store rollups [--rows N] [--rounds R] [--producers P]
//   bench-store seed (--sqlite PATH | --postgres URL) [--rows N] [--days D]
//
// P tasks submit N rows in all (as finished requests do, without waiting for the commit),
// into a new store in DIR (a fresh temporary directory by default, removed afterwards).
// `rollups` compares the writer with the console's roll-ups on and off (Rollups.swift);
// `seed` fills a store with ledger rows by SQL (Seed.swift).
#if canImport(Glibc)
    import Glibc
#endif

switch CommandLine.arguments.dropFirst().first {
case "rollups":
    await compareRollups(Array(CommandLine.arguments.dropFirst(2)))
    exit(0)
case "seed":
    await seed(Array(CommandLine.arguments.dropFirst(2)))
    exit(0)
default: break
}

var rows = 500_000
var producers = 64
var keepResults = false
var directory: String?
var arguments = CommandLine.arguments.dropFirst()
while let flag = arguments.popFirst() {
    guard let value = arguments.popFirst() else { fatalError("\(flag) needs a value") }
    switch flag {
    case "--rows": rows = Int(value) ?? rows
    case "--producers": producers = max(1, Int(value) ?? producers)
    case "--results": keepResults = value == "on"
    case "--directory": directory = value
    default: fatalError("unknown option \(flag)")
    }
}

func temporaryDirectory() -> String {
    var template = Array("/tmp/bench-store-XXXXXX".utf8CString)
    guard mkdtemp(&template) != nil else { fatalError("mkdtemp failed") }
    return String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

func fileSize(_ path: String) -> Int {
    var status = stat()
    return stat(path, &status) == 0 ? Int(status.st_size) : 0
}

let ownDirectory = directory == nil
let base = directory ?? temporaryDirectory()
let path = base + "/bench.sqlite"
let pool = try BlockingPool(threadCount: 2, name: "bench-store")
let store = try await SQLiteStore.open(path: path, pool: pool)
let writer = LedgerWriter(store: store)
try await writer.start()

// A row as /api/process leaves it: a user of a thousand, a summary's model and usage, and
// (with --results on) an answer of some 600 characters.
let result = keepResults ? String(repeating: "خلاصه‌ای از متن ورودی برای آزمون. ", count: 18) : nil
let (rowCount, producerCount) = (rows, producers)
let start = MonotonicInstant.now()
await withTaskGroup(of: Void.self) { group in
    for producer in 0..<producerCount {
        group.addTask {
            var index = producer
            while index < rowCount {
                await writer.submit(
                    LedgerRow(
                        requestID: "bench-\(index)-0123456789abcdef", userID: "user-\(index % 1000)", task: "summarize",
                        tone: nil,
                        route: "/api/process", model: "bench-model", inputLength: 310, inputTokens: 141,
                        outputTokens: 37,
                        status: 200, code: nil, outcome: "done", cacheHit: false, durationMilliseconds: 812.5,
                        createdAtMilliseconds: 1_764_547_200_000 + Int64(index), result: result
                    ))
                index += producerCount
            }
        }
    }
}
await writer.flush()
let seconds = Double(start.nanoseconds(until: .now())) / 1e9
await writer.stop(deadline: .now().advanced(by: .seconds(30)))
let statistics = writer.statistics
await store.close()
await pool.shutdown()

let bytes = fileSize(path) + fileSize(path + "-wal")
let perMillion = Double(bytes) / Double(statistics.committed) * 1_000_000
print(
    "rows committed:        \(statistics.committed) of \(rows) (dropped \(statistics.dropped)) by \(producers) "
        + "producers, results \(keepResults ? "on" : "off")"
)
print(
    "batches:               \(statistics.batches) "
        + "(\(statistics.committed / max(1, statistics.batches)) rows each on average)"
)
print("writer rate:           \(Int(Double(statistics.committed) / seconds)) rows/s (\(Int(seconds * 1000)) ms)")
print(
    "database size:         \(bytes) bytes = \(Int((perMillion / 1_048_576).rounded())) MiB per million requests "
        + "(\(Int((Double(bytes) / Double(max(1, statistics.committed))).rounded())) bytes a row)"
)
if ownDirectory {
    for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
    rmdir(base)
}
