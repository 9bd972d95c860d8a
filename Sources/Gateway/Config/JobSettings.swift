/// Long texts as durable jobs (`JOB_*`, docs/api.md "Jobs (long texts)").
public struct JobSettings: Sendable, Equatable {
    /// `JOB_MAX_CHARACTERS`: the longest text a job takes, in characters after trimming.
    public var maxCharacters = 200_000
    /// `JOB_MAX_ACTIVE_PER_USER`: jobs one caller may have queued or running at once.
    public var maxActivePerCaller = 3
    /// `JOB_CHUNK_TOKENS`: the estimated tokens of one chunk (and of one reduce call's input).
    public var chunkTokens = 2_000
    /// `JOB_CHUNK_OVERLAP_TOKENS`: how much of the end of a chunk the next one repeats, at most.
    public var overlapTokens = 100
    /// `JOB_CONCURRENCY`: upstream calls one job has in flight at once, across every instance.
    public var concurrencyPerJob = 4
    /// `JOB_WORKERS`: upstream calls for jobs this instance has in flight at once.
    public var workers = 16
    /// `JOB_RETENTION_HOURS`: how long a finished job can still be read.
    public var retention: Duration = .seconds(24 * 3600)
    /// `JOB_LEASE_SECONDS`: how long a claimed item is a worker's without renewal; a worker
    /// that dies gives its items up this long after its last renewal.
    public var lease: Duration = .seconds(30)

    public init() {}

    /// The characters of one chunk, overlap included.
    var chunkCharacters: Int { TokenEstimate.characters(tokens: chunkTokens) }
    var overlapCharacters: Int { TokenEstimate.characters(tokens: overlapTokens) }

    /// How often a worker renews the leases of what it runs: often enough that two renewals
    /// can fail before a lease passes.
    var renewalInterval: Duration { lease / 3 }

    static func parse(
        integer: (String, ClosedRange<Int>) throws(ConfigurationError) -> Int?
    ) throws(ConfigurationError) -> JobSettings {
        var settings = JobSettings()
        settings.maxCharacters = try integer("JOB_MAX_CHARACTERS", 20...5_000_000) ?? settings.maxCharacters
        settings.maxActivePerCaller = try integer("JOB_MAX_ACTIVE_PER_USER", 1...1_000) ?? settings.maxActivePerCaller
        settings.chunkTokens = try integer("JOB_CHUNK_TOKENS", 100...200_000) ?? settings.chunkTokens
        settings.overlapTokens = try integer("JOB_CHUNK_OVERLAP_TOKENS", 0...10_000) ?? settings.overlapTokens
        guard settings.overlapTokens * 4 <= settings.chunkTokens else {
            throw ConfigurationError("JOB_CHUNK_OVERLAP_TOKENS must be at most a quarter of JOB_CHUNK_TOKENS")
        }
        settings.concurrencyPerJob = try integer("JOB_CONCURRENCY", 1...256) ?? settings.concurrencyPerJob
        settings.workers = try integer("JOB_WORKERS", 1...4_096) ?? settings.workers
        if let hours = try integer("JOB_RETENTION_HOURS", 1...8_760) { settings.retention = .seconds(hours * 3600) }
        if let seconds = try integer("JOB_LEASE_SECONDS", 3...3_600) { settings.lease = .seconds(seconds) }
        return settings
    }
}
