/// What keeps a store healthy: retention, backups, checks.
package protocol StoreMaintenance: Sendable {
    /// Deletes history rows created before `historyBeforeMilliseconds` and daily usage of
    /// days before `usageBeforeDay`, in bounded batches so the writer is never held long.
    /// Returns the rows and days deleted.
    func purge(historyBeforeMilliseconds: Int64, usageBeforeDay: Int64) async throws(StoreError) -> (
        history: Int, usageDays: Int
    )
    /// Copies the write-ahead log back into the database without holding up writes; returns
    /// the frames in the log and those copied. Someone must call it now and then (the gateway:
    /// every second), or the log only grows. A store whose server keeps its own log returns (0, 0).
    func checkpoint() async throws(StoreError) -> (logFrames: Int, checkpointed: Int)
    /// Writes a consistent copy of the whole store to `path` (a new file) while it is in use,
    /// or throws when copies are made by other means (Postgres: pg_dump).
    func backup(to path: String) async throws(StoreError)
    /// The store's own integrity check: empty when it found nothing wrong, else its findings.
    func integrityCheck() async throws(StoreError) -> [String]
}
