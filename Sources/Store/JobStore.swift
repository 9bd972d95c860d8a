/// Long texts as durable jobs (docs/api.md, "Jobs (long texts)"): each job, the work items
/// it is split into and each item's answer, kept so that any gateway on the same store can go
/// on with a job after a restart — even `kill -9` — from its last stored answer.
///
/// A job's items form levels: level 0 holds the chunks of the source text (the map); each
/// higher level combines the answers of the one below it (a reduce round, or the final pass),
/// and is added only once every item below it is answered (``addLevel(_:)``). A worker
/// claims items with a lease (``claimItems(_:)``), renews it while it works
/// (``renewLeases(worker:items:until:nowMilliseconds:)``), and stores the answer only while
/// it still holds the lease (``completeItem(_:)``): so two workers never both store an
/// answer for one item, an answer once stored is never asked for again, and a dead worker's
/// items are claimed by another once its lease has passed.
///
/// Every time is milliseconds since the Unix epoch, passed in by the caller (tests drive it).
package protocol JobStore: Sendable {
    /// Creates `job` with its level-0 items, unless its caller already has `maxActive` jobs
    /// queued or running (counted and inserted in one transaction, so two submissions at once
    /// cannot both pass the cap).
    func createJob(_ job: NewJob, maxActive: Int) async throws(StoreError) -> JobCreation

    /// The job with `id`, or nil. The caller checks the owner.
    func job(id: String) async throws(StoreError) -> JobRecord?

    /// Marks a queued or running job `cancelled` (its items' leases end with it: no worker can
    /// store an answer for them any more). Returns the job as it now stands, or nil when there
    /// is none; a finished job is returned unchanged.
    func cancelJob(id: String, nowMilliseconds: Int64) async throws(StoreError) -> JobRecord?

    /// Leases up to `claim.limit` unanswered items whose lease is free or past, of jobs that are
    /// queued or running, oldest job first and in (level, index) order within a job, taking no
    /// more of one job than leaves `claim.perJob` of its items leased at once. A queued job it
    /// takes from becomes `running`. On Postgres the items are picked with
    /// `FOR UPDATE SKIP LOCKED`, so workers of several gateways claim at once without waiting
    /// on each other and never claim the same item.
    func claimItems(_ claim: JobClaim) async throws(StoreError) -> [ClaimedJobItem]

    /// Moves the lease of those of `items` that `worker` still holds to `until`; returns the
    /// items it still holds (an item of a job that was cancelled or finished, or whose lease
    /// another worker took after it passed, is not among them: its worker stops).
    func renewLeases(worker: String, items: [JobItemKey], until: Int64, nowMilliseconds: Int64) async throws(StoreError)
        -> [JobItemKey]

    /// Stores an item's answer, in one transaction with the job's progress and token counts
    /// and the owner's (or the guests') usage for the day (`usage_daily`, so a quota counts each chunk as it is
    /// answered and a restart forgets none of it). Only while `completion.worker` holds the
    /// item's lease, the item has no answer yet and the job is queued or running; false
    /// otherwise, and then nothing is written.
    func completeItem(_ completion: JobItemCompletion) async throws(StoreError) -> Bool

    /// Gives back `worker`'s lease on `item` without an answer (a worker stopping), so that
    /// another worker may claim it at once.
    func releaseItem(_ item: JobItemKey, worker: String) async throws(StoreError)

    /// The answered items of `jobID` at `level`, in index order, with how many items the
    /// level has in all.
    func levelAnswers(jobID: String, level: Int) async throws(StoreError) -> JobLevelAnswers

    /// Adds the items of the next level of a job: only when the job is running, every item of
    /// `level.level - 1` is answered and no item of `level.level` exists yet (two workers
    /// finishing a level at once add it once). Adds `level.addedCalls` to the job's total.
    /// Returns whether it added them.
    func addLevel(_ level: NewJobLevel) async throws(StoreError) -> Bool

    /// Ends a job that is queued or running as `succeeded` or `failed`, with its result or
    /// error; the items' input text is cleared (their answers and source ranges stay). Returns
    /// false, writing nothing, when the job had already ended.
    func finishJob(_ finish: JobFinish) async throws(StoreError) -> Bool

    /// Running jobs that have no unanswered item at all (a worker stopped between storing the
    /// last answer of a level and adding the next level or finishing): a worker picks them up
    /// to go on. At most `limit`, oldest first.
    func stalledJobs(limit: Int) async throws(StoreError) -> [JobRecord]

    /// Deletes jobs (and their items) that ended before `endedBeforeMilliseconds`; returns
    /// how many.
    func purgeJobs(endedBeforeMilliseconds: Int64) async throws(StoreError) -> Int

    /// Jobs by status, and unanswered items of queued and running jobs (the queue's depth).
    func jobStatistics() async throws(StoreError) -> JobStatistics
}

