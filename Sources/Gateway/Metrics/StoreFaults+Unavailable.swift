import Store
import Telemetry

extension StoreFaults {
    /// The answer for a request the store could not serve: the error counted and logged as
    /// any other, the client told `503 store_unavailable` (never SQLite's words).
    func unavailable(_ error: StoreError, operation: Operation = .read) -> GatewayError {
        record(error, operation: operation)
        return .storeUnavailable
    }
}
