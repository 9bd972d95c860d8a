import Access
import ChatAPI
import Jobs
import Pricing
import Store
import Telemetry

/// The budgets of a job's upstream calls: each chunk's call reserves its worst case in the
/// budgets of the job's caller before it is made, as a request does, and settles what it used
/// after; a chunk whose worst case has no room ends its job with `budget_exceeded`.
struct JobBudgets: Sendable {
    /// The budgets' policy a request's reservation follows: the keeper, the plans, the prices
    /// and the models, the shared accounts.
    let policy: BudgetMiddleware
    let logger: Logger

    /// Reserves a call of `inputBytes` (with the gateway's prompt around them when
    /// `prompted`), and when `json` its repair call too, for `job`'s caller; nil when it counts
    /// in no budget.
    func reserve(for job: JobRecord, inputBytes: Int, prompted: Bool, json: Bool) async throws(JobFailure)
        -> BudgetReservation?
    {
        let plan = policy.plans.plan(
            for: job.ownerID.map { Caller(userID: $0, plan: job.plan ?? PlanCatalog.defaultName) })
        let accounts = policy.accounts(userID: job.ownerID, plan: plan, key: job.callerKey)
        guard !accounts.isEmpty else { return nil }
        let first = (inputBytes + (prompted ? policy.overhead.prompt : 0) + 2) / 3
        let input = json ? 2 * first + 2 * policy.maxTokens + (policy.overhead.repair + 2) / 3 : first
        let output = policy.maxTokens * (json ? 2 : 1)
        let micros = policy.worstMicros(input: input, output: output, at: policy.clock())
        let demand = BudgetDemand(accounts: accounts, worstTokens: Int64(input + output), worstMicros: micros)
        // Room that calls in flight hold (the job's own among them) comes back as they end: the
        // chunk waits for it a while. A budget spent for its period ends the job.
        for attempt in 1... {
            let decision: BudgetDecision
            do {
                decision = try await policy.keeper.reserve(demand, now: policy.clock())
            } catch {
                throw Self.failure(.upstreamBusy)
            }
            switch decision {
            case .allowed(let hold):
                return hold.map {
                    BudgetReservation(hold: $0, keeper: policy.keeper, local: policy.local, worstMicros: micros)
                }
            case .refused(let refusal) where refusal.retryAfterSeconds <= 1 && attempt < Self.waits:
                try? await Task.sleep(for: .seconds(1))
            case .refused(let refusal):
                throw Self.failure(.budgetExceeded(refusal.scope, retryAfterSeconds: refusal.retryAfterSeconds))
            }
        }
        throw Self.failure(.internalError)
    }

    /// Settles `reservation` with the call's `usage` and its cost (nil: unknown, a call that
    /// reported no usage or whose model has no price, counted at its reservation).
    func settle(_ reservation: BudgetReservation, usage: Usage?, costMicros: Int64?) async {
        let tokens = Int64(max(0, usage?.promptTokens ?? 0) + max(0, usage?.completionTokens ?? 0))
        let charged = costMicros ?? reservation.worstMicros
        do {
            try await reservation.keeper.settle(reservation.hold, tokens: tokens, micros: charged, now: policy.clock())
        } catch {
            logger.warning("budget_settle_failed", [("micros", .int(Int(charged)))])
        }
    }

    /// How many times a chunk asks again for room that calls in flight hold, a second apart.
    static let waits = 20

    private static func failure(_ error: GatewayError) -> JobFailure {
        JobFailure(code: error.code.rawValue, message: error.message(.persian))
    }
}