/// A job's state (`status` in the API).
package enum JobStatus: String, Sendable, CaseIterable {
    case queued, running, succeeded, failed, cancelled

    /// Whether the job has ended (nothing more will change it).
    package var isFinished: Bool {
        switch self {
        case .queued, .running: false
        case .succeeded, .failed, .cancelled: true
        }
    }
}

/// What an item of a job does with its input.
package enum JobItemKind: String, Sendable, CaseIterable {
    /// A chunk of the source text, with the task's map prompt.
    case map
    /// Partial answers combined into one (a reduce round).
    case reduce
    /// The last call: the task's own prompt over what the rounds left.
    case final
}

/// Where an item is: its job, level and place in the level.
package struct JobItemKey: Sendable, Hashable {
    package var jobID: String
    package var level: Int
    package var index: Int

    package init(jobID: String, level: Int, index: Int) {
        self.jobID = jobID
        self.level = level
        self.index = index
    }
}

/// An item as it is created.
package struct NewJobItem: Sendable, Equatable {
    package var kind: JobItemKind
    /// What is sent upstream (a chunk of the source, or the partial answers it combines).
    package var input: String
    /// The part of the source text the item stands for, in characters (grapheme clusters)
    /// from the start of the cleaned text: the link from an answer back to its source.
    package var sourceStart: Int
    package var sourceEnd: Int

    package init(kind: JobItemKind, input: String, sourceStart: Int, sourceEnd: Int) {
        self.kind = kind
        self.input = input
        self.sourceStart = sourceStart
        self.sourceEnd = sourceEnd
    }
}

/// A job as it is submitted, with its first level (the map, or a single final item).
package struct NewJob: Sendable {
    /// At least 128 random bits, made by the gateway.
    package var id: String
    /// The identified caller who owns it, nil for a guest.
    package var ownerID: String?
    /// What the cap on jobs in flight counts by: the user id, or a guest's client address.
    package var callerKey: String
    /// The caller's plan when it was submitted (its answers are charged under it).
    package var plan: String?
    /// The request id of the `POST` that made it (sent upstream with every call of the job).
    package var requestID: String
    package var task: String
    package var tone: String?
    /// `text` or `json`.
    package var format: String
    /// The source's length in characters after trimming.
    package var inputLength: Int
    package var createdAtMilliseconds: Int64
    /// The upstream calls expected so far (shown as the progress's total; a level added later
    /// adds its items).
    package var total: Int
    /// Level 0, in order.
    package var items: [NewJobItem]
    /// The W3C `traceparent` of the request that made it, when that request was traced: its
    /// chunks' spans join its trace.
    package var traceParent: String?

    package init(
        id: String, ownerID: String?, callerKey: String, plan: String? = nil, requestID: String, task: String,
        tone: String?, format: String,
        inputLength: Int, createdAtMilliseconds: Int64, total: Int, items: [NewJobItem], traceParent: String? = nil
    ) {
        self.id = id
        self.ownerID = ownerID
        self.callerKey = callerKey
        self.plan = plan
        self.requestID = requestID
        self.task = task
        self.tone = tone
        self.format = format
        self.inputLength = inputLength
        self.createdAtMilliseconds = createdAtMilliseconds
        self.total = total
        self.items = items
        self.traceParent = traceParent
    }
}

