import Testing

@testable import Access
@testable import Telemetry

/// Authentication, rate limits and client addresses: the pure parts of `Access`.
@Suite("Access")
struct AccessTests {
    // Digests computed with Python's hashlib.
    static let aliceToken = "secret-token-alice"
    static let aliceHash = "a116b9ec15e1d1859515c83a50ec850e708a07369d58bddf57f4913683e50c08"
    static let bobToken = "secret-token-bob"
    static let bobHash = "201fb90e3cc7a7c159d51dea6cc69666ca9ea8eb5a75d463c73d4b11541b77d4"

    // MARK: - Token configuration

    @Suite("Token configuration")
    struct TokenConfigurationTests {
        @Test("parses GATEWAY_TOKENS entries")
        func parsesInline() throws {
            let store = try TokenStore.parse(
                inline: " \(aliceHash):alice:pro , \(bobHash.uppercased()):bob@example.com:free,")
            #expect(store.count == 2)
            #expect(store.entries.map(\.userID) == ["alice", "bob@example.com"])
            #expect(store.entries.map(\.plan) == ["pro", "free"])
            #expect(
                store.authenticate(authorization: "Bearer \(bobToken)")
                    == Caller(userID: "bob@example.com", plan: "free"))
        }

        @Test("parses an empty GATEWAY_TOKENS as no callers")
        func parsesEmptyInline() throws {
            #expect(try TokenStore.parse(inline: "").isEmpty)
            #expect(try TokenStore.parse(inline: " , ").isEmpty)
        }

        static let inlineErrors: [(text: String, error: TokenConfigError)] = [
            ("\(aliceHash):alice", TokenConfigError(.wrongFieldCount(found: 2), at: .entry(1))),
            (
                "\(aliceHash):alice:pro,\(bobHash):bob:pro:extra",
                TokenConfigError(.wrongFieldCount(found: 4), at: .entry(2))
            ),
            ("\(aliceHash):alice:pro,,abc:bob:pro", TokenConfigError(.invalidHash, at: .entry(3))),
            ("\(aliceHash.dropLast())g:alice:pro", TokenConfigError(.invalidHash, at: .entry(1))),
            ("\(aliceHash)0:alice:pro", TokenConfigError(.invalidHash, at: .entry(1))),
            ("\(aliceHash)::pro", TokenConfigError(.invalidUserID, at: .entry(1))),
            ("\(aliceHash):al ice:pro", TokenConfigError(.invalidUserID, at: .entry(1))),
            ("\(aliceHash):alice:", TokenConfigError(.invalidPlanName, at: .entry(1))),
            ("\(aliceHash):alice:pro/x", TokenConfigError(.invalidPlanName, at: .entry(1))),
            (
                "\(aliceHash):alice:pro,\(bobHash):bob:pro,\(aliceHash.uppercased()):carol:pro",
                TokenConfigError(.duplicateToken(first: .entry(1)), at: .entry(3))
            ),
        ]

        @Test("rejects malformed GATEWAY_TOKENS entries by position", arguments: inlineErrors)
        func rejectsMalformedInline(testCase: (text: String, error: TokenConfigError)) {
            #expect(throws: testCase.error) { try TokenStore.parse(inline: testCase.text) }
        }

        @Test("parses a tokens file with comments, blank lines, tabs and CRLF")
        func parsesFile() throws {
            let text = """
                # callers of the staging gateway
                \(aliceHash) alice pro   # the first one

                \t\(bobHash)\tbob\tfree\r
                """
            let store = try TokenStore.parse(file: text)
            #expect(store.entries.map(\.userID) == ["alice", "bob"])
            #expect(store.authenticate(authorization: "Bearer \(aliceToken)") == Caller(userID: "alice", plan: "pro"))
        }

        static let fileErrors: [(text: String, error: TokenConfigError)] = [
            ("# header\n\n\(aliceHash) alice\n", TokenConfigError(.wrongFieldCount(found: 2), at: .line(3))),
            ("\(aliceHash) alice pro\r\n\r\nnot-a-hash bob pro\r\n", TokenConfigError(.invalidHash, at: .line(3))),
            ("\(aliceHash):alice:pro\n", TokenConfigError(.wrongFieldCount(found: 1), at: .line(1))),
            (
                "\(aliceHash) alice pro\n\(aliceHash) alice2 pro\n",
                TokenConfigError(.duplicateToken(first: .line(1)), at: .line(2))
            ),
            ("\n\n\n\n\(aliceHash) alice pro!\n", TokenConfigError(.invalidPlanName, at: .line(5))),
        ]

        @Test("rejects malformed tokens file lines by line number", arguments: fileErrors)
        func rejectsMalformedFile(testCase: (text: String, error: TokenConfigError)) {
            #expect(throws: testCase.error) { try TokenStore.parse(file: testCase.text) }
        }

