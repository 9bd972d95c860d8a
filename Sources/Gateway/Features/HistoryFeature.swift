/// `/api/history` and `/api/history/{id}`: a caller's own rows from the store, read and
/// deleted (a deleted row's answer kept for retries goes with it); identified callers only,
/// outside the limits, as ``UsageFeature`` is.
struct HistoryFeature: GatewayFeature {
    let parts: GatewayParts
    let admission: CallerFront
    let idempotency: IdempotencyFeature

    var routes: [Route] {
        guard let store = parts.store else { return [] }
        let own: [any Middleware] = [admission.caller(required: true)]
        let history = HistoryRoute(
            history: store.backend, cursors: HistoryCursorSeal(key: store.backend.historyCursorKey),
            idempotency: idempotency.service, faults: store.faults
        )
        let item = HistoryItemRoute(history: store.backend, idempotency: idempotency.service, faults: store.faults)
        return [
            Route(method: .GET, path: "/api/history", middleware: own, handler: history),
            Route(method: .DELETE, path: "/api/history", middleware: own, handler: history),
            Route(method: .GET, path: "/api/history/{id}", middleware: own, handler: item),
            Route(method: .DELETE, path: "/api/history/{id}", middleware: own, handler: item),
        ]
    }
}
