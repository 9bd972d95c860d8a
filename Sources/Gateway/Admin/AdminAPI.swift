import Access
import HTTP1
import HTTPServer
import JSON
import Pricing
import Store
import Telemetry
import Upstream

/// The JSON API behind the operator's console (`/api/admin/…`, docs/api.md "Operator's
/// console"). It reads the store's daily roll-ups and never the request log, except for the
/// few newest failures, which an index of failures alone serves. It shows no caller's text,
/// result or token, and no provider key: none of them is in anything it reads.
struct AdminAPI: Sendable {
    enum Endpoint: Sendable {
        case summary, series, callers, models, budgets, upstreams, failures, jobs, tokens, token, plans
    }

    let store: (any StoreBackend)?
    let faults: StoreFaults?
    let pool: UpstreamPool?
    let plans: PlanCatalog
    let language: ErrorLanguage?
    let clock: @Sendable () -> Instant
    /// The budgets' policy (the shared budgets, the plans', their keeper); nil when none is set.
    var budgets: BudgetMiddleware? = nil
    /// The currency costs are in; nil without `PRICES`.
    var currency: Currency? = nil

    static let defaultFailures = 20
    static let maximumFailures = 200
    static let maximumJobs = 100

    func respond(to endpoint: Endpoint, _ request: HTTPRequest) async throws(GatewayError) -> HTTPResponse {
        let query = try QueryParameters(request.query)
        switch endpoint {
        case .summary: return try await summary(query)
        case .series: return try await series(query)
        case .callers: return try await callers(query)
        case .models: return try await models(query)
        case .budgets: return try await budgetList()
        case .upstreams: return upstreams()
        case .failures: return try await failures(query)
        case .jobs: return try await jobs()
        case .tokens:
            return request.method == .POST ? try await createToken(request.body) : try await tokens()
        case .token: return try await revokeToken(String(RoutingTable<Int>.parameter(in: request.path)))
        case .plans: return planList()
        }
    }

    private var nowMilliseconds: Int64 { Int64((clock().secondsSinceEpoch * 1000).rounded(.down)) }

    /// The store, or `503 store_unavailable` for a gateway that keeps none.
    private func requireStore() throws(GatewayError) -> any StoreBackend {
        guard let store else { throw GatewayError.storeUnavailable }
        return store
    }

    private func read<T: Sendable>(_ body: (any StoreBackend) async throws(StoreError) -> T)
        async throws(GatewayError) -> T
    {
        let store = try requireStore()
        do {
            return try await body(store)
        } catch {
            faults?.record(error, operation: .read)
            throw GatewayError.storeUnavailable
        }
    }

    // MARK: Totals and series

    private func summary(_ query: QueryParameters) async throws(GatewayError) -> HTTPResponse {
        let range = try AdminRange(query, nowMilliseconds: nowMilliseconds)
        let totals = try await read { store throws(StoreError) in
            try await store.rollupTotals(fromSlot: range.fromSlot, toSlot: range.toSlot)
        }
        var body = JSONWriter(capacity: 512)
        body.object {
            $0.field("from", Timestamp.iso8601(milliseconds: range.fromSlot * AdminRange.slotMilliseconds))
            $0.field("to", Timestamp.iso8601(milliseconds: range.toSlot * AdminRange.slotMilliseconds))
            $0.field("requests", totals.requests)
            $0.field("inputTokens", totals.inputTokens)
            $0.field("outputTokens", totals.outputTokens)
            $0.field("cacheHits", totals.cacheHits)
            $0.field("errors", totals.errors)
            $0.field("errorRate", totals.requests == 0 ? 0 : Double(totals.errors) / Double(totals.requests))
            $0.field("costMicros", Int(totals.costMicros))
            $0.field("currency", currency?.code)
            $0.field("addedLatencyMs", object: { Self.write(totals.added, into: &$0) })
            $0.field("upstreamLatencyMs", object: { Self.write(totals.upstream, into: &$0) })
        }
        return Self.json(body)
    }

    private static func write(_ histogram: LatencyHistogram, into object: inout JSONWriter) {
        for (name, p) in [("p50", 0.5), ("p95", 0.95)] {
            if let value = histogram.percentile(p) { object.field(name, value) } else { object.nullField(name) }
        }
    }

