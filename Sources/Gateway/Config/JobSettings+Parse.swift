import Jobs

extension JobSettings {
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
