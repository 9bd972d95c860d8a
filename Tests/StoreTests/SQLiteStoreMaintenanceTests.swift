import EventLoop
import Foundation
import Synchronization
import Testing

@testable import Store

@Suite("SQLite store: retention, backup and checks")
struct SQLiteStoreMaintenanceTests {
    @Test("commits leave the log to the checkpoint, which copies all of it back while nothing reads")
    func checkpoint() async throws {
        try await withStore { store, pool, _ in
            try await append((1...200).map { ledgerRow("c\($0)", user: "alice") }, to: store)
            let first = try await store.checkpoint()
            #expect(first.logFrames > 0)
            #expect(first.checkpointed == first.logFrames)
            #expect(try await store.history(userID: "alice", limit: 100, before: nil).items.count == 100)
        }
    }

    @Test("a healthy store's integrity check finds nothing")
    func integrityCheck() async throws {
        try await withStore { store, pool, _ in
            try await append((1...100).map { ledgerRow("r\($0)", user: "alice") }, to: store)
            #expect(try await store.integrityCheck() == [])
        }
    }

    @Test("a backup taken while another connection appends is a whole database with every row committed before it")
    func backupUnderWrites() async throws {
        try await withStore(threads: 4) { store, pool, directory in
            // Enough pages that the copy takes many steps.
            let text = String(repeating: "x", count: 2_000)
            for batch in 0..<10 {
                try await append(
                    (0..<500).map { ledgerRow("pre\(batch)-\($0)", user: "alice", result: text) }, to: store)
            }
            let committedBefore = 5_000
            let path = directory.file("store.db")
            let appender = try await SQLiteStore.open(path: path, pool: pool)
            let stop = Atomic<Bool>(false)
            let writes = Task {
                var batches = 0
                while !stop.load(ordering: .relaxed) && batches < 2_000 {
                    try await append((0..<50).map { ledgerRow("during\(batches)-\($0)", user: "alice") }, to: appender)
                    batches += 1
                }
                return batches
            }
            let copy = directory.file("copy.db")
            try await store.backup(to: copy)
            stop.store(true, ordering: .relaxed)
            let batchesWritten = try await writes.value
            await appender.close()

            #expect(try sqlite3(copy, "PRAGMA integrity_check").output == "ok")
            let rows = try #require(Int(try sqlite3(copy, "SELECT count(*) FROM requests").output))
            // One snapshot: whole batches only, none of those after the last one.
            #expect(rows >= committedBefore)
            #expect((rows - committedBefore) % 50 == 0)
            #expect(rows <= committedBefore + batchesWritten * 50)

            let reopened = try await SQLiteStore.open(path: copy, pool: pool, readOnly: true)
            #expect(try await reopened.integrityCheck() == [])
            #expect(try await reopened.historyItem(userID: "alice", id: "pre9-499") != nil)
            // The rows before and during the copy fall on two days: the copy's usage, over both, is its rows.
            #expect(try await reopened.dailyUsage(userID: "alice", fromDay: 0).map(\.requests).reduce(0, +) == rows)
            await reopened.close()
        }
    }

    @Test("a backup goes only to a new file, and a failed one leaves none")
    func backupNeedsNewFile() async throws {
        try await withStore { store, _, directory in
            let taken = directory.file("taken.db")
            #expect(FileManager.default.createFile(atPath: taken, contents: Data("keep".utf8)))
            let error = await storeError { () throws(StoreError) in try await store.backup(to: taken) }
            #expect(error?.code == .cannotOpen)
            #expect(error?.message.contains("exists") == true)
            #expect(FileManager.default.contents(atPath: taken) == Data("keep".utf8))
            let nowhere = directory.file("missing/copy.db")
            #expect(
                await storeErrorCode { () throws(StoreError) in try await store.backup(to: nowhere) } == .cannotOpen)
            #expect(!FileManager.default.fileExists(atPath: nowhere))
        }
    }
}