    private func series(_ query: QueryParameters) async throws(GatewayError) -> HTTPResponse {
        let range = try AdminRange(query, nowMilliseconds: nowMilliseconds)
        let offset = try Self.offsetMinutes(query)
        let csv = try Self.wantsCSV(query)
        // Two scans of the slots at once, on two of the store's readers.
        let store = try requireStore()
        async let taskRows = store.rollupDayTasks(fromSlot: range.fromSlot, toSlot: range.toSlot, offsetMinutes: offset)
        async let codeRows = store.rollupDayCodes(fromSlot: range.fromSlot, toSlot: range.toSlot, offsetMinutes: offset)
        let tasks: [RollupDayTask]
        let codes: [RollupDayCode]
        do {
            (tasks, codes) = try await (taskRows, codeRows)
        } catch {
            if let error = error as? StoreError { faults?.record(error, operation: .read) }
            throw GatewayError.storeUnavailable
        }
        let tasksByDay = Dictionary(grouping: tasks, by: \.day)
        let codesByDay = Dictionary(grouping: codes, by: \.day)
        let days = range.localDays(offsetMinutes: offset)
        if csv {
            var writer = CSVWriter(header: [
                "day", "task", "requests", "input_tokens", "output_tokens", "errors", "cost_micros",
            ])
            for day in days {
                for row in (tasksByDay[day] ?? []).sorted(by: { $0.task < $1.task }) {
                    writer.row([
                        Timestamp.date(day: day), row.task, String(row.requests), String(row.inputTokens),
                        String(row.outputTokens), String(row.errors), String(row.costMicros),
                    ])
                }
            }
            return Self.csv(writer, name: "textgateway-series.csv")
        }
        var body = JSONWriter(capacity: 256 + days.count * 256)
        body.object {
            $0.field("tzOffset", offset)
            $0.field("days", array: Array(days)) { object, day in
                let rows = (tasksByDay[day] ?? []).sorted { $0.task < $1.task }
                object.field("day", Timestamp.date(day: day))
                object.field("requests", rows.reduce(0) { $0 + $1.requests })
                object.field("inputTokens", rows.reduce(0) { $0 + $1.inputTokens })
                object.field("outputTokens", rows.reduce(0) { $0 + $1.outputTokens })
                object.field("errors", rows.reduce(0) { $0 + $1.errors })
                object.field("costMicros", Int(rows.reduce(0) { $0 + $1.costMicros }))
                object.field("tasks", array: rows) { task, row in
                    task.field("task", row.task)
                    task.field("requests", row.requests)
                    task.field("inputTokens", row.inputTokens)
                    task.field("outputTokens", row.outputTokens)
                    task.field("costMicros", Int(row.costMicros))
                }
                let codes = (codesByDay[day] ?? []).sorted { ($1.count, $0.code) < ($0.count, $1.code) }
                object.field("errorCodes", array: codes) { code, row in
                    code.field("code", row.code)
                    code.field("count", row.count)
                }
            }
        }
        return Self.json(body)
    }

    /// `tzOffset`: the browser's offset from UTC in minutes east (`-getTimezoneOffset()`), 0 when absent.
    private static func offsetMinutes(_ query: QueryParameters) throws(GatewayError) -> Int {
        guard var text = query["tzOffset"] else { return 0 }
        let negative = text.first == "-"
        if negative { text = text.dropFirst() }
        guard !text.isEmpty, text.utf8.count <= 3, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let value = Int(text), value <= 840
        else { throw GatewayError.invalidParameter }
        return negative ? -value : value
    }

    private static func wantsCSV(_ query: QueryParameters) throws(GatewayError) -> Bool {
        switch query["format"] {
        case nil, "json": false
        case "csv": true
        default: throw GatewayError.invalidParameter
        }
    }

    // MARK: Callers