/// What ``JobStore/createJob(_:maxActive:)`` did.
package enum JobCreation: Sendable, Equatable {
    case created
    /// The caller has this many jobs queued or running already; nothing was written.
    case tooManyActive(Int)
}

/// A job as the store has it.
package struct JobRecord: Sendable, Equatable {
    package var id: String
    package var ownerID: String?
    package var callerKey: String
    package var requestID: String
    package var task: String
    package var tone: String?
    package var format: String
    package var inputLength: Int
    package var status: JobStatus
    /// Items answered, and the calls expected (``NewJob/total`` plus every level added since).
    package var done: Int
    package var total: Int
    /// Set when `succeeded`.
    package var result: String?
    /// The `data` of `format: json`, as JSON text, when `succeeded`.
    package var data: String?
    /// Tokens of every answered item so far.
    package var inputTokens: Int
    package var outputTokens: Int
    /// Set when `failed`.
    package var errorCode: String?
    package var errorMessage: String?
    package var createdAtMilliseconds: Int64
    package var updatedAtMilliseconds: Int64
    /// When it ended (succeeded, failed or cancelled).
    package var endedAtMilliseconds: Int64?
    /// ``NewJob/plan``.
    package var plan: String?
    /// What the answered items cost at `PRICES` (millionths of the currency's unit); nil once
    /// an item's model had no price.
    package var costMicros: Int64?
    /// ``NewJob/traceParent``.
    package var traceParent: String?

    package init(
        id: String, ownerID: String?, callerKey: String, requestID: String, task: String, tone: String?, format: String,
        inputLength: Int,
        status: JobStatus, done: Int, total: Int, result: String?, data: String?, inputTokens: Int, outputTokens: Int,
        errorCode: String?, errorMessage: String?, createdAtMilliseconds: Int64, updatedAtMilliseconds: Int64,
        endedAtMilliseconds: Int64?,
        plan: String? = nil, costMicros: Int64? = 0, traceParent: String? = nil
    ) {
        self.plan = plan
        self.costMicros = costMicros
        self.traceParent = traceParent
        self.id = id
        self.ownerID = ownerID
        self.callerKey = callerKey
        self.requestID = requestID
        self.task = task
        self.tone = tone
        self.format = format
        self.inputLength = inputLength
        self.status = status
        self.done = done
        self.total = total
        self.result = result
        self.data = data
        self.inputTokens = inputTokens
        self.outputTokens = outputTokens
        self.errorCode = errorCode
        self.errorMessage = errorMessage
        self.createdAtMilliseconds = createdAtMilliseconds
        self.updatedAtMilliseconds = updatedAtMilliseconds
        self.endedAtMilliseconds = endedAtMilliseconds
    }
}

/// One claim of a worker.
package struct JobClaim: Sendable {
    /// The worker's id, unique per running gateway.
    package var worker: String
    /// Items to claim at most.
    package var limit: Int
    /// Items of one job leased at once at most, by all workers together.
    package var perJob: Int
    package var nowMilliseconds: Int64
    /// The lease's end.
    package var leaseUntil: Int64

    package init(worker: String, limit: Int, perJob: Int, nowMilliseconds: Int64, leaseUntil: Int64) {
        self.worker = worker
        self.limit = limit
        self.perJob = perJob
        self.nowMilliseconds = nowMilliseconds
        self.leaseUntil = leaseUntil
    }
}

/// An item a worker holds the lease of, with what it needs to run it.
package struct ClaimedJobItem: Sendable, Equatable {
    package var key: JobItemKey
    package var kind: JobItemKind
    package var input: String
    /// How many items the item's level has (a map prompt says "part i of n").
    package var levelCount: Int
    /// Times the item was claimed, this claim included (more than 1: a worker before lost it).
    package var attempts: Int
    package var job: JobRecord

    package init(key: JobItemKey, kind: JobItemKind, input: String, levelCount: Int, attempts: Int, job: JobRecord) {
        self.key = key
        self.kind = kind
        self.input = input
        self.levelCount = levelCount
        self.attempts = attempts
        self.job = job
    }
}

