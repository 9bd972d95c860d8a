/// What the operator's console reads (docs/api.md, "The operator's console"): the roll-ups
/// the ledger keeps beside its rows (`usage_rollup_slots` by 15-minute slot, its histograms in
/// `usage_rollup_latency`, `usage_daily` by UTC day and caller), the latest failures and the
/// jobs in flight. Every answer costs a
/// range scan of a roll-up or an index, whatever the number of requests behind it.
package protocol AdminStore: Sendable {
    /// Totals over the slots [fromSlot, toSlot) (a slot is 15 minutes: `created_at / 900000`).
    func rollupTotals(fromSlot: Int64, toSlot: Int64) async throws(StoreError) -> RollupTotals
    /// Use per local day and task over the slots [fromSlot, toSlot), oldest day first, tasks in
    /// order; local day = floor((slot * 900000 + offsetMinutes * 60000) / 86400000). Only days
    /// with requests.
    func rollupDayTasks(fromSlot: Int64, toSlot: Int64, offsetMinutes: Int) async throws(StoreError)
        -> [RollupDayTask]
    /// Failures (status >= 400) per local day and error code, as ``rollupDayTasks(fromSlot:toSlot:offsetMinutes:)``.
    func rollupDayCodes(fromSlot: Int64, toSlot: Int64, offsetMinutes: Int) async throws(StoreError)
        -> [RollupDayCode]
    /// Use per model (the one that answered) over the slots [fromSlot, toSlot), in byte order
    /// of the models; "" for requests that reached no model.
    func rollupModels(fromSlot: Int64, toSlot: Int64) async throws(StoreError) -> [RollupModel]
    /// Use per caller over the UTC days [fromDay, toDay], in user id order.
    func rollupCallers(fromDay: Int64, toDay: Int64) async throws(StoreError) -> [RollupCaller]
    /// The latest requests answered with a status of 400 or more, newest first.
    func recentFailures(limit: Int) async throws(StoreError) -> [FailedRequest]
    /// Jobs queued or running, oldest first.
    func activeJobs(limit: Int) async throws(StoreError) -> [JobRecord]
}

package struct RollupTotals: Sendable, Equatable {
    package var requests: Int
    package var cacheHits: Int
    /// Tokens of the requests that were not cache hits.
    package var inputTokens: Int
    package var outputTokens: Int
    /// Requests answered with a status of 400 or more.
    package var errors: Int
    /// What the requests that were not cache hits cost at `PRICES` (millionths of the unit).
    package var costMicros: Int64
    /// What the gateway added (duration less the upstream call), requests below 400 only.
    package var added: LatencyHistogram
    /// The upstream calls' durations, every request that made one.
    package var upstream: LatencyHistogram

    package init(
        requests: Int = 0, cacheHits: Int = 0, inputTokens: Int = 0, outputTokens: Int = 0, errors: Int = 0,
        costMicros: Int64 = 0, added: LatencyHistogram = LatencyHistogram(),
        upstream: LatencyHistogram = LatencyHistogram()
    ) {
        self.costMicros = costMicros
        self.requests = requests
        self.cacheHits = cacheHits
        self.inputTokens = inputTokens
        self.outputTokens = outputTokens
        self.errors = errors
        self.added = added
        self.upstream = upstream
    }
}

package struct RollupDayTask: Sendable, Equatable {
    /// The local day (days since the epoch, shifted by the offset asked for).
    package var day: Int64
    /// "" for requests without a task (e.g. /v1 chat).
    package var task: String
    package var requests: Int
    package var inputTokens: Int
    package var outputTokens: Int
    package var errors: Int
    package var costMicros: Int64

    package init(
        day: Int64, task: String, requests: Int, inputTokens: Int, outputTokens: Int, errors: Int,
        costMicros: Int64 = 0
    ) {
        self.costMicros = costMicros
        self.day = day
        self.task = task
        self.requests = requests
        self.inputTokens = inputTokens
        self.outputTokens = outputTokens
        self.errors = errors
    }
}

package struct RollupDayCode: Sendable, Equatable {
    package var day: Int64
    /// "" for a failure that had no code.
    package var code: String
    package var count: Int

    package init(day: Int64, code: String, count: Int) {
        self.day = day
        self.code = code
        self.count = count
    }
}

package struct RollupModel: Sendable, Equatable {
    package var model: String
    package var requests: Int
    package var inputTokens: Int
    package var outputTokens: Int
    package var costMicros: Int64
    package var errors: Int

    package init(model: String, requests: Int, inputTokens: Int, outputTokens: Int, costMicros: Int64, errors: Int) {
        self.model = model
        self.requests = requests
        self.inputTokens = inputTokens
        self.outputTokens = outputTokens
        self.costMicros = costMicros
        self.errors = errors
    }
}

package struct RollupCaller: Sendable, Equatable {
    /// "" for all guests together.
    package var userID: String
    /// The plan the caller was last seen with, nil when no row said.
    package var plan: String?
    package var requests: Int
    package var cacheHits: Int
    package var inputTokens: Int
    package var outputTokens: Int
    package var errors: Int
    /// The caller's latest request in the range.
    package var lastSeenMilliseconds: Int64?
    /// What its days charged at `PRICES` (millionths of the unit).
    package var costMicros: Int64

    package init(
        userID: String, plan: String?, requests: Int, cacheHits: Int, inputTokens: Int, outputTokens: Int, errors: Int,
        lastSeenMilliseconds: Int64?, costMicros: Int64 = 0
    ) {
        self.costMicros = costMicros
        self.userID = userID
        self.plan = plan
        self.requests = requests
        self.cacheHits = cacheHits
        self.inputTokens = inputTokens
        self.outputTokens = outputTokens
        self.errors = errors
        self.lastSeenMilliseconds = lastSeenMilliseconds
    }
}

package struct FailedRequest: Sendable, Equatable {
    package var sequence: Int64
    package var requestID: String
    package var createdAtMilliseconds: Int64
    package var status: Int
    package var code: String?
    package var route: String
    package var upstream: String?
    package var task: String?
    package var userID: String?

    package init(
        sequence: Int64, requestID: String, createdAtMilliseconds: Int64, status: Int, code: String?, route: String,
        upstream: String?, task: String?, userID: String?
    ) {
        self.sequence = sequence
        self.requestID = requestID
        self.createdAtMilliseconds = createdAtMilliseconds
        self.status = status
        self.code = code
        self.route = route
        self.upstream = upstream
        self.task = task
        self.userID = userID
    }
}
