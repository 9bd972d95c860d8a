import EventLoop
import Testing

@testable import Store

extension StoreBackends {
    @Suite("store: daily usage")
    struct UsageTests {
        @Test(
            "a day's usage sums requests and tokens; a cached answer is a request costing nothing; guests sum as one",
            arguments: Backend.allCases)
        func sums(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, fixture in
                let day: Int64 = 20_100
                try await append(
                    [
                        ledgerRow("1", user: "alice", at: startOfDay(day), inputTokens: 100, outputTokens: 20),
                        ledgerRow("2", user: "alice", at: startOfDay(day) + 1_000, inputTokens: 50, outputTokens: 5),
                        ledgerRow(
                            "3", user: "alice", at: startOfDay(day) + 2_000, inputTokens: 70, outputTokens: 7,
                            cacheHit: true),
                        ledgerRow("4", user: "alice", at: startOfDay(day) + 3_000, inputTokens: nil, outputTokens: nil),
                        ledgerRow("5", user: nil, at: startOfDay(day), inputTokens: 1_000, outputTokens: 1_000),
                    ],
                    to: store
                )
                // A second batch adds to the same day.
                try await append(
                    [ledgerRow("6", user: "alice", at: startOfDay(day) + 4_000, inputTokens: 1, outputTokens: 2)],
                    to: store)
                // Two more guests, in another batch: still one guests' line.
                try await append(
                    [
                        ledgerRow("7", user: nil, at: startOfDay(day) + 5_000, inputTokens: 3, outputTokens: 4),
                        ledgerRow("8", user: nil, at: startOfDay(day) + 6_000, inputTokens: nil, outputTokens: nil),
                    ], to: store)
                let usage = try await store.dailyUsage(userID: "alice", fromDay: day)
                #expect(
                    usage == [DailyUsage(userID: "alice", day: day, requests: 5, inputTokens: 151, outputTokens: 27)])
                // A guest's quota is its address's: the guests' line seeds none.
                #expect(try await store.tokensCharged(onDay: day) == ["alice": 178])
                #expect(
                    try await store.usageReport(fromDay: day, userID: nil) == [
                        DailyUsage(
                            userID: DailyUsage.guestUserID, day: day, requests: 3, inputTokens: 1_003,
                            outputTokens: 1_004),
                        DailyUsage(userID: "alice", day: day, requests: 5, inputTokens: 151, outputTokens: 27),
                    ])
                #expect(try await store.usageReport(fromDay: day, userID: "alice").count == 1)
            }
        }

        @Test(
            "a day's cost: each request's known cost, nothing for a cached answer or an unknown one; guests as one",
            arguments: Backend.allCases)
        func cost(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, fixture in
                let day: Int64 = 20_150
                try await append(
                    [
                        ledgerRow(
                            "1", user: "alice", at: startOfDay(day), inputTokens: 100, outputTokens: 20, costMicros: 140
                        ),
                        ledgerRow(
                            "2", user: "alice", at: startOfDay(day) + 1, inputTokens: 9, outputTokens: 9,
                            cacheHit: true, costMicros: 0),
                        ledgerRow("3", user: "alice", at: startOfDay(day) + 2, inputTokens: 50, outputTokens: 5),
                        ledgerRow(
                            "4", user: nil, at: startOfDay(day), inputTokens: 10, outputTokens: 10, costMicros: 30),
                        ledgerRow(
                            "5", user: nil, at: startOfDay(day) + 3, inputTokens: 1, outputTokens: 1, costMicros: 3),
                    ],
                    to: store)
                try await append(
                    [
                        ledgerRow(
                            "6", user: "alice", at: startOfDay(day + 1), inputTokens: 1, outputTokens: 1, costMicros: 7)
                    ],
                    to: store)
                #expect(
                    try await store.dailyUsage(userID: "alice", fromDay: day).map(\.costMicros).sorted() == [7, 140])
                #expect(
                    try await store.usageReport(fromDay: day, userID: nil).map { [$0.userID, String($0.costMicros)] }
                        == [
                            [DailyUsage.guestUserID, "33"], ["alice", "140"], ["alice", "7"],
                        ])
            }
        }

        @Test(
            "days are UTC days: the last millisecond of one and the first of the next count apart",
            arguments: Backend.allCases)
        func utcDays(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, fixture in
                let day: Int64 = 20_200
                try await append(
                    [
                        ledgerRow("1", user: "alice", at: startOfDay(day) - 1, inputTokens: 1, outputTokens: 0),
                        ledgerRow("2", user: "alice", at: startOfDay(day), inputTokens: 2, outputTokens: 0),
                        ledgerRow("3", user: "alice", at: startOfDay(day + 1) - 1, inputTokens: 4, outputTokens: 0),
                    ],
                    to: store
                )
                let usage = try await store.dailyUsage(userID: "alice", fromDay: 0)
                #expect(usage.map(\.day) == [day, day - 1])
                #expect(usage.map(\.inputTokens) == [6, 1])
                #expect(try await store.dailyUsage(userID: "alice", fromDay: day).map(\.day) == [day])
            }
        }

        @Test("the UTC day of an instant rounds down, before the epoch too")
        func dayArithmetic() {
            #expect(SQLiteStore.utcDay(ofMilliseconds: 0) == 0)
            #expect(SQLiteStore.utcDay(ofMilliseconds: 86_399_999) == 0)
            #expect(SQLiteStore.utcDay(ofMilliseconds: 86_400_000) == 1)
            #expect(SQLiteStore.utcDay(ofMilliseconds: -1) == -1)
            #expect(SQLiteStore.utcDay(ofMilliseconds: -86_400_000) == -1)
            #expect(SQLiteStore.utcDay(ofMilliseconds: -86_400_001) == -2)
        }

        @Test("tokens charged on a day, per user, and no one else's day", arguments: Backend.allCases)
        func tokensCharged(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, fixture in
                let day: Int64 = 20_300
                try await append(
                    [
                        ledgerRow("1", user: "alice", at: startOfDay(day), inputTokens: 10, outputTokens: 1),
                        ledgerRow("2", user: "bob", at: startOfDay(day), inputTokens: 20, outputTokens: 2),
                        ledgerRow("3", user: "bob", at: startOfDay(day - 1), inputTokens: 300, outputTokens: 0),
                        ledgerRow(
                            "4", user: "carol", at: startOfDay(day), inputTokens: 5, outputTokens: 5, cacheHit: true),
                    ],
                    to: store
                )
                #expect(try await store.tokensCharged(onDay: day) == ["alice": 11, "bob": 22, "carol": 0])
                #expect(try await store.tokensCharged(onDay: day + 1) == [:])
            }
        }

        @Test(
            "what each user and all guests spent since an instant, tokens and cost; no cached answers or jobs' rows",
            arguments: Backend.allCases)
        func spending(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, fixture in
                let start = startOfDay(20_500)
                try await append(
                    [
                        ledgerRow("1", user: "alice", at: start, inputTokens: 10, outputTokens: 1, costMicros: 500),
                        ledgerRow("2", user: "alice", at: start + 5, inputTokens: 20, outputTokens: 2, costMicros: 700),
                        ledgerRow("3", user: "alice", at: start - 1, inputTokens: 300, outputTokens: 0, costMicros: 9),
                        ledgerRow("4", user: nil, at: start + 1, inputTokens: 5, outputTokens: 5, costMicros: 100),
                        ledgerRow("5", user: nil, at: start + 2, inputTokens: 1, outputTokens: 1),
                        ledgerRow(
                            "6", user: "bob", at: start, inputTokens: 7, outputTokens: 7, cacheHit: true,
                            costMicros: 0),
                        ledgerRow(
                            "7", user: "bob", at: start, inputTokens: 50, outputTokens: 50, costMicros: 999,
                            route: "/api/jobs"),
                        ledgerRow("8", user: "device:d1", at: start, inputTokens: 3, outputTokens: 4, costMicros: 30),
                    ],
                    to: store
                )
                let spent = try await store.spending(since: start).sorted { ($0.userID ?? "") < ($1.userID ?? "") }
                #expect(
                    spent == [
                        Spending(userID: nil, tokens: 12, micros: 100),
                        Spending(userID: "alice", tokens: 33, micros: 1200),
                        Spending(userID: "device:d1", tokens: 7, micros: 30),
                    ])
                #expect(try await store.spending(since: start + 6).isEmpty)
            }
        }

        @Test("the report runs by day, then user, for everyone or one user", arguments: Backend.allCases)
        func report(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, fixture in
                let day: Int64 = 20_400
                try await append(
                    [
                        ledgerRow("1", user: "bob", at: startOfDay(day + 1)),
                        ledgerRow("2", user: "alice", at: startOfDay(day + 1)),
                        ledgerRow("3", user: "bob", at: startOfDay(day)),
                        ledgerRow("4", user: "carol", at: startOfDay(day - 1)),
                    ],
                    to: store
                )
                let everyone = try await store.usageReport(fromDay: day, userID: nil)
                #expect(everyone.map { "\($0.day - day):\($0.userID)" } == ["0:bob", "1:alice", "1:bob"])
                let bob = try await store.usageReport(fromDay: day - 1, userID: "bob")
                #expect(bob.map(\.day) == [day, day + 1])
                #expect(try await store.dailyUsage(userID: "bob", fromDay: 0).map(\.day) == [day + 1, day])
            }
        }
    }
}
