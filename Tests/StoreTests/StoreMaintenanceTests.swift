import EventLoop
import Testing

@testable import Store

extension StoreBackends {
    @Suite("store: retention and checks")
    struct MaintenanceTests {
        @Test(
            "a purge deletes history before the instant and usage before the day, and nothing newer",
            arguments: Backend.allCases)
        func purge(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ in
                let day: Int64 = 20_500
                let old = backend.deletionBatch + 123
                for start in stride(from: 0, to: old, by: 1_000) {
                    try await append(
                        (start..<min(old, start + 1_000)).map {
                            ledgerRow("old\($0)", user: "u\($0 % 3)", at: startOfDay(day - 1) + Int64($0))
                        },
                        to: store
                    )
                }
                try await append(
                    [
                        ledgerRow("edge", user: "alice", at: startOfDay(day)),
                        ledgerRow("new", user: "alice", at: startOfDay(day + 1)),
                    ],
                    to: store
                )
                let purged = try await store.purge(historyBeforeMilliseconds: startOfDay(day), usageBeforeDay: day)
                #expect(purged.history == old)
                #expect(purged.usageDays == 3)
                #expect(
                    try await store.history(userID: "alice", limit: 10, before: nil).items.map(\.row.requestID) == [
                        "new", "edge",
                    ])
                #expect(try await store.history(userID: "u1", limit: 10, before: nil).items.isEmpty)
                #expect(try await store.usageReport(fromDay: 0, userID: nil).map(\.day) == [day, day + 1])

                let again = try await store.purge(historyBeforeMilliseconds: startOfDay(day), usageBeforeDay: day)
                #expect(again.history == 0 && again.usageDays == 0)
            }
        }

        @Test("a healthy store's integrity check finds nothing", arguments: Backend.allCases)
        func integrity(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ in
                try await append([ledgerRow("r1", user: "alice")], to: store)
                #expect(try await store.integrityCheck() == [])
            }
        }

        @Test("Postgres: nothing to checkpoint, and a backup is refused with a pointer to pg_dump")
        func postgresMaintenance() async throws {
            try await withStore(on: .postgres) { store, fixture in
                let checkpoint = try await store.checkpoint()
                #expect(checkpoint.logFrames == 0 && checkpoint.checkpointed == 0)
                let refused = await storeError { () throws(StoreError) in
                    try await store.backup(to: "/tmp/never-written.db")
                }
                #expect(refused?.code == .rejected)
                #expect(refused?.message.hasPrefix(fixture.name) == true)
                #expect(refused?.message.contains("pg_dump") == true)
            }
        }
    }
}