/// An answer to store (``JobStore/completeItem(_:)``).
package struct JobItemCompletion: Sendable {
    package var key: JobItemKey
    package var worker: String
    package var answer: String
    /// The `data` of a final item of `format: json`, as JSON text.
    package var data: String?
    package var inputTokens: Int
    package var outputTokens: Int
    /// What the answer cost at `PRICES`; nil when its model had no price (the job's cost is
    /// then unknown).
    package var costMicros: Int64?
    /// The job's owner, whose usage of the UTC day `day` the tokens are added to (nil for a
    /// guest: they are added to all guests' day, ``DailyUsage/guestUserID``).
    package var ownerID: String?
    package var day: Int64
    package var nowMilliseconds: Int64

    package init(
        key: JobItemKey, worker: String, answer: String, data: String?, inputTokens: Int, outputTokens: Int,
        costMicros: Int64? = 0, ownerID: String?, day: Int64,
        nowMilliseconds: Int64
    ) {
        self.costMicros = costMicros
        self.key = key
        self.worker = worker
        self.answer = answer
        self.data = data
        self.inputTokens = inputTokens
        self.outputTokens = outputTokens
        self.ownerID = ownerID
        self.day = day
        self.nowMilliseconds = nowMilliseconds
    }
}

/// An answered item of a level.
package struct JobItemAnswer: Sendable, Equatable {
    package var index: Int
    package var kind: JobItemKind
    package var answer: String
    package var data: String?
    package var sourceStart: Int
    package var sourceEnd: Int

    package init(index: Int, kind: JobItemKind = .map, answer: String, data: String?, sourceStart: Int, sourceEnd: Int)
    {
        self.index = index
        self.kind = kind
        self.answer = answer
        self.data = data
        self.sourceStart = sourceStart
        self.sourceEnd = sourceEnd
    }
}

/// The answers of one level (``JobStore/levelAnswers(jobID:level:)``).
package struct JobLevelAnswers: Sendable, Equatable {
    /// The items the level has, answered or not.
    package var count: Int
    /// The answered ones, by index.
    package var answers: [JobItemAnswer]

    package init(count: Int, answers: [JobItemAnswer]) {
        self.count = count
        self.answers = answers
    }

    /// Every item of the level is answered (and it has at least one).
    package var isComplete: Bool { count > 0 && answers.count == count }
}

/// A level to add (``JobStore/addLevel(_:)``).
package struct NewJobLevel: Sendable {
    package var jobID: String
    /// At least 1.
    package var level: Int
    package var items: [NewJobItem]
    /// What the level adds to the job's total of calls: its items, less any already
    /// expected (the final pass is counted from the submission on).
    package var addedCalls: Int
    package var nowMilliseconds: Int64

    package init(jobID: String, level: Int, items: [NewJobItem], addedCalls: Int? = nil, nowMilliseconds: Int64) {
        self.jobID = jobID
        self.level = level
        self.items = items
        self.addedCalls = addedCalls ?? items.count
        self.nowMilliseconds = nowMilliseconds
    }
}

/// How a job ends (``JobStore/finishJob(_:)``).
package struct JobFinish: Sendable {
    package enum Outcome: Sendable, Equatable {
        case succeeded(result: String, data: String?)
        case failed(code: String, message: String)
    }

    package var jobID: String
    package var outcome: Outcome
    package var nowMilliseconds: Int64

    package init(jobID: String, outcome: Outcome, nowMilliseconds: Int64) {
        self.jobID = jobID
        self.outcome = outcome
        self.nowMilliseconds = nowMilliseconds
    }
}

/// What `/metrics` shows of the jobs (``JobStore/jobStatistics()``).
package struct JobStatistics: Sendable, Equatable {
    /// Jobs per status (every status present, 0 when none).
    package var jobs: [JobStatus: Int]
    /// Unanswered items of queued and running jobs.
    package var pendingItems: Int

    package init(jobs: [JobStatus: Int], pendingItems: Int) {
        self.jobs = jobs
        self.pendingItems = pendingItems
    }
}
