import HTTP1
import HTTPServer
import JSON
import Store
import Telemetry

/// `GET /api/history?limit=&before=` (the caller's rows, newest first, a page at a time) and
/// `DELETE /api/history` (all of them, and every answer kept for the caller's `Idempotency-Key`s).
struct HistoryRoute: ResponseHandler {
    let history: any HistoryStore
    let cursors: HistoryCursorSeal
    let idempotency: IdempotencyService
    let faults: StoreFaults

    static let defaultLimit = 20
    static let maximumLimit = 100

    func handle(_ request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        let caller = try context.identifiedCaller()
        if request.method == .DELETE {
            do {
                _ = try await idempotency.deleteKept(
                    userID: caller.userID, paths: IdempotencyMiddleware.Route.allCases.map(\.path), requestID: nil)
                _ = try await history.deleteHistory(userID: caller.userID)
            } catch {
                throw faults.unavailable(error, operation: .delete)
            }
            return HTTPResponse(status: .noContent)
        }
        let query = try QueryParameters(request.query)
        let limit = try query.integer("limit", in: 1...Self.maximumLimit, default: Self.defaultLimit)
        var cursor: HistoryCursor?
        if let text = query["before"] {
            guard let parsed = cursors.open(text, userID: caller.userID) else { throw .invalidParameter }
            cursor = parsed
        }
        let page: HistoryPage
        do {
            page = try await history.history(userID: caller.userID, limit: limit, before: cursor)
        } catch {
            throw faults.unavailable(error)
        }
        var body = JSONWriter(capacity: 64 + page.items.count * 400)
        body.object {
            $0.field("items", array: page.items) { HistoryItemRoute.write($1.row, into: &$0) }
            $0.field("nextCursor", page.nextCursor.map { cursors.seal($0, userID: caller.userID) })
        }
        return HTTPResponse(
            headers: ["Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store"],
            body: .bytes(body.bytes))
    }
}

/// `GET /api/history/{id}` (one of the caller's rows) and `DELETE /api/history/{id}` (the row
/// and the answer kept for its `Idempotency-Key`). A row of another caller is `404`, exactly
/// as a missing one.
struct HistoryItemRoute: ResponseHandler {
    let history: any HistoryStore
    let idempotency: IdempotencyService
    let faults: StoreFaults

    func handle(_ request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        let caller = try context.identifiedCaller()
        let id = String(RoutingTable<Int>.parameter(in: request.path))
        // Only an id the gateway could have given a request can name a row.
        guard RequestID.isWellFormed(id) else { throw .itemNotFound }
        if request.method == .DELETE {
            let deleted: Bool
            do {
                // The kept answer first: when it cannot go, the row stays too, and the client's
                // retry of the delete finds both.
                let forgotten = try await idempotency.deleteKept(
                    userID: caller.userID, paths: IdempotencyMiddleware.Route.allCases.map(\.path), requestID: id)
                deleted = try await history.deleteHistoryItem(userID: caller.userID, id: id) || forgotten > 0
            } catch {
                throw faults.unavailable(error, operation: .delete)
            }
            guard deleted else { throw .itemNotFound }
            return HTTPResponse(status: .noContent)
        }
        let found: HistoryItem?
        do {
            found = try await history.historyItem(userID: caller.userID, id: id)
        } catch {
            throw faults.unavailable(error)
        }
        guard let item = found else { throw .itemNotFound }
        var body = JSONWriter(capacity: 400)
        body.object { Self.write(item.row, into: &$0) }
        return HTTPResponse(
            headers: ["Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store"],
            body: .bytes(body.bytes))
    }

    /// One history item as docs/api.md shows it.
    static func write(_ row: LedgerRow, into object: inout JSONWriter) {
        object.field("id", row.requestID)
        object.field("task", row.task)
        object.field("tone", row.tone)
        object.field("route", row.route)
        object.field("model", row.model)
        object.field("inputLength", row.inputLength)
        object.field("status", row.status)
        object.field("code", row.code)
        object.field("cacheHit", row.cacheHit)
        if row.inputTokens == nil && row.outputTokens == nil {
            object.nullField("usage")
        } else {
            object.field(
                "usage",
                object: {
                    $0.field("inputTokens", row.inputTokens ?? 0)
                    $0.field("outputTokens", row.outputTokens ?? 0)
                    $0.field("totalTokens", max(0, row.inputTokens ?? 0) + max(0, row.outputTokens ?? 0))
                })
        }
        // 0 for an answer from the cache or a kept answer; null when not known.
        object.field("costMicros", row.costMicros.map { Int($0) })
        object.field("createdAt", Timestamp.iso8601(milliseconds: row.createdAtMilliseconds))
        object.field("durationMs", milliseconds: row.durationMilliseconds)
        object.field("result", row.result)
    }
}
