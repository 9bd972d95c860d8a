import EventLoop
import Store
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A ledger in memory whose commits can be made to fail or to take time, to drive the
/// writer through its cases (the SQLite store's own tests cover what a commit stores).
final class ScriptedLedger: LedgerStore {
    struct State {
        var committed: [LedgerRow] = []
        var batchSizes: [Int] = []
        var failure: StoreError?
        /// Rows whose request id is here fail on their own, every time.
        var poison: Set<String> = []
        var delayMicroseconds: UInt32 = 0
        var attempts = 0
    }

    let state = Mutex(State())

    func append(_ rows: [LedgerRow]) async throws(StoreError) {
        let (failure, delay) = state.withLock { state -> (StoreError?, UInt32) in
            state.attempts += 1
            if let failure = state.failure { return (failure, state.delayMicroseconds) }
            if rows.contains(where: { state.poison.contains($0.requestID) }) {
                return (StoreError(.constraint, message: "constraint failed"), state.delayMicroseconds)
            }
            return (nil, state.delayMicroseconds)
        }
        // A slow store: each write takes that long.
        if delay > 0 { try? await Task.sleep(for: .microseconds(delay)) }
        if let failure { throw failure }
        state.withLock {
            $0.committed += rows
            $0.batchSizes.append(rows.count)
        }
    }

    var committedIDs: [String] { state.withLock { $0.committed.map(\.requestID) } }
}

func ledgerRow(_ id: String, user: String? = "u1") -> LedgerRow {
    LedgerRow(
        requestID: id, userID: user, task: "summarize", tone: nil, route: "/api/process", model: "m", inputLength: 40,
        inputTokens: 10, outputTokens: 5, status: 200, code: nil, outcome: "done", cacheHit: false,
        durationMilliseconds: 1.5, createdAtMilliseconds: 1_764_547_200_000
    )
}

@Suite("Ledger writer")
struct LedgerWriterTests {
    private func writer(
        _ ledger: ScriptedLedger, capacity: Int = 1_000, batch: Int = 500, retry: Duration = .milliseconds(5)
    ) -> LedgerWriter {
        var configuration = LedgerWriter.Configuration()
        configuration.capacity = capacity
        configuration.maximumBatch = batch
        configuration.initialRetryDelay = retry
        configuration.maximumRetryDelay = retry * 4
        return LedgerWriter(store: ledger, configuration: configuration)
    }

    @Test("commits every submitted row, in order, in batches no larger than the maximum")
    func commitsInOrderInBatches() async throws {
        let ledger = ScriptedLedger()
        let writer = writer(ledger, batch: 7)
        try await writer.start()
        for index in 0..<100 { await writer.submit(ledgerRow("r\(index)")) }
        await writer.flush()
        #expect(ledger.committedIDs == (0..<100).map { "r\($0)" })
        #expect(ledger.state.withLock { $0.batchSizes.allSatisfy { $0 <= 7 } })
        #expect(ledger.state.withLock { $0.batchSizes.count } < 100)
        await writer.stop(deadline: .now().advanced(by: .seconds(5)))
        #expect(writer.statistics.committed == 100)
        #expect(writer.statistics.dropped == 0)
    }

    @Test("a row submitted to wait is stored when the call returns")
    func strictSubmitWaitsForCommit() async throws {
        let ledger = ScriptedLedger()
        let writer = writer(ledger)
        try await writer.start()
        for index in 0..<20 {
            let committed = await writer.submitAndWait(ledgerRow("s\(index)"))
            #expect(committed)
            #expect(ledger.committedIDs.last == "s\(index)")
        }
        await writer.stop(deadline: .now().advanced(by: .seconds(5)))
    }

