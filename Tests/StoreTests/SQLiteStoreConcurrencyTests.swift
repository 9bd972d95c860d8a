import EventLoop
import Testing

@testable import Store

@Suite("SQLite store: several connections")
struct SQLiteStoreConcurrencyTests {
    @Test("two stores on one file both append at once, waiting for each other's lock")
    func twoWriters() async throws {
        try await withStore(threads: 4) { first, pool, directory in
            let second = try await SQLiteStore.open(path: directory.file("store.db"), pool: pool)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (name, store) in [("a", first), ("b", second)] {
                    group.addTask {
                        for batch in 0..<40 {
                            try await append((0..<25).map { ledgerRow("\(name)\(batch)-\($0)", user: name) }, to: store)
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await first.dailyUsage(userID: "a", fromDay: 0).first?.requests == 1_000)
            #expect(try await first.dailyUsage(userID: "b", fromDay: 0).first?.requests == 1_000)
            #expect(try await second.history(userID: "a", limit: 100, before: nil).items.count == 100)
            await second.close()
        }
    }

    @Test("reads run while the writer appends, each on a connection of its own")
    func readsBesideWrites() async throws {
        try await withStore(threads: 4) { store, pool, _ in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for batch in 0..<40 {
                        try await append((0..<25).map { ledgerRow("w\(batch)-\($0)", user: "alice") }, to: store)
                    }
                }
                for _ in 0..<3 {
                    group.addTask {
                        var seen = 0
                        for _ in 0..<50 {
                            let page = try await store.history(userID: "alice", limit: 100, before: nil)
                            // A reader sees whole batches only.
                            #expect(page.items.count % 25 == 0 || page.items.count == 100)
                            #expect(page.items.count >= seen)
                            seen = page.items.count
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await store.dailyUsage(userID: "alice", fromDay: 0).first?.requests == 1_000)
        }
    }
}