    private func callers(_ query: QueryParameters) async throws(GatewayError) -> HTTPResponse {
        let range = try AdminRange(query, nowMilliseconds: nowMilliseconds)
        let csv = try Self.wantsCSV(query)
        let today = clock().utcDay
        let (rows, charged, labels) = try await read { store throws(StoreError) in
            (
                try await store.rollupCallers(fromDay: range.fromDay, toDay: range.toDay),
                try await store.tokensCharged(onDay: today),
                // A caller's name on the page: its newest token's label.
                Dictionary(
                    try await store.tokens().compactMap { token in token.label.map { (token.userID, $0) } },
                    uniquingKeysWith: { _, newer in newer })
            )
        }
        let callers = rows.map { row in
            AdminCaller(row: row, label: labels[row.userID], tokensToday: charged[row.userID], plans: plans)
        }
        .sorted { ($1.row.requests, $0.row.userID) < ($0.row.requests, $1.row.userID) }
        if csv {
            var writer = CSVWriter(header: [
                "user_id", "kind", "label", "plan", "requests", "input_tokens", "output_tokens", "errors",
                "tokens_today", "daily_token_quota", "quota_used_today", "last_seen", "cost_micros",
            ])
            for caller in callers {
                writer.row([
                    caller.row.userID, caller.kind, caller.label ?? "", caller.row.plan ?? "",
                    String(caller.row.requests), String(caller.row.inputTokens), String(caller.row.outputTokens),
                    String(caller.row.errors), caller.tokensToday.map(String.init) ?? "",
                    caller.quota.map(String.init) ?? "", caller.quotaUsed.map { String($0) } ?? "",
                    caller.row.lastSeenMilliseconds.map(Timestamp.iso8601(milliseconds:)) ?? "",
                    String(caller.row.costMicros),
                ])
            }
            return Self.csv(writer, name: "textgateway-callers.csv")
        }
        var body = JSONWriter(capacity: 128 + callers.count * 320)
        body.object {
            $0.field("from", Timestamp.date(day: range.fromDay))
            $0.field("to", Timestamp.date(day: range.toDay))
            $0.field("callers", array: callers) { object, caller in
                object.field("userId", caller.row.userID)
                object.field("kind", caller.kind)
                object.field("label", caller.label)
                object.field("plan", caller.row.plan)
                object.field("requests", caller.row.requests)
                object.field("inputTokens", caller.row.inputTokens)
                object.field("outputTokens", caller.row.outputTokens)
                object.field("errors", caller.row.errors)
                object.field("costMicros", Int(caller.row.costMicros))
                object.field("tokensToday", caller.tokensToday)
                object.field("dailyTokenQuota", caller.quota)
                if let used = caller.quotaUsed {
                    object.field("quotaUsedToday", used)
                } else {
                    object.nullField("quotaUsedToday")
                }
                object.field("lastSeen", caller.row.lastSeenMilliseconds.map(Timestamp.iso8601(milliseconds:)))
            }
        }
        return Self.json(body)
    }

    // MARK: Models and budgets

    private func models(_ query: QueryParameters) async throws(GatewayError) -> HTTPResponse {
        let range = try AdminRange(query, nowMilliseconds: nowMilliseconds)
        let csv = try Self.wantsCSV(query)
        let models = try await read { store throws(StoreError) in
            try await store.rollupModels(fromSlot: range.fromSlot, toSlot: range.toSlot)
        }
        if csv {
            var writer = CSVWriter(header: [
                "model", "requests", "input_tokens", "output_tokens", "errors", "cost_micros",
            ])
            for row in models {
                writer.row([
                    row.model, String(row.requests), String(row.inputTokens), String(row.outputTokens),
                    String(row.errors), String(row.costMicros),
                ])
            }
            return Self.csv(writer, name: "textgateway-models.csv")
        }
        var body = JSONWriter(capacity: 128 + models.count * 160)
        body.object {
            $0.field("from", Timestamp.iso8601(milliseconds: range.fromSlot * AdminRange.slotMilliseconds))
            $0.field("to", Timestamp.iso8601(milliseconds: range.toSlot * AdminRange.slotMilliseconds))
            $0.field("currency", currency?.code)
            $0.field("models", array: models) { object, row in
                // "" (no model reached): null.
                object.field("model", row.model.isEmpty ? nil : row.model)
                object.field("requests", row.requests)
                object.field("inputTokens", row.inputTokens)
                object.field("outputTokens", row.outputTokens)
                object.field("errors", row.errors)
                object.field("costMicros", Int(row.costMicros))
            }
        }
        return Self.json(body)
    }

    /// The shared budgets' state now (from the keeper: on Redis, every instance's), and each
    /// plan's own budgets as configured.
    private func budgetList() async throws(GatewayError) -> HTTPResponse {
        let now = clock()
        var uses: [BudgetUse] = []
        if let budgets, !budgets.sharedAccounts.isEmpty {
            do {
                uses = try await budgets.keeper.use(of: budgets.sharedAccounts, now: now)
            } catch {
                throw GatewayError.upstreamBusy
            }
        }
        let all = plans.all.filter { !$0.budgets.isEmpty }
        var body = JSONWriter(capacity: 256 + uses.count * 200 + all.count * 128)
        body.object {
            $0.field("currency", currency?.code)
            $0.field("budgets", array: uses) { UsageRoute.write($1, now: now, into: &$0) }
            $0.field("plans", array: all) { object, plan in
                object.field("plan", plan.name)
                object.field("budgets", array: plan.budgets) { Self.write($1, into: &$0) }
            }
        }
        return Self.json(body)
    }