    @Test("rows survive a failing store and are committed once it recovers, none dropped")
    func keepsRowsThroughTransientFailures() async throws {
        let ledger = ScriptedLedger()
        ledger.state.withLock { $0.failure = StoreError(.full, message: "database or disk is full") }
        let writer = writer(ledger)
        try await writer.start()
        for index in 0..<50 { await writer.submit(ledgerRow("f\(index)")) }
        let committed = await writer.submitAndWait(ledgerRow("f50"))
        #expect(!committed)
        await eventually("the ledger has been tried 3 times", within: .seconds(30)) {
            ledger.state.withLock { $0.attempts } >= 3
        }
        #expect(ledger.committedIDs.isEmpty)
        #expect(writer.queueDepth == 51)
        ledger.state.withLock { $0.failure = nil }
        await writer.flush()
        #expect(ledger.committedIDs == (0...50).map { "f\($0)" })
        #expect(writer.statistics.failedCommits >= 3)
        #expect(writer.statistics.dropped == 0)
        await writer.stop(deadline: .now().advanced(by: .seconds(5)))
    }

    @Test("a row that fails on its own is the only one dropped, and it is counted")
    func dropsOnlyThePoisonRow() async throws {
        let ledger = ScriptedLedger()
        ledger.state.withLock { $0.poison = ["bad"] }
        let writer = writer(ledger)
        try await writer.start()
        for id in ["a", "b", "bad", "c"] { await writer.submit(ledgerRow(id)) }
        await writer.flush()
        #expect(ledger.committedIDs == ["a", "b", "c"])
        #expect(writer.statistics.dropped == 1)
        await writer.stop(deadline: .now().advanced(by: .seconds(5)))
    }

    @Test("a full queue makes a submitter wait while the store takes rows, and loses nothing")
    func fullQueueWaitsWhenHealthy() async throws {
        let ledger = ScriptedLedger()
        ledger.state.withLock { $0.delayMicroseconds = 2_000 }
        let writer = writer(ledger, capacity: 10, batch: 10)
        try await writer.start()
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<200 { group.addTask { await writer.submit(ledgerRow("q\(index)")) } }
        }
        await writer.flush()
        #expect(Set(ledger.committedIDs).count == 200)
        #expect(writer.statistics.dropped == 0)
        await writer.stop(deadline: .now().advanced(by: .seconds(5)))
    }

    @Test("a full queue while the store fails drops new rows and counts each one")
    func fullQueueDropsWhenFailing() async throws {
        let ledger = ScriptedLedger()
        ledger.state.withLock { $0.failure = StoreError(.readOnly, message: "attempt to write a readonly database") }
        let writer = writer(ledger, capacity: 10, batch: 10)
        try await writer.start()
        for index in 0..<10 { await writer.submit(ledgerRow("k\(index)")) }
        await eventually("a commit has failed", within: .seconds(30)) { writer.statistics.failedCommits >= 1 }
        for index in 10..<15 { await writer.submit(ledgerRow("k\(index)")) }
        #expect(writer.statistics.dropped == 5)
        #expect(writer.queueDepth == 10)
        ledger.state.withLock { $0.failure = nil }
        await writer.flush()
        #expect(ledger.committedIDs == (0..<10).map { "k\($0)" })
        await writer.stop(deadline: .now().advanced(by: .seconds(5)))
    }

    @Test("stop commits everything queued before it returns")
    func stopFlushes() async throws {
        let ledger = ScriptedLedger()
        let writer = writer(ledger)
        try await writer.start()
        for index in 0..<300 { await writer.submit(ledgerRow("t\(index)")) }
        await writer.stop(deadline: .now().advanced(by: .seconds(5)))
        #expect(ledger.committedIDs.count == 300)
        #expect(writer.statistics.dropped == 0)
    }

    @Test("stop with a store that never recovers ends by its deadline and counts what it gave up")
    func stopGivesUpAtDeadline() async throws {
        let ledger = ScriptedLedger()
        ledger.state.withLock { $0.failure = StoreError(.busy, message: "database is locked") }
        let writer = writer(ledger)
        try await writer.start()
        for index in 0..<5 { await writer.submit(ledgerRow("d\(index)")) }
        // Returns at all: a store that keeps failing cannot hold the stop past its deadline.
        await writer.stop(deadline: .now().advanced(by: .milliseconds(200)))
        #expect(writer.statistics.dropped == 5)
        #expect(writer.queueDepth == 0)
        // After the stop, a row is refused and counted, not lost silently.
        await writer.submit(ledgerRow("late"))
        #expect(writer.statistics.dropped == 6)
    }
}
