/// Everything a gateway asks of its store, as both backends (``SQLiteStore``,
/// ``PostgresStore``) provide it.
package typealias StoreBackend = LedgerStore & HistoryStore & UsageStore & TokenRepository & DeviceRepository
    & IdempotencyRepository & StoreMaintenance & JobStore & AdminStore
