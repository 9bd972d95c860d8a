/// What keeps a store healthy: retention, backups, checks.
public protocol StoreMaintenance: Sendable {
    /// Deletes history rows created before `historyBeforeMilliseconds` and daily usage of
    /// days before `usageBeforeDay`, in bounded batches so the writer is never held long.
    /// Returns the rows and days deleted.
    func purge(historyBeforeMilliseconds: Int64, usageBeforeDay: Int64) async throws(StoreError) -> (history: Int, usageDays: Int)
    /// Writes a consistent copy of the whole store to `path` (a new file) while it is in use.
    func backup(to path: String) async throws(StoreError)
    /// The store's own integrity check: empty when it found nothing wrong, else its findings.
    func integrityCheck() async throws(StoreError) -> [String]
}