        @Test("errors never echo a hash or a field")
        func errorsDoNotEchoSecrets() {
            let texts = [
                "\(aliceHash):alice:pro,\(aliceHash):alice:pro",
                "\(aliceToken):alice:pro",
                "\(aliceHash):\(aliceToken)!:pro",
                "\(aliceHash)",
            ]
            for text in texts {
                do {
                    _ = try TokenStore.parse(inline: text)
                    Issue.record("expected an error for \(text.count) characters of configuration")
                } catch {
                    let message = error.description
                    #expect(!message.contains(aliceHash))
                    #expect(!message.contains(String(aliceHash.prefix(8))))
                    #expect(!message.contains(aliceToken))
                    #expect(message.hasPrefix("entry "))
                }
            }
            #expect(
                TokenConfigError(.invalidHash, at: .line(4)).description
                    == "line 4: the token hash is not 64 hexadecimal digits")
        }

        @Test("a configured entry prints without its digest")
        func callerTokenDescriptionHidesDigest() throws {
            let entry = try #require(CallerToken(hexDigest: aliceHash, userID: "alice", plan: "pro"))
            #expect(entry.description == "CallerToken(userID: alice, plan: pro)")
            #expect(!String(describing: entry).contains(String(aliceHash.prefix(8))))
            #expect(CallerToken(hexDigest: "abc", userID: "alice", plan: "pro") == nil)
        }
    }

    // MARK: - Authentication

    @Suite("Bearer authentication")
    struct AuthenticationTests {
        static let store = TokenStore(entries: [
            CallerToken(hexDigest: aliceHash, userID: "alice", plan: "pro")!,
            CallerToken(hexDigest: bobHash, userID: "bob", plan: "free")!,
        ])
        static let alice = Caller(userID: "alice", plan: "pro")

        static let cases: [(name: String, header: String?, caller: Caller?)] = [
            ("missing header", nil, nil),
            ("empty header", "", nil),
            ("scheme only", "Bearer", nil),
            ("scheme and space", "Bearer ", nil),
            ("wrong scheme", "Basic \(aliceToken)", nil),
            ("token without scheme", aliceToken, nil),
            ("wrong token", "Bearer secret-token-mallory", nil),
            ("right token", "Bearer \(aliceToken)", alice),
            ("lower-case scheme", "bearer \(aliceToken)", alice),
            ("upper-case scheme", "BEARER \(aliceToken)", alice),
            ("two spaces", "Bearer  \(aliceToken)", alice),
            ("tab instead of space", "Bearer\t\(aliceToken)", nil),
            ("leading space", " Bearer \(aliceToken)", nil),
            ("trailing space", "Bearer \(aliceToken) ", nil),
            ("token with a space", "Bearer secret token", nil),
            ("token prefix", "Bearer \(aliceToken.dropLast())", nil),
            ("token with a suffix", "Bearer \(aliceToken)x", nil),
            ("the hash as token", "Bearer \(aliceHash)", nil),
            ("non-ASCII token", "Bearer \(aliceToken)é", nil),
            ("scheme look-alike", "Bearex \(aliceToken)", nil),
            ("longer scheme", "Bearers \(aliceToken)", nil),
            ("too long", "Bearer " + String(repeating: "a", count: 513), nil),
        ]

        @Test("accepts `Bearer`, one or more spaces and a configured token, and nothing else", arguments: cases)
        func authenticates(testCase: (name: String, header: String?, caller: Caller?)) {
            #expect(Self.store.authenticate(authorization: testCase.header) == testCase.caller, "\(testCase.name)")
        }

        @Test("accepts a token of the longest length")
        func acceptsLongestToken() {
            let token = String(repeating: "~", count: TokenStore.maximumTokenLength)
            let store = TokenStore(entries: [
                CallerToken(hexDigest: TokenStore.hashLine(forToken: token), userID: "long", plan: "pro")!
            ])
            #expect(store.authenticate(authorization: "Bearer \(token)") == Caller(userID: "long", plan: "pro"))
            #expect(TokenStore.isAcceptableToken(token))
            #expect(!TokenStore.isAcceptableToken(token + "~"))
            #expect(!TokenStore.isAcceptableToken(""))
        }

        @Test("an empty store lets nobody in")
        func emptyStoreRefuses() {
            #expect(TokenStore(entries: []).authenticate(authorization: "Bearer \(aliceToken)") == nil)
        }

        @Test("token hash reads one token of 1-512 printable ASCII characters without spaces, blanks around it dropped")
        func tokenFromInput() {
            let longest = String(repeating: "~", count: TokenStore.maximumTokenLength)
            #expect(TokenStore.token(fromInput: Array("\(aliceToken)\n".utf8)) == aliceToken)
            #expect(TokenStore.token(fromInput: Array("  \(aliceToken)\r\n\n".utf8)) == aliceToken)
            #expect(TokenStore.token(fromInput: Array(longest.utf8)) == longest)
            for input in [
                "", " \n", longest + "~", "two words", "one\ntwo", "tab\tinside", "caf\u{E9}", "nul\0byte",
            ] {
                #expect(TokenStore.token(fromInput: Array(input.utf8)) == nil, "\(input.prefix(20))")
            }
        }

        @Test("hashLine prints the configured digest of a token read from stdin")
        func hashLinePrintsDigest() {
            #expect(TokenStore.hashLine(forToken: aliceToken) == aliceHash)
            #expect(TokenStore.hashLine(forToken: "\(aliceToken)\n") == aliceHash)
            #expect(TokenStore.hashLine(forToken: "  \(aliceToken)\r\n") == aliceHash)
        }
    }

    // MARK: - Plans

    @Suite("Plans")
    struct PlanTests {
        @Test("parses PLANS with unlimited fields")
        func parsesPlans() throws {
            let catalog = try PlanCatalog.parse(" free:20:2:50000 , pro:600:16:5000000,internal:-:-:-,")
            #expect(
                catalog.plan(named: "free")
                    == Plan(name: "free", requestsPerMinute: 20, concurrentRequests: 2, tokensPerDay: 50_000))
            #expect(catalog.plan(named: "pro").requestsPerMinute == 600)
            #expect(catalog.plan(named: "internal").isUnlimited)
            #expect(catalog.all.map(\.name) == ["default", "free", "guest", "internal", "pro"])
        }

        @Test("a plan's fifth field is its own budgets, in money or tokens, a day or a month; the old form stays valid")
        func parsesPlanBudgets() throws {
            let catalog = try PlanCatalog.parse(
                "free:20:2:50000:0.5/day+10/month+200000tokens/day,pro:-:-:-:-,old:1:1:1")
            #expect(
                catalog.plan(named: "free").budgets == [
                    BudgetLimit(period: .day, unit: .micros, amount: 500_000),
                    BudgetLimit(period: .month, unit: .micros, amount: 10_000_000),
                    BudgetLimit(period: .day, unit: .tokens, amount: 200_000),
                ])
            #expect(catalog.plan(named: "pro").budgets.isEmpty)
            #expect(catalog.plan(named: "old").budgets.isEmpty)
            #expect(catalog.plan(named: "old").tokensPerDay == 1)
        }

        @Test("has built-in guest and default plans")
        func hasBuiltIns() throws {
            let catalog = try PlanCatalog.parse("")
            #expect(catalog.guest == PlanCatalog.builtInGuest)
            #expect(catalog.guest.requestsPerMinute == 30)
            #expect(catalog.plan(for: nil) == catalog.guest)
            #expect(catalog.plan(named: "unknown") == catalog.default)
            #expect(catalog.plan(for: Caller(userID: "x", plan: "gold")) == PlanCatalog.builtInDefault)
        }

        @Test("lets PLANS redefine guest and default")
        func redefinesBuiltIns() throws {
            let catalog = try PlanCatalog.parse("guest:5:1:1000,default:-:4:-")
            #expect(
                catalog.guest == Plan(name: "guest", requestsPerMinute: 5, concurrentRequests: 1, tokensPerDay: 1000))
            #expect(
                catalog.plan(named: "nope")
                    == Plan(name: "default", requestsPerMinute: nil, concurrentRequests: 4, tokensPerDay: nil))
        }

        static let errors: [(text: String, error: PlanConfigError)] = [
            ("free:20:2", PlanConfigError(.wrongFieldCount(found: 3), position: 1)),
            ("free:20:2:100,pro:1:2:3:4/day:5", PlanConfigError(.wrongFieldCount(found: 6), position: 2)),
            ("free:20:2:100,pro:1:2:3:4", PlanConfigError(.invalidBudget, position: 2)),
            ("pro:1:2:3:5/week", PlanConfigError(.invalidBudget, position: 1)),
            ("pro:1:2:3:5/day+6/day", PlanConfigError(.invalidBudget, position: 1)),
            ("free:20:2:100,,b@d:1:1:1", PlanConfigError(.invalidName, position: 3)),
            ("free:x:2:100", PlanConfigError(.invalidLimit(.requestsPerMinute), position: 1)),
            ("free:20:0:100", PlanConfigError(.invalidLimit(.concurrentRequests), position: 1)),
            ("free:20:2:-5", PlanConfigError(.invalidLimit(.tokensPerDay), position: 1)),
            ("free:+20:2:5", PlanConfigError(.invalidLimit(.requestsPerMinute), position: 1)),
            ("free:20:2:99999999999999999999", PlanConfigError(.invalidLimit(.tokensPerDay), position: 1)),
            ("free:20:2:", PlanConfigError(.invalidLimit(.tokensPerDay), position: 1)),
            ("free:1:1:1,free:2:2:2", PlanConfigError(.duplicateName(first: 1), position: 2)),
        ]

        @Test("rejects malformed PLANS entries by position", arguments: errors)
        func rejectsMalformedPlans(testCase: (text: String, error: PlanConfigError)) {
            #expect(throws: testCase.error) { try PlanCatalog.parse(testCase.text) }
        }
    }

    // MARK: - Rate limits

    @Suite("Rate limits")
    struct RateLimitTests {
        /// Midnight UTC of some day, so daily resets are easy to see.
        static let midnight = 19_700.0 * 86_400

        static func at(_ seconds: Double) -> Instant {
            Instant(secondsSinceEpoch: midnight + seconds)
        }

        static func allowed(_ decision: RateDecision, sourceLocation: SourceLocation = #_sourceLocation) -> (
            lease: RateLease, status: RateStatus?
        )? {
            guard case .allowed(let lease, let status) = decision else {
                Issue.record("expected the request to be allowed, got \(decision)", sourceLocation: sourceLocation)
                return nil
            }
            return (lease, status)
        }

        static func refused(_ decision: RateDecision, sourceLocation: SourceLocation = #_sourceLocation) -> (
            status: RateStatus, reason: RefusalReason
        )? {
            guard case .refused(let status, let reason) = decision else {
                Issue.record("expected the request to be refused, got \(decision)", sourceLocation: sourceLocation)
                return nil
            }
            return (status, reason)
        }

        @Test("refuses past the per-minute limit with Retry-After, then allows as the window slides")
        func perMinuteLimit() async throws {
            let limiter = InMemoryRateLimiter()
            let plan = Plan(name: "p", requestsPerMinute: 3, concurrentRequests: nil, tokensPerDay: nil)

            var remaining: [Int] = []
            for offset in [100.5, 110.5, 120.5] {
                let (lease, status) = try #require(
                    Self.allowed(await limiter.acquire(key: "k", plan: plan, now: Self.at(offset))))
                #expect(!lease.holdsSlot)
                remaining.append(try #require(status).remaining)
                #expect(
                    status
                        == RateStatus(
                            quota: .requestsPerMinute, limit: 3, remaining: status!.remaining, resetSeconds: 60))
            }
            #expect(remaining == [2, 1, 0])

            // The oldest request (second 100) leaves the window at 160.
            let refusal = try #require(Self.refused(await limiter.acquire(key: "k", plan: plan, now: Self.at(130))))
            #expect(refusal.reason == .requestsPerMinute)
            #expect(
                refusal.status
                    == RateStatus(
                        quota: .requestsPerMinute, limit: 3, remaining: 0, resetSeconds: 50, retryAfterSeconds: 30))
            #expect(
                refusal.status.headerFields.map(\.name) == [
                    "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After",
                ])
            #expect(refusal.status.headerFields.map(\.value) == ["3", "0", "50", "30"])

            let late = try #require(Self.refused(await limiter.acquire(key: "k", plan: plan, now: Self.at(159.9))))
            #expect(late.status.retryAfterSeconds == 1)

            // Refused requests were not counted: at 160 exactly one slot is free again.
            let again = try #require(Self.allowed(await limiter.acquire(key: "k", plan: plan, now: Self.at(160))))
            #expect(again.status?.remaining == 0)
            let next = try #require(Self.refused(await limiter.acquire(key: "k", plan: plan, now: Self.at(165))))
            #expect(next.status.retryAfterSeconds == 5)

            // Other keys have their own windows.
            #expect(Self.allowed(await limiter.acquire(key: "other", plan: plan, now: Self.at(165))) != nil)

            // A full minute after the last request, the whole limit is back.
            let fresh = try #require(Self.allowed(await limiter.acquire(key: "k", plan: plan, now: Self.at(221))))
            #expect(fresh.status?.remaining == 2)
        }

        @Test("counts requests in the same second together")
        func sameSecond() async throws {
            let limiter = InMemoryRateLimiter()
            let plan = Plan(name: "p", requestsPerMinute: 2, concurrentRequests: nil, tokensPerDay: nil)
            _ = await limiter.acquire(key: "k", plan: plan, now: Self.at(10.1))
            _ = await limiter.acquire(key: "k", plan: plan, now: Self.at(10.2))
            let refusal = try #require(Self.refused(await limiter.acquire(key: "k", plan: plan, now: Self.at(10.7))))
            #expect(refusal.status.retryAfterSeconds == 60)
            #expect(Self.allowed(await limiter.acquire(key: "k", plan: plan, now: Self.at(70))) != nil)
        }

        @Test("refuses past the concurrency limit until a lease is released")
        func concurrencyLimit() async throws {
            let limiter = InMemoryRateLimiter()
            let plan = Plan(name: "p", requestsPerMinute: nil, concurrentRequests: 2, tokensPerDay: nil)
            let first = try #require(Self.allowed(await limiter.acquire(key: "k", plan: plan, now: Self.at(0))))
            let second = try #require(Self.allowed(await limiter.acquire(key: "k", plan: plan, now: Self.at(0))))
            #expect(first.lease.holdsSlot && second.lease != first.lease)
            #expect(first.status == nil)

            let refusal = try #require(Self.refused(await limiter.acquire(key: "k", plan: plan, now: Self.at(1))))
            #expect(refusal.reason == .concurrency)
            #expect(
                refusal.status
                    == RateStatus(
                        quota: .concurrentRequests, limit: 2, remaining: 0, resetSeconds: 1, retryAfterSeconds: 1))

            await limiter.release(first.lease)
            let third = try #require(Self.allowed(await limiter.acquire(key: "k", plan: plan, now: Self.at(2))))

            // Releasing the same lease again frees nothing.
            await limiter.release(first.lease)
            #expect(Self.refused(await limiter.acquire(key: "k", plan: plan, now: Self.at(3)))?.reason == .concurrency)

            await limiter.release(second.lease)
            await limiter.release(third.lease)
            #expect(Self.allowed(await limiter.acquire(key: "k", plan: plan, now: Self.at(4))) != nil)
            #expect(Self.allowed(await limiter.acquire(key: "k", plan: plan, now: Self.at(4))) != nil)
        }

        @Test("a concurrency refusal reports the per-minute status with Retry-After 1")
        func concurrencyRefusalReportsHeadline() async throws {
            let limiter = InMemoryRateLimiter()
            let plan = Plan(name: "p", requestsPerMinute: 10, concurrentRequests: 1, tokensPerDay: 1000)
            _ = await limiter.acquire(key: "k", plan: plan, now: Self.at(0.5))
            let refusal = try #require(Self.refused(await limiter.acquire(key: "k", plan: plan, now: Self.at(5.5))))
            #expect(refusal.reason == .concurrency)
            #expect(
                refusal.status
                    == RateStatus(
                        quota: .requestsPerMinute, limit: 10, remaining: 9, resetSeconds: 55, retryAfterSeconds: 1))
        }

        @Test("refuses once the daily tokens are used up, until the next UTC day")
        func dailyTokens() async throws {
            let limiter = InMemoryRateLimiter()
            let plan = Plan(name: "p", requestsPerMinute: nil, concurrentRequests: nil, tokensPerDay: 1000)
            let first = try #require(Self.allowed(await limiter.acquire(key: "k", plan: plan, now: Self.at(100))))
            #expect(
                first.status == RateStatus(quota: .tokensPerDay, limit: 1000, remaining: 1000, resetSeconds: 86_300))

            await limiter.record(tokens: 600, key: "k", plan: plan, now: Self.at(110))
            let second = try #require(Self.allowed(await limiter.acquire(key: "k", plan: plan, now: Self.at(200))))
            #expect(second.status?.remaining == 400)

            // The call that started under the quota overruns it.
            await limiter.record(tokens: 600, key: "k", plan: plan, now: Self.at(210))
            let refusal = try #require(Self.refused(await limiter.acquire(key: "k", plan: plan, now: Self.at(300))))
            #expect(refusal.reason == .dailyTokens)
            #expect(
                refusal.status
                    == RateStatus(
                        quota: .tokensPerDay, limit: 1000, remaining: 0, resetSeconds: 86_100, retryAfterSeconds: 86_100
                    ))

            let lastSecond = try #require(
                Self.refused(await limiter.acquire(key: "k", plan: plan, now: Self.at(86_399.5))))
            #expect(lastSecond.status.retryAfterSeconds == 1)

            let nextDay = try #require(Self.allowed(await limiter.acquire(key: "k", plan: plan, now: Self.at(86_400))))
            #expect(nextDay.status?.remaining == 1000)
        }

        @Test("a daily refusal speaks of the daily quota even when the plan limits the minute")
        func dailyRefusalWithPerMinute() async throws {
            let limiter = InMemoryRateLimiter()
            let plan = Plan(name: "p", requestsPerMinute: 100, concurrentRequests: nil, tokensPerDay: 10)
            let allowed = try #require(Self.allowed(await limiter.acquire(key: "k", plan: plan, now: Self.at(0))))
            #expect(allowed.status?.quota == .requestsPerMinute)
            await limiter.record(tokens: 10, key: "k", plan: plan, now: Self.at(1))
            let refusal = try #require(Self.refused(await limiter.acquire(key: "k", plan: plan, now: Self.at(2))))
            #expect(refusal.reason == .dailyTokens)
            #expect(refusal.status.quota == .tokensPerDay)
            #expect(refusal.status.limit == 10)
        }

        @Test("unlimited plans are always allowed and leave no state")
        func unlimitedPlans() async throws {
            let limiter = InMemoryRateLimiter()
            let plan = Plan(name: "internal", requestsPerMinute: nil, concurrentRequests: nil, tokensPerDay: nil)
            for index in 0..<1_000 {
                let allowed = try #require(
                    Self.allowed(await limiter.acquire(key: "k\(index % 7)", plan: plan, now: Self.at(0))))
                #expect(allowed.status == nil)
                #expect(!allowed.lease.holdsSlot)
                await limiter.record(tokens: 1_000_000, key: "k", plan: plan, now: Self.at(0))
                await limiter.release(allowed.lease)
            }
            #expect(limiter.keyCount == 0)
        }

        @Test("zero limits refuse without crashing")
        func zeroLimits() async throws {
            let limiter = InMemoryRateLimiter()
            let noRequests = Plan(name: "z", requestsPerMinute: 0, concurrentRequests: nil, tokensPerDay: nil)
            #expect(
                Self.refused(await limiter.acquire(key: "a", plan: noRequests, now: Self.at(0)))?.status
                    .retryAfterSeconds == 60)
            let noSlots = Plan(name: "z", requestsPerMinute: nil, concurrentRequests: -3, tokensPerDay: nil)
            #expect(
                Self.refused(await limiter.acquire(key: "b", plan: noSlots, now: Self.at(0)))?.reason == .concurrency)
            let noTokens = Plan(name: "z", requestsPerMinute: nil, concurrentRequests: nil, tokensPerDay: 0)
            #expect(
                Self.refused(await limiter.acquire(key: "c", plan: noTokens, now: Self.at(0)))?.reason == .dailyTokens)
        }

        @Test("a clock stepping back neither crashes nor forgets counts")
        func clockSteppingBack() async throws {
            let limiter = InMemoryRateLimiter()
            let plan = Plan(name: "p", requestsPerMinute: 2, concurrentRequests: nil, tokensPerDay: 100)
            _ = await limiter.acquire(key: "k", plan: plan, now: Self.at(86_400 + 50))
            await limiter.record(tokens: 100, key: "k", plan: plan, now: Self.at(86_400 + 51))
            // Back into the previous day: today's tokens still count.
            #expect(
                Self.refused(await limiter.acquire(key: "k", plan: plan, now: Self.at(86_390)))?.reason == .dailyTokens)
            let odd = Instant(secondsSinceEpoch: .nan)
            #expect(odd.secondsSinceEpoch == 0)
            _ = await limiter.acquire(key: "k", plan: plan, now: Instant(secondsSinceEpoch: .infinity))
            _ = await limiter.acquire(key: "k", plan: plan, now: Instant(secondsSinceEpoch: -.infinity))
        }

        @Test("idle keys are swept: 100,000 distinct keys leave no entries once idle")
        func sweepsIdleKeys() async throws {
            let limiter = InMemoryRateLimiter()
            let plan = PlanCatalog.builtInGuest
            for index in 0..<100_000 {
                let decision = await limiter.acquire(
                    key: "10.\(index >> 16).\((index >> 8) & 255).\(index & 255)", plan: plan, now: Self.at(0))
                let allowed = try #require(Self.allowed(decision))
                await limiter.release(allowed.lease)
            }
            #expect(limiter.keyCount == 100_000)
            await limiter.record(tokens: 10, key: "10.0.0.1", plan: plan, now: Self.at(1))

            // A minute later only the key with tokens counted today is still needed.
            limiter.sweep(now: Self.at(61))
            #expect(limiter.keyCount == 1)
            // The next UTC day, nothing is.
            limiter.sweep(now: Self.at(86_400))
            #expect(limiter.keyCount == 0)
        }

        @Test("the periodic sweep runs from acquire")
        func sweepsFromAcquire() async throws {
            let limiter = InMemoryRateLimiter(sweepInterval: 100)
            let plan = PlanCatalog.builtInGuest
            for index in 0..<5_000 {
                let lease = try #require(
                    Self.allowed(await limiter.acquire(key: "a\(index)", plan: plan, now: Self.at(0))))
                await limiter.release(lease.lease)
            }
            // Calls a minute later sweep the idle keys within max(100, keys) calls.
            for index in 0..<5_000 {
                _ = await limiter.acquire(key: "b\(index % 10)", plan: plan, now: Self.at(120))
            }
            #expect(limiter.keyCount <= 10)
        }

        @Test("a flood of distinct busy keys stays under maximumKeys")
        func boundsKeysUnderFlood() async throws {
            let limiter = InMemoryRateLimiter(maximumKeys: 1_000)
            let plan = PlanCatalog.builtInGuest
            var largest = 0
            for index in 0..<20_000 {
                let now = Self.at(Double(index) * 0.001)
                let allowed = try #require(Self.allowed(await limiter.acquire(key: "k\(index)", plan: plan, now: now)))
                await limiter.release(allowed.lease)
                largest = max(largest, limiter.keyCount)
            }
            #expect(largest <= 1_000)
            // The most recent keys keep their counts.
            let recent = Plan(name: "one", requestsPerMinute: 1, concurrentRequests: nil, tokensPerDay: nil)
            _ = await limiter.acquire(key: "k19999", plan: recent, now: Self.at(20))
            #expect(
                Self.refused(await limiter.acquire(key: "k19999", plan: recent, now: Self.at(20)))?.reason
                    == .requestsPerMinute)
        }

        @Test("keys holding a lease are never evicted")
        func leasesPinKeys() async throws {
            let limiter = InMemoryRateLimiter(maximumKeys: 10, sweepInterval: 1)
            let plan = Plan(name: "p", requestsPerMinute: nil, concurrentRequests: 1, tokensPerDay: nil)
            var held: [RateLease] = []
            for index in 0..<20 {
                held.append(
                    try #require(Self.allowed(await limiter.acquire(key: "held\(index)", plan: plan, now: Self.at(0))))
                        .lease)
            }
            for index in 0..<1_000 {
                let allowed = try #require(
                    Self.allowed(await limiter.acquire(key: "churn\(index)", plan: plan, now: Self.at(100))))
                await limiter.release(allowed.lease)
            }
            for index in 0..<20 {
                #expect(
                    Self.refused(await limiter.acquire(key: "held\(index)", plan: plan, now: Self.at(200)))?.reason
                        == .concurrency)
            }
            for lease in held { await limiter.release(lease) }
            limiter.sweep(now: Self.at(300))
            #expect(limiter.keyCount == 0)
        }

        @Test("a lease never given back expires after its time to live and frees its slot")
        func leaseExpires() async throws {
            let limiter = InMemoryRateLimiter(leaseTimeToLive: .seconds(10))
            let plan = Plan(name: "p", requestsPerMinute: nil, concurrentRequests: 1, tokensPerDay: nil)
            #expect(Self.allowed(await limiter.acquire(key: "k", plan: plan, now: Self.at(0))) != nil)
            #expect(Self.refused(await limiter.acquire(key: "k", plan: plan, now: Self.at(5)))?.reason == .concurrency)
            #expect(Self.allowed(await limiter.acquire(key: "k", plan: plan, now: Self.at(11))) != nil)
        }

        @Test("finish gives the lease back once and answers the status counting the tokens it charged")
        func finishSettles() async throws {
            let limiter = InMemoryRateLimiter()
            let plan = Plan(name: "p", requestsPerMinute: nil, concurrentRequests: 1, tokensPerDay: 500)
            let first = try #require(Self.allowed(await limiter.acquire(key: "k", plan: plan, now: Self.at(0))))
            #expect(first.status?.remaining == 500)
            let after = await limiter.finish(lease: first.lease, plan: plan, tokens: 248, now: Self.at(1))
            #expect(after?.quota == .tokensPerDay && after?.remaining == 252)
            // A second finish of the same lease frees nothing more: the next one still holds the slot.
            let second = try #require(Self.allowed(await limiter.acquire(key: "k", plan: plan, now: Self.at(2))))
            _ = await limiter.finish(lease: first.lease, plan: plan, tokens: 0, now: Self.at(2))
            #expect(Self.refused(await limiter.acquire(key: "k", plan: plan, now: Self.at(3)))?.reason == .concurrency)
            #expect(await limiter.finish(lease: second.lease, plan: plan, tokens: 248, now: Self.at(4))?.remaining == 4)
        }

        @Test("the limiter is usable through the protocol from many tasks at once")
        func concurrentUse() async throws {
            let limiter: any RateLimiter = InMemoryRateLimiter()
            let plan = Plan(name: "p", requestsPerMinute: 500, concurrentRequests: nil, tokensPerDay: nil)
            let allowedCount = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<1_000 {
                    group.addTask {
                        if case .allowed(let lease, _) = try? await limiter.acquire(
                            key: "shared", plan: plan, now: Self.at(0))
                        {
                            _ = try? await limiter.finish(lease: lease, plan: plan, tokens: 0, now: Self.at(0))
                            return true
                        }
                        return false
                    }
                }
                var count = 0
                for await allowed in group where allowed { count += 1 }
                return count
            }
            #expect(allowedCount == 500)
        }
    }

    // MARK: - Addresses

    @Suite("Client addresses")
    struct ClientAddressTests {
        static let cidrCases: [(range: String, address: String, contained: Bool)] = [
            ("10.0.0.0/8", "10.255.1.2", true),
            ("10.0.0.0/8", "11.0.0.1", false),
            ("10.0.0.0/8", "9.255.255.255", false),
            ("192.168.1.0/24", "192.168.1.77", true),
            ("192.168.1.0/24", "192.168.2.1", false),
            ("172.16.0.0/12", "172.31.255.255", true),
            ("172.16.0.0/12", "172.32.0.0", false),
            ("127.0.0.1/32", "127.0.0.1", true),
            ("127.0.0.1", "127.0.0.1", true),
            ("127.0.0.1", "127.0.0.2", false),
            ("10.1.2.3/8", "10.9.9.9", true),
            ("0.0.0.0/0", "8.8.8.8", true),
            ("0.0.0.0/0", "2001:db8::1", false),
            ("::1/128", "::1", true),
            ("::1", "::1", true),
            ("::1", "::2", false),
            ("2001:db8::/32", "2001:db8:ffff::1", true),
            ("2001:db8::/32", "2001:db9::1", false),
            ("2001:db8::/33", "2001:db8:7fff::1", true),
            ("2001:db8::/33", "2001:db8:8000::1", false),
            ("2001:db8:0:0:1::/80", "2001:db8::1:0:0:1", true),
            ("2001:db8:0:0:1::/80", "2001:db8::2:0:0:1", false),
            ("fe80::/10", "FE80::1", true),
            ("::/0", "2001:db8::1", true),
            ("10.0.0.0/8", "::ffff:10.1.2.3", true),
            ("10.0.0.0/8", "::ffff:11.1.2.3", false),
            ("::ffff:10.0.0.0/104", "10.20.30.40", true),
            ("10.0.0.0/8", "::10.1.2.3", false),
        ]

        @Test("matches IPv4, IPv6 and IPv4-mapped addresses", arguments: cidrCases)
        func matchesRanges(testCase: (range: String, address: String, contained: Bool)) throws {
            let range = try #require(CIDR(testCase.range))
            let address = try #require(IPAddress(testCase.address))
            #expect(range.contains(address) == testCase.contained, "\(testCase.range) ∋ \(testCase.address)")
        }

        static let invalidRanges = [
            "", "abc", "10.0.0.0/33", "::1/129", "10.0.0/8", "10.0.0.0/", "/8", "10.0.0.0/8/8",
            "10.0.0.0/-1", "10.0.0.0/+8", "10.0.0.0/0008", " 10.0.0.0/8", "1.2.3.4\0", "fe80::1%eth0",
            "256.0.0.1", "1.2.3.4.5", "::1::2", "[::1]", "10.0.0.0/8 ",
        ]

        @Test("rejects malformed ranges", arguments: invalidRanges)
        func rejectsMalformedRanges(text: String) {
            #expect(CIDR(text) == nil)
        }

        @Test("writes addresses and ranges canonically")
        func canonicalText() throws {
            #expect(try #require(IPAddress("::FFFF:1.2.3.4")).description == "1.2.3.4")
            #expect(try #require(IPAddress("2001:DB8:0:0:0:0:0:1")).description == "2001:db8::1")
            #expect(try #require(IPAddress("::1")).description == "::1")
            #expect(IPAddress("1.2.3.4") == IPAddress("::ffff:1.2.3.4"))
            #expect(try #require(CIDR("10.1.2.3/8")).description == "10.0.0.0/8")
            #expect(try #require(CIDR("2001:db8::1/32")).description == "2001:db8::/32")
        }

        @Test("parses TRUSTED_PROXIES and names a bad entry's position")
        func parsesTrustedProxies() throws {
            let proxies = try TrustedProxies.parse(" 10.0.0.0/8, 127.0.0.1 ,::1,")
            #expect(proxies.ranges.map(\.description) == ["10.0.0.0/8", "127.0.0.1/32", "::1/128"])
            #expect(try TrustedProxies.parse("").ranges.isEmpty)
            #expect(throws: TrustedProxiesError(position: 3)) { try TrustedProxies.parse("10.0.0.0/8,,localhost") }
        }

        static let proxies = TrustedProxies(ranges: [CIDR("10.0.0.0/8")!, CIDR("127.0.0.1")!, CIDR("::1")!])

        static let clientCases: [(name: String, peer: String, forwardedFor: String?, client: String)] = [
            ("untrusted peer ignores the header", "203.0.113.5", "1.1.1.1", "203.0.113.5"),
            ("trusted peer without a header", "10.0.0.2", nil, "10.0.0.2"),
            ("trusted peer with an empty header", "10.0.0.2", "", "10.0.0.2"),
            ("trusted peer", "10.0.0.2", "198.51.100.7", "198.51.100.7"),
            ("spoofed left entries are ignored", "10.0.0.2", "6.6.6.6, 7.7.7.7,198.51.100.7", "198.51.100.7"),
            ("trusted hops are skipped", "127.0.0.1", "6.6.6.6, 198.51.100.7, 10.0.0.5, 10.0.0.6", "198.51.100.7"),
            ("all trusted gives the leftmost", "10.0.0.2", "10.0.0.9, 10.0.0.5", "10.0.0.9"),
            ("malformed entries are skipped", "10.0.0.2", "198.51.100.7, not-an-ip, , 10.0.0.5", "198.51.100.7"),
            ("a malformed right entry is skipped", "10.0.0.2", "198.51.100.7, unknown", "198.51.100.7"),
            ("only malformed entries give the peer", "10.0.0.2", "garbage,,;", "10.0.0.2"),
            ("IPv4 with a port", "10.0.0.2", "198.51.100.7:5555", "198.51.100.7"),
            ("IPv6 in brackets with a port", "10.0.0.2", "[2001:db8::7]:443", "2001:db8::7"),
            ("IPv6 bare", "::1", "2001:DB8::5", "2001:db8::5"),
            ("mapped trusted peer", "::ffff:10.0.0.2", "198.51.100.7", "198.51.100.7"),
            ("mapped untrusted peer comes back as IPv4", "::ffff:203.0.113.5", nil, "203.0.113.5"),
            ("mapped forwarded entry that is trusted", "10.0.0.2", "198.51.100.7, ::ffff:10.3.3.3", "198.51.100.7"),
            ("peer that is no IP address", "unix", "198.51.100.7", "unix"),
            ("bad port", "10.0.0.2", "6.6.6.6, 198.51.100.7:99999999", "6.6.6.6"),
            (
                "a comma inside a grapheme cluster still splits", "10.0.0.2", "1.2.3.4\u{0600}, 198.51.100.7",
                "198.51.100.7"
            ),
            ("tabs around entries", "10.0.0.2", "\t198.51.100.7\t", "198.51.100.7"),
            (
                "only the rightmost 32 entries are read", "10.0.0.2",
                (["6.6.6.6"] + Array(repeating: "10.0.0.1", count: 40)).joined(separator: ", "), "10.0.0.1"
            ),
            ("a huge header does not crash", "10.0.0.2", String(repeating: ",", count: 100_000), "10.0.0.2"),
        ]

        @Test("finds the client behind trusted proxies", arguments: clientCases)
        func findsClient(testCase: (name: String, peer: String, forwardedFor: String?, client: String)) {
            let client = Self.proxies.clientAddress(peer: testCase.peer, forwardedFor: testCase.forwardedFor)
            #expect(client == testCase.client, "\(testCase.name)")
        }

        @Test("with no trusted proxies the peer is always the client")
        func noTrustedProxies() {
            #expect(TrustedProxies.none.clientAddress(peer: "10.0.0.2", forwardedFor: "6.6.6.6") == "10.0.0.2")
            #expect(TrustedProxies.none.clientAddress(peer: "127.0.0.1", forwardedFor: "6.6.6.6") == "127.0.0.1")
        }

        static let keyCases: [(address: String, prefix: Int, key: String)] = [
            ("2001:db8:1:2:aaaa:bbbb:cccc:dddd", 64, "2001:db8:1:2::/64"),
            ("2001:db8:1:2::1", 64, "2001:db8:1:2::/64"),
            ("2001:DB8:1:2:ffff:ffff:ffff:ffff", 64, "2001:db8:1:2::/64"),
            ("2001:db8:1:3::1", 64, "2001:db8:1:3::/64"),
            ("2001:db8:1:2:aaaa::1", 56, "2001:db8:1::/56"),
            ("2001:db8:1:ff:aaaa::1", 56, "2001:db8:1::/56"),
            ("2001:db8:1:2:aaaa::1", 48, "2001:db8:1::/48"),
            ("2001:db8:ffff:2::1", 32, "2001:db8::/32"),
            ("2001:db8:1:2:aaaa:bbbb:cccc:dddd", 96, "2001:db8:1:2:aaaa:bbbb::/96"),
            ("2001:db8:1:2:aaaa:bbbb:cccc:dddd", 127, "2001:db8:1:2:aaaa:bbbb:cccc:dddc/127"),
            ("2001:db8:1:2:aaaa:bbbb:cccc:dddd", 128, "2001:db8:1:2:aaaa:bbbb:cccc:dddd"),
            ("::1", 64, "::/64"),
            // IPv4, written plain or mapped, is kept whole whatever the IPv6 prefix.
            ("203.0.113.7", 64, "203.0.113.7"),
            ("203.0.113.7", 32, "203.0.113.7"),
            ("::ffff:203.0.113.7", 64, "203.0.113.7"),
        ]

        @Test("keys an IPv6 client by its prefix and an IPv4 one by its whole address", arguments: keyCases)
        func keysByPrefix(testCase: (address: String, prefix: Int, key: String)) throws {
            let address = try #require(IPAddress(testCase.address))
            let keys = ClientAddressKey(ipv6PrefixLength: testCase.prefix)
            #expect(keys.key(address) == testCase.key, "\(testCase.address) /\(testCase.prefix)")
        }

        @Test("two addresses of one /64 are one client by default, and a neighbouring /64 another")
        func defaultPrefix() {
            let keys = ClientAddressKey()
            #expect(keys.ipv6PrefixLength == 64)
            let first = keys.key(peer: "2001:db8:1:2::a", forwardedFor: nil)
            #expect(first == keys.key(peer: "2001:db8:1:2:8a2e:370:7334:1", forwardedFor: nil))
            #expect(first != keys.key(peer: "2001:db8:1:3::a", forwardedFor: nil))
            #expect(
                keys.key(peer: "198.51.100.1", forwardedFor: nil) != keys.key(peer: "198.51.100.2", forwardedFor: nil))
        }

        @Test("keys the client a trusted proxy names, and a peer that is no IP address as itself")
        func keysBehindProxies() {
            let keys = ClientAddressKey(trustedProxies: Self.proxies)
            #expect(keys.key(peer: "10.0.0.2", forwardedFor: "6.6.6.6, [2001:db8:5:6::77]:443") == "2001:db8:5:6::/64")
            #expect(keys.key(peer: "203.0.113.5", forwardedFor: "2001:db8:5:6::77") == "203.0.113.5")
            #expect(keys.key(peer: "2001:db8:9:9::1", forwardedFor: "198.51.100.7") == "2001:db8:9:9::/64")
            #expect(keys.key(peer: "unix", forwardedFor: nil) == "unix")
        }

        @Test("holds the prefix length within 32...128")
        func prefixBounds() throws {
            #expect(ClientAddressKey(ipv6PrefixLength: 8).ipv6PrefixLength == 32)
            #expect(ClientAddressKey(ipv6PrefixLength: 200).ipv6PrefixLength == 128)
            let address = try #require(IPAddress("2001:db8:1:2::1"))
            #expect(address.keepingFirst(0) == IPAddress("::"))
            #expect(address.keepingFirst(128) == address)
            #expect(address.keepingFirst(16) == IPAddress("2001::"))
        }
    }
}
