import Pricing
import Store
import Telemetry

/// Hands a finished request's row to the store's writer, once per request, for the finisher:
/// when the request finished (`LEDGER_DURABILITY=fast`), or before the answer's end, waiting
/// for the commit (`strict`); and a job's row when the job ended. Only the routes that do the
/// product's work leave rows (``RouteLabel/isLedgered``).
struct LedgerRecorder: Sendable {
    let writer: LedgerWriter
    let strict: Bool
    /// `HISTORY_STORE_RESULTS`: whether the answer's text goes into the row.
    let storesResults: Bool
    let clock: @Sendable () -> Instant
    /// `PRICES`: what a row's calls cost, kept in the row at the prices of its start.
    var prices: PriceList? = nil

    /// Records `context`'s row, as `state` says it ended (the finisher hands each row over once).
    func record(_ context: RequestContext, _ state: RequestSummary) async {
        let row = row(for: context, state: state)
        if strict {
            _ = await writer.submitAndWait(row)
        } else {
            await writer.submit(row)
        }
    }

    /// The row as it stands now. A request still running (a strict stream about to send its
    /// last event) is recorded with the outcome it is about to end with.
    func row(for context: RequestContext, state: RequestSummary) -> LedgerRow {
        let durationNanoseconds = context.start.nanoseconds(until: .now())
        let durationMilliseconds = Double(durationNanoseconds) / 1e6
        let now = clock()
        let outcome = state.outcome ?? (state.status < 400 ? .done : .rejected)
        let createdAt = RequestSummary.startMilliseconds(now, durationNanoseconds)
        return LedgerRow(
            requestID: context.id, userID: state.report.caller?.userID, tokenID: state.report.caller?.tokenID,
            task: state.report.task,
            tone: state.report.tone,
            route: context.route.rawValue, model: state.report.model, inputLength: state.report.textLength,
            inputTokens: state.usage?.promptTokens, outputTokens: state.usage?.completionTokens, status: state.status,
            code: state.error?.code.rawValue, outcome: outcome.label, cacheHit: outcome == .cacheHit,
            durationMilliseconds: durationMilliseconds, createdAtMilliseconds: createdAt,
            result: storesResults ? state.report.result : nil, plan: state.report.caller?.plan,
            upstream: state.report.upstreamAttempts > 0 ? state.report.upstream : nil,
            upstreamMilliseconds: state.upstreamNanoseconds > 0 ? Double(state.upstreamNanoseconds) / 1e6 : nil,
            costMicros: (state.spent ?? state.cost(prices, startedAt: createdAt)).micros
        )
    }

    /// Records the row of a job that ended, without waiting: the job's runner goes on.
    func record(_ job: JobRecord, durationMilliseconds: Double) {
        let row = row(for: job, durationMilliseconds: durationMilliseconds)
        Task { [writer] in await writer.submit(row) }
    }

    /// The row of a job that ended, under the `jobs` route with the whole job's tokens and
    /// cost. It charges none: each item charged its own when it finished.
    func row(for job: JobRecord, durationMilliseconds: Double) -> LedgerRow {
        let status =
            switch job.status {
            case .succeeded: 200
            case .cancelled: GatewayError.clientClosedRequest.status.code
            default: job.errorCode.map(GatewayError.known(code:))?.status.code ?? 500
            }
        return LedgerRow(
            requestID: job.requestID, userID: job.ownerID, task: job.task, tone: job.tone,
            route: RouteLabel.jobs.rawValue, model: nil,
            inputLength: job.inputLength, inputTokens: job.inputTokens, outputTokens: job.outputTokens, status: status,
            code: job.status == .cancelled ? GatewayError.jobCancelled.code.rawValue : job.errorCode,
            outcome: job.status == .succeeded ? "done" : job.status.rawValue,
            cacheHit: false, durationMilliseconds: durationMilliseconds,
            createdAtMilliseconds: job.createdAtMilliseconds,
            result: storesResults ? job.result : nil, chargesTokens: false, plan: job.plan, costMicros: job.costMicros
        )
    }
}