    private static func write(_ limit: BudgetLimit, into object: inout JSONWriter) {
        object.field("period", limit.period.rawValue)
        object.field("unit", limit.unit.rawValue)
        object.field("limit", Int(limit.amount))
    }

    // MARK: Upstreams, failures, jobs

    private func upstreams() -> HTTPResponse {
        let snapshot = pool?.snapshot() ?? []
        var body = JSONWriter(capacity: 64 + snapshot.count * 128)
        body.object {
            $0.field("upstreams", array: snapshot) { object, upstream in
                object.field("name", upstream.name)
                object.field("model", upstream.model)
                object.field("state", upstream.state.rawValue)
                object.field("answers", upstream.answers)
                object.field("failures", upstream.failures)
            }
        }
        return Self.json(body)
    }

    private func failures(_ query: QueryParameters) async throws(GatewayError) -> HTTPResponse {
        let limit = try query.integer("limit", in: 1...Self.maximumFailures, default: Self.defaultFailures)
        let failures = try await read { store throws(StoreError) in try await store.recentFailures(limit: limit) }
        var body = JSONWriter(capacity: 64 + failures.count * 256)
        body.object {
            $0.field("failures", array: failures) { object, failure in
                object.field("requestId", failure.requestID)
                object.field("at", Timestamp.iso8601(milliseconds: failure.createdAtMilliseconds))
                object.field("status", failure.status)
                object.field("code", failure.code)
                object.field("route", failure.route)
                object.field("upstream", failure.upstream)
                object.field("task", failure.task)
                object.field("userId", failure.userID)
            }
        }
        return Self.json(body)
    }

    private func jobs() async throws(GatewayError) -> HTTPResponse {
        let (jobs, statistics) = try await read { store throws(StoreError) in
            (try await store.activeJobs(limit: Self.maximumJobs), try await store.jobStatistics())
        }
        var body = JSONWriter(capacity: 256 + jobs.count * 200)
        body.object {
            $0.field("jobs", array: jobs) { object, job in
                object.field("id", job.id)
                object.field("status", job.status.rawValue)
                object.field("task", job.task)
                object.field("done", job.done)
                object.field("total", job.total)
                object.field("userId", job.ownerID)
                object.field("createdAt", Timestamp.iso8601(milliseconds: job.createdAtMilliseconds))
            }
            $0.field(
                "statistics",
                object: { object in
                    for status in JobStatus.allCases { object.field(status.rawValue, statistics.jobs[status] ?? 0) }
                    object.field("pendingItems", statistics.pendingItems)
                })
        }
        return Self.json(body)
    }

    // MARK: Tokens and plans

    private func tokens() async throws(GatewayError) -> HTTPResponse {
        let tokens = try await read { store throws(StoreError) in try await store.tokens() }
        var body = JSONWriter(capacity: 64 + tokens.count * 256)
        body.object { $0.field("tokens", array: tokens.reversed()) { Self.write($1, into: &$0) } }
        return Self.json(body)
    }

    private static func write(_ token: StoredToken, into object: inout JSONWriter) {
        object.field("id", token.id)
        object.field("userId", token.userID)
        object.field("plan", token.plan)
        object.field("label", token.label)
        object.field("createdAt", Timestamp.iso8601(milliseconds: token.createdAtMilliseconds))
        object.field("lastUsedAt", token.lastUsedAtMilliseconds.map(Timestamp.iso8601(milliseconds:)))
        object.field("revokedAt", token.revokedAtMilliseconds.map(Timestamp.iso8601(milliseconds:)))
    }

