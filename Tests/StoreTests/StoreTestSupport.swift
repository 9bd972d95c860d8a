import EventLoop
import Foundation
@testable import Store
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A fresh directory under the system's temporary directory, removed by ``remove()``.
struct TemporaryDirectory {
    let path: String

    init() throws {
        var base = NSTemporaryDirectory()
        while base.count > 1 && base.hasSuffix("/") { base.removeLast() }
        var template = Array((base + "/store-tests-XXXXXX").utf8CString)
        guard mkdtemp(&template) != nil else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    func file(_ name: String) -> String { path + "/" + name }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Runs `body` with a pool and a temporary directory, both gone after.
func withPoolAndDirectory<T>(threads: Int = 2, _ body: (BlockingPool, TemporaryDirectory) async throws -> T) async throws -> T {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let pool = try BlockingPool(threadCount: threads, name: "store-test")
    do {
        let result = try await body(pool, directory)
        await pool.shutdown()
        return result
    } catch {
        await pool.shutdown()
        throw error
    }
}

/// Runs `body` over a store opened in a temporary directory, closed after.
func withStore<T>(threads: Int = 2, _ body: (SQLiteStore, BlockingPool, TemporaryDirectory) async throws -> T) async throws -> T {
    try await withPoolAndDirectory(threads: threads) { pool, directory in
        let store = try await SQLiteStore.open(path: directory.file("store.db"), pool: pool)
        do {
            let result = try await body(store, pool, directory)
            await store.close()
            return result
        } catch {
            await store.close()
            throw error
        }
    }
}

/// The code of the error `body` throws, nil when it throws none.
func storeErrorCode(_ body: () async throws(StoreError) -> Void) async -> StoreError.Code? {
    await storeError(body)?.code
}

func storeError(_ body: () async throws(StoreError) -> Void) async -> StoreError? {
    do {
        try await body()
        return nil
    } catch {
        return error
    }
}

/// A day's first millisecond (days since the epoch, UTC).
func startOfDay(_ day: Int64) -> Int64 { day * 86_400_000 }

/// A ledger row with what a test varies; the rest plausible.
func ledgerRow(
    _ requestID: String, user: String?, at milliseconds: Int64 = startOfDay(20_000), inputTokens: Int? = 10, outputTokens: Int? = 5,
    cacheHit: Bool = false, token: String? = nil, result: String? = nil
) -> LedgerRow {
    LedgerRow(
        requestID: requestID, userID: user, tokenID: token, task: "summarize", tone: "neutral", route: "/api/process", model: "model-a",
        inputLength: 120, inputTokens: inputTokens, outputTokens: outputTokens, status: 200, code: nil,
        outcome: cacheHit ? "cache_hit" : "done", cacheHit: cacheHit, durationMilliseconds: 12.5, createdAtMilliseconds: milliseconds,
        result: result
    )
}

func append(_ rows: [LedgerRow], to store: SQLiteStore, on pool: BlockingPool) async throws {
    try await store.append(rows)
}

/// What the `sqlite3` command prints for `sql` on `path`, with its exit status.
func sqlite3(_ path: String, _ sql: String) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
    process.arguments = [path, sql]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let bytes = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
}

/// Runs a command to its end; its exit status.
@discardableResult
func run(_ executable: String, _ arguments: [String]) throws -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    return process.terminationStatus
}

/// Polls `condition` until it holds or `seconds` pass; whether it held.
func eventually(seconds: Double = 10, _ condition: () throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        try await Task.sleep(for: .milliseconds(10))
    }
    return try condition()
}
