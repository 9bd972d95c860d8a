import TextTasks

/// Long texts as durable jobs (`JOB_*`, docs/api.md "Jobs (long texts)").
package struct JobSettings: Sendable, Equatable {
    /// `JOB_MAX_CHARACTERS`: the longest text a job takes, in characters after trimming.
    package var maxCharacters = 200_000
    /// `JOB_MAX_ACTIVE_PER_USER`: jobs one caller may have queued or running at once.
    package var maxActivePerCaller = 3
    /// `JOB_CHUNK_TOKENS`: the estimated tokens of one chunk (and of one reduce call's input).
    package var chunkTokens = 2_000
    /// `JOB_CHUNK_OVERLAP_TOKENS`: how much of the end of a chunk the next one repeats, at most.
    package var overlapTokens = 100
    /// `JOB_CONCURRENCY`: upstream calls one job has in flight at once, across every instance.
    package var concurrencyPerJob = 4
    /// `JOB_WORKERS`: upstream calls for jobs this instance has in flight at once.
    package var workers = 16
    /// `JOB_RETENTION_HOURS`: how long a finished job can still be read.
    package var retention: Duration = .seconds(24 * 3600)
    /// `JOB_LEASE_SECONDS`: how long a claimed item is a worker's without renewal; a worker
    /// that dies gives its items up this long after its last renewal.
    package var lease: Duration = .seconds(30)

    package init() {}

    /// The characters of one chunk, overlap included.
    package var chunkCharacters: Int { TokenEstimate.characters(tokens: chunkTokens) }
    package var overlapCharacters: Int { TokenEstimate.characters(tokens: overlapTokens) }

    /// How often a worker renews the leases of what it runs: often enough that two renewals
    /// can fail before a lease passes.
    var renewalInterval: Duration { lease / 3 }
}
