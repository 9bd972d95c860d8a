import EventLoop
import Testing

@testable import Store

extension StoreBackends {
    @Suite("store: ledger and history")
    struct HistoryTests {
        @Test("pages come newest first, with a cursor exactly when a page is full", arguments: Backend.allCases)
        func pages(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, fixture in
                try await append((1...5).map { ledgerRow("a\($0)", user: "alice") }, to: store)
                let first = try await store.history(userID: "alice", limit: 2, before: nil)
                #expect(first.items.map(\.row.requestID) == ["a5", "a4"])
                let second = try await store.history(
                    userID: "alice", limit: 2, before: try #require(first.nextCursor) as HistoryCursor)
                #expect(second.items.map(\.row.requestID) == ["a3", "a2"])
                let third = try await store.history(
                    userID: "alice", limit: 2, before: try #require(second.nextCursor) as HistoryCursor)
                #expect(third.items.map(\.row.requestID) == ["a1"])
                #expect(third.nextCursor == nil)

                // A last page that is exactly full still hands out a cursor; the page after is empty.
                let whole = try await store.history(userID: "alice", limit: 5, before: nil)
                #expect(whole.items.count == 5)
                let after = try await store.history(
                    userID: "alice", limit: 5, before: try #require(whole.nextCursor) as HistoryCursor)
                #expect(after == HistoryPage(items: [], nextCursor: nil))
                #expect(whole.items.map(\.sequence) == whole.items.map(\.sequence).sorted(by: >))
            }
        }

        @Test(
            "the cursor key: 32 bytes, the same for all stores on a database (restarts, instances); another's differs",
            arguments: Backend.allCases)
        func cursorKey(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, fixture in
                #expect(store.historyCursorKey.count == 32)
                #expect(Set(store.historyCursorKey).count > 8)
                let (other, close) = try await fixture.openAnother()
                #expect(other.historyCursorKey == store.historyCursorKey)
                await close()
                try await withStore(on: backend) { elsewhere, _ in
                    #expect(elsewhere.historyCursorKey.count == 32)
                    #expect(elsewhere.historyCursorKey != store.historyCursorKey)
                }
            }
        }

        @Test("a row reads back as it was written, without its token id", arguments: Backend.allCases)
        func roundTrip(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, fixture in
                var row = ledgerRow("r1", user: "alice", token: "tok1", result: "the answer")
                row.code = "upstream_timeout"
                row.status = 504
                row.inputLength = nil
                row.model = nil
                try await append([row], to: store)
                let item = try #require(try await store.historyItem(userID: "alice", id: "r1"))
                row.tokenID = nil
                #expect(item.row == row)
            }
        }