    /// `POST /api/admin/tokens`: the command line's `tokens create`, with its checks; the
    /// secret is in this one answer and kept nowhere.
    private func createToken(_ bytes: [UInt8]) async throws(GatewayError) -> HTTPResponse {
        let store = try requireStore()
        guard let object = try? JSONValue.parse(bytes), case .object(let members) = object else {
            throw GatewayError.invalidJSON
        }
        guard members.keys.allSatisfy({ ["userId", "plan", "label"].contains($0) }),
            let user = members["userId"]?.stringValue
        else { throw GatewayError.adminInvalidToken(field: "userId") }
        let plan: String
        switch members["plan"] {
        case nil, .null?: plan = PlanCatalog.defaultName
        case .string(let name)?: plan = name
        default: throw GatewayError.adminInvalidToken(field: "plan")
        }
        let label: String?
        switch members["label"] {
        case nil, .null?: label = nil
        case .string(let text)?: label = text.isEmpty ? nil : text
        default: throw GatewayError.adminInvalidToken(field: "label")
        }
        if let problem = TokenIssuer.problem(user: user, plan: plan, label: label, plans: plans) {
            throw GatewayError.adminInvalidToken(field: problem.field == "user" ? "userId" : problem.field)
        }
        let created: (String, StoredToken)
        do {
            created = try await TokenIssuer.issue(user: user, plan: plan, label: label, in: store, now: clock())
        } catch {
            faults?.record(error, operation: .tokens)
            throw GatewayError.storeUnavailable
        }
        var body = JSONWriter(capacity: 384)
        body.object {
            $0.field("token", created.0)
            Self.write(created.1, into: &$0)
        }
        return Self.json(body, status: .created)
    }

    private func revokeToken(_ id: String) async throws(GatewayError) -> HTTPResponse {
        let store = try requireStore()
        // Ids are 12 hex digits; anything else names no token.
        guard id.utf8.count == 12, id.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) })
        else { throw GatewayError.itemNotFound }
        let revoked: Bool
        do {
            revoked = try await store.revokeToken(id: id, atMilliseconds: nowMilliseconds)
        } catch {
            faults?.record(error, operation: .tokens)
            throw GatewayError.storeUnavailable
        }
        guard revoked else { throw GatewayError.itemNotFound }
        return HTTPResponse(status: .noContent, headers: ["Cache-Control": "no-store"])
    }

    private func planList() -> HTTPResponse {
        let all = plans.all
        var body = JSONWriter(capacity: 128 + all.count * 96)
        body.object {
            $0.field("plans", array: all) { object, plan in
                object.field("name", plan.name)
                object.field("tokensPerDay", plan.tokensPerDay)
                object.field("requestsPerMinute", plan.requestsPerMinute)
                object.field("concurrentRequests", plan.concurrentRequests)
                object.field("budgets", strings: plan.budgets.map(\.description))
            }
            $0.field("defaultPlan", PlanCatalog.defaultName)
            $0.field("currency", currency?.code)
            $0.field("currencyMinorUnits", currency?.minorUnits)
            $0.field("language", language == .english ? "en" : "fa")
            $0.field(
                "store",
                store == nil ? nil : (store is SQLiteStore ? "sqlite" : "postgres"))
        }
        return Self.json(body)
    }

    // MARK: Answers

    private static func json(_ body: JSONWriter, status: HTTPStatus = .ok) -> HTTPResponse {
        HTTPResponse(
            status: status,
            headers: ["Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store"],
            body: .bytes(body.bytes))
    }

    private static func csv(_ writer: CSVWriter, name: String) -> HTTPResponse {
        HTTPResponse(
            headers: [
                "Content-Type": "text/csv; charset=utf-8", "Cache-Control": "no-store",
                "Content-Disposition": "attachment; filename=\"\(name)\"",
            ],
            body: .bytes(Array(writer.text.utf8)))
    }
}

/// One row of the callers table: the roll-up's sums with what the page adds to them.
struct AdminCaller {
    let row: RollupCaller
    let label: String?
    let tokensToday: Int?
    let quota: Int?

    init(row: RollupCaller, label: String?, tokensToday: Int?, plans: PlanCatalog) {
        self.row = row
        self.label = label
        // Guests share no quota of their own: each address has the guest plan's.
        self.tokensToday = row.userID.isEmpty ? nil : tokensToday ?? 0
        quota = row.userID.isEmpty ? nil : row.plan.map { plans.plan(named: $0) }?.tokensPerDay
    }

    var kind: String {
        let id = row.userID
        if id.isEmpty { return "guest" }
        if id.hasPrefix("jwt:") { return "jwt" }
        if id.hasPrefix("device:") { return "device" }
        return "token"
    }

    /// The share of today's token quota used, 0…1 and beyond when over; nil without a quota.
    var quotaUsed: Double? {
        guard let quota, let tokensToday else { return nil }
        return quota == 0 ? (tokensToday > 0 ? 1 : 0) : Double(tokensToday) / Double(quota)
    }
}

/// One `/api/admin/…` route: the API's answer for its endpoint.
struct AdminRoute: ResponseHandler {
    let api: AdminAPI
    let endpoint: AdminAPI.Endpoint

    func handle(_ request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        try await api.respond(to: endpoint, request)
    }
}
