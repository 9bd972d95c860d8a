import Crypto
package import Redis
import Synchronization
package import Telemetry

/// The budgets every gateway instance on one Redis shares: a reservation is one atomic script
/// over all of a request's budgets, on the server's clock, its settlement another
/// (``RedisBudgetScripts``). A budget's counter is `tg:bg:{<digest>}:<period>:<unit>:<period
/// id>`, the digest the first 16 bytes of the account key's SHA-256 in hex, so no caller's id
/// or address reaches Redis.
///
/// A hold lives ``holdTimeToLive`` (the longest a request may run, and a margin): one whose
/// instance died is counted at its reservation when it expires. Sums are Redis's integers;
/// the script compares them as Lua numbers, exact below 2^53 micro-units (9 billion units of
/// the currency a period).
package final class RedisBudgetKeeper: BudgetKeeper {
    static let reserveScript = RedisScript(source: RedisBudgetScripts.reserve)
    static let settleScript = RedisScript(source: RedisBudgetScripts.settle)
    static let useScript = RedisScript(source: RedisBudgetScripts.use)
    package static let scripts = [reserveScript, settleScript, useScript]

    package let holdTimeToLive: Duration
    private let client: RedisClient
    private let calendar: BudgetCalendar
    private let instance: String
    private let nextID = Atomic<UInt64>(1)

    package init(client: RedisClient, calendar: BudgetCalendar, holdTimeToLive: Duration) {
        self.client = client
        self.calendar = calendar
        self.holdTimeToLive = holdTimeToLive
        instance = SHA256.hexString(SecureRandom.bytes(8))
    }

    /// A budget's counter prefix: its account, period and unit.
    static func prefix(key: String, period: BudgetPeriod, unit: BudgetUnit) -> String {
        return "tg:bg:{\(RedisKeyDigest.of(key))}:\(period == .day ? "d" : "m"):\(unit == .tokens ? "t" : "m")"
    }

    package func reserve(_ demand: BudgetDemand, now: Instant) async throws -> BudgetDecision {
        var keys: [RedisArgument] = []
        var limits: [(account: BudgetAccount, limit: BudgetLimit)] = []
        var arguments: [RedisArgument] = []
        for account in demand.accounts {
            for limit in account.limits {
                keys.append(RedisArgument(Self.prefix(key: account.key, period: limit.period, unit: limit.unit)))
                limits.append((account, limit))
                arguments.append(RedisArgument(limit.period == .day ? "d" : "m"))
                arguments.append(RedisArgument(limit.unit == .tokens ? "t" : "m"))
                arguments.append(RedisArgument(Int(clamping: limit.amount)))
            }
        }
        guard !keys.isEmpty else { return .allowed(nil) }
        let number = nextID.add(1, ordering: .relaxed).oldValue
        let id = instance + ":" + String(number)
        let reply = try await client.evalSHA(
            Self.reserveScript, keys: keys,
            arguments: [
                RedisArgument(Int(calendar.offsetSeconds)), RedisArgument(id),
                RedisArgument(Int(holdTimeToLive / .milliseconds(1))), RedisArgument(Int(clamping: demand.worstTokens)),
                RedisArgument(Int(clamping: demand.worstMicros)),
            ] + arguments)
        guard let fields = reply.array, let allowed = fields.first?.integer else {
            throw RedisError(.protocol, "unexpected reply of the budget script")
        }
        guard allowed == 1 else {
            guard fields.count == 3, let index = fields[1].integer, let retry = fields[2].integer,
                (1...limits.count).contains(Int(index))
            else { throw RedisError(.protocol, "unexpected refusal of the budget script") }
            return .refused(
                BudgetRefusal(scope: limits[Int(index) - 1].account.scope, retryAfterSeconds: max(1, Int64(retry))))
        }
        guard fields.count == 3 * limits.count + 1 else {
            throw RedisError(.protocol, "unexpected reply of the budget script")
        }
        var entries: [BudgetHold.Entry] = []
        entries.reserveCapacity(limits.count)
        for (index, (account, limit)) in limits.enumerated() {
            guard let periodID = fields[3 * index + 1].integer, let remaining = fields[3 * index + 2].integer,
                let reset = fields[3 * index + 3].integer
            else { throw RedisError(.protocol, "unexpected reply of the budget script") }
            entries.append(
                BudgetHold.Entry(
                    key: account.key, period: limit.period, periodID: Int64(periodID), unit: limit.unit,
                    reserved: demand.worst(limit.unit), scope: account.scope, amount: limit.amount,
                    remaining: Int64(remaining), resetSeconds: Int64(reset)))
        }
        return .allowed(BudgetHold(id: number, entries: entries, redisID: id))
    }

    package func use(of accounts: [BudgetAccount], now: Instant) async throws -> [BudgetUse] {
        var keys: [RedisArgument] = []
        var periods: [RedisArgument] = []
        var limits: [(scope: BudgetScope, limit: BudgetLimit)] = []
        for account in accounts {
            for limit in account.limits {
                keys.append(RedisArgument(Self.prefix(key: account.key, period: limit.period, unit: limit.unit)))
                periods.append(RedisArgument(limit.period == .day ? "d" : "m"))
                limits.append((account.scope, limit))
            }
        }
        guard !keys.isEmpty else { return [] }
        let reply = try await client.evalSHA(
            Self.useScript, keys: keys, arguments: [RedisArgument(Int(calendar.offsetSeconds))] + periods)
        guard let fields = reply.array, fields.count == 3 * limits.count else {
            throw RedisError(.protocol, "unexpected reply of the budget script")
        }
        return try limits.enumerated().map { index, item in
            guard let used = fields[3 * index].integer, let held = fields[3 * index + 1].integer,
                let reset = fields[3 * index + 2].integer
            else { throw RedisError(.protocol, "unexpected reply of the budget script") }
            return BudgetUse(
                scope: item.scope, limit: item.limit, used: Int64(used), held: Int64(held), resetSeconds: Int64(reset))
        }
    }

    package func settle(_ hold: BudgetHold, tokens: Int64, micros: Int64, now: Instant) async throws {
        guard let id = hold.redisID, !hold.entries.isEmpty else { return }
        let keys = hold.entries.map {
            RedisArgument(Self.prefix(key: $0.key, period: $0.period, unit: $0.unit) + ":" + String($0.periodID))
        }
        let units = hold.entries.map { RedisArgument($0.unit == .tokens ? "t" : "m") }
        _ = try await client.evalSHA(
            Self.settleScript, keys: keys,
            arguments: [
                RedisArgument(id), RedisArgument(Int(clamping: max(0, tokens))),
                RedisArgument(Int(clamping: max(0, micros))),
            ]
                + units)
    }
}