        @Test("a user sees only their own rows; a guest's rows show to no one", arguments: Backend.allCases)
        func scopedToUser(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, fixture in
                try await append(
                    [
                        ledgerRow("a1", user: "alice"), ledgerRow("b1", user: "bob"), ledgerRow("g1", user: nil),
                        ledgerRow("a2", user: "alice"),
                    ],
                    to: store
                )
                #expect(
                    try await store.history(userID: "alice", limit: 100, before: nil).items.map(\.row.requestID) == [
                        "a2", "a1",
                    ])
                #expect(
                    try await store.history(userID: "bob", limit: 100, before: nil).items.map(\.row.requestID) == ["b1"]
                )
                for nobody in ["", "guest", "NULL"] {
                    #expect(try await store.history(userID: nobody, limit: 100, before: nil).items.isEmpty)
                }
                // Another user's cursor does not open anyone else's rows.
                let bobs = try await store.history(userID: "bob", limit: 1, before: HistoryCursor(sequence: .max))
                #expect(bobs.items.map(\.row.requestID) == ["b1"])
                #expect(try await store.historyItem(userID: "bob", id: "a1") == nil)
                #expect(try await store.historyItem(userID: "alice", id: "g1") == nil)
            }
        }

        @Test("a limit outside 1...100 is brought back into it", arguments: Backend.allCases)
        func clampsLimit(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, fixture in
                try await append((1...120).map { ledgerRow("a\($0)", user: "alice") }, to: store)
                #expect(try await store.history(userID: "alice", limit: 0, before: nil).items.count == 1)
                #expect(try await store.history(userID: "alice", limit: -5, before: nil).items.count == 1)
                #expect(try await store.history(userID: "alice", limit: 1_000, before: nil).items.count == 100)
            }
        }

        @Test(
            "an item is found and deleted only by its own user, the newest of a repeated id first",
            arguments: Backend.allCases)
        func itemsScopedToUser(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, fixture in
                try await append(
                    [
                        ledgerRow("same", user: "alice", result: "old"),
                        ledgerRow("same", user: "alice", result: "new"), ledgerRow("b1", user: "bob"),
                    ],
                    to: store
                )
                #expect(try await store.historyItem(userID: "alice", id: "same")?.row.result == "new")
                #expect(try await store.deleteHistoryItem(userID: "bob", id: "same") == false)
                #expect(try await store.deleteHistoryItem(userID: "alice", id: "b1") == false)
                #expect(try await store.historyItem(userID: "bob", id: "b1") != nil)
                #expect(try await store.deleteHistoryItem(userID: "alice", id: "same") == true)
                #expect(try await store.historyItem(userID: "alice", id: "same") == nil)
                #expect(try await store.deleteHistoryItem(userID: "alice", id: "same") == false)
            }
        }

        @Test(
            "deleting a user's history takes all of theirs, in batches, and nobody else's", arguments: Backend.allCases)
        func deletesHistory(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, fixture in
                let count = backend.deletionBatch * 2 + 17
                for start in stride(from: 0, to: count, by: 1_000) {
                    try await append(
                        (start..<min(count, start + 1_000)).map { ledgerRow("a\($0)", user: "alice") }, to: store)
                }
                try await append([ledgerRow("b1", user: "bob")], to: store)
                #expect(try await store.deleteHistory(userID: "alice") == count)
                #expect(try await store.history(userID: "alice", limit: 10, before: nil).items.isEmpty)
                #expect(try await store.history(userID: "bob", limit: 10, before: nil).items.count == 1)
                #expect(try await store.deleteHistory(userID: "alice") == 0)
                // Usage is the ledger's account, not history: it stays.
                #expect(try await store.dailyUsage(userID: "alice", fromDay: 0).first?.requests == count)
            }
        }

        @Test("a batch that fails stores nothing of itself, and the next batch goes in", arguments: Backend.allCases)
        func allOrNothing(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, fixture in
                try await append([ledgerRow("t0", user: "alice", token: "tok")], to: store)
                // Another process adds a rule the writer's second row breaks.
                try await fixture.poison()
                let rows = [
                    ledgerRow("a1", user: "alice"), ledgerRow("poison", user: "alice"), ledgerRow("a2", user: "alice"),
                ]
                let error = await storeError { () throws(StoreError) in try await store.append(rows) }
                #expect(error?.code == .constraint)
                #expect(
                    try await store.history(userID: "alice", limit: 10, before: nil).items.map(\.row.requestID) == [
                        "t0"
                    ])
                #expect(try await store.dailyUsage(userID: "alice", fromDay: 0).map(\.requests) == [1])

                try await append([ledgerRow("a3", user: "alice")], to: store)
                #expect(
                    try await store.history(userID: "alice", limit: 10, before: nil).items.map(\.row.requestID) == [
                        "a3", "t0",
                    ])
            }
        }

        @Test("an empty batch writes nothing", arguments: Backend.allCases)
        func emptyBatch(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, fixture in
                try await append([], to: store)
                #expect(try await store.history(userID: "alice", limit: 10, before: nil).items.isEmpty)
            }
        }
    }
}
