import Access
import Crypto
import EventLoop
package import Gateway
import JSON
import Postgres
import Store
package import Telemetry

/// The command line's work on the store (`text-gateway tokens|usage|db …`), against the
/// file or Postgres database `DATABASE_URL` names — the same one a running gateway uses,
/// which sees a token made or revoked here within a second (its token watcher's poll).
package enum StoreCommand: Equatable, Sendable {
    /// `tokens create --user U [--plan P] [--label L]`: prints the new token and nothing else.
    case createToken(user: String, plan: String, label: String?)
    /// `tokens list [--format table|json]`: never a token, never a digest.
    case listTokens(format: ReportFormat)
    /// `tokens revoke <id>`.
    case revokeToken(id: String)
    /// `usage [--since YYYY-MM-DD] [--user U] [--format table|csv|json]`: a line per user and
    /// UTC day, and one for all guests (requests without a user id, whatever their address).
    case usage(since: String?, user: String?, format: ReportFormat)
    /// `db backup <file>`: a consistent copy while the gateway runs (SQLite; a Postgres
    /// store is backed up with pg_dump).
    case backup(file: String)
    /// `db check`: SQLite's integrity check, or the gateway's own checks on Postgres. Exits 0
    /// when all is well, 1 when it finds damage (findings, or a file too damaged to open or
    /// not a database), 2 when it cannot check (no store, a missing or unreadable file, a
    /// newer schema, a server away).
    case check
    /// `devices list [--format table|json]`: the App Attest devices, revoked ones too.
    case listDevices(format: ReportFormat)
    /// `devices revoke <id>`: a device's sessions stop on every instance within 2 s.
    case revokeDevice(id: String)

    package enum ReportFormat: String, Sendable, Equatable {
        case table
        case csv
        case json
    }

    /// What a command printed and its exit status.
    package struct Result: Sendable, Equatable {
        package var output = ""
        package var error = ""
        package var status: Int32 = 0
    }

    /// How many days `usage` reports without `--since`, today included.
    static let defaultUsageDays: Int64 = 30

    /// Runs the command against the configured store.
    package func run(configuration: GatewayConfiguration, clock: @Sendable () -> Instant = { .now }) async -> Result {
        if configuration.database == .off { return Self.noStore }
        if case .createToken(let user, let plan, let label) = self,
            let problem = TokenIssuer.problem(user: user, plan: plan, label: label, plans: configuration.plans)
        {
            return Result(error: "--" + problem.field + " " + problem.message + "\n", status: 2)
        }
        switch configuration.database {
        case .off:
            return Self.noStore
        case .sqlite(let path):
            let pool: BlockingPool
            do {
                pool = try BlockingPool(threadCount: 1, name: "store-cli")
            } catch {
                return Result(error: "cannot start a thread: \(error)\n", status: 1)
            }
            let result = await run(sqlite: path, pool: pool, clock: clock)
            await pool.shutdown()
            return result
        case .postgres(let postgres):
            // The client runs on event loops: one is enough for a command.
            let group: EventLoopGroup
            do {
                group = try EventLoopGroup(loopCount: 1, namePrefix: "store-cli")
            } catch {
                return Result(error: "cannot start a thread: \(error)\n", status: 1)
            }
            let client = PostgresClient(configuration: postgres, group: group, name: "store_postgres")
            let result = await run(postgres: client, clock: clock)
            await client.stop(deadline: MonotonicInstant.now().advanced(by: .seconds(5)))
            await group.shutdownGracefully()
            return result
        }
    }

    private static let noStore = Result(error: "DATABASE_URL is off: this gateway keeps no store\n", status: 2)

    /// Whether the command writes (the others open the store read-only).
    private var writes: Bool {
        switch self {
        case .createToken, .revokeToken, .revokeDevice: true
        default: false
        }
    }

    private func run(sqlite path: String, pool: BlockingPool, clock: @Sendable () -> Instant) async -> Result {
        let store: SQLiteStore
        do {
            store = try await SQLiteStore.open(path: path, pool: pool, readOnly: !writes)
        } catch {
            return Result(error: "the store cannot be used: \(error)\n", status: openFailureStatus(error))
        }
        let result = await run(on: store, name: path, clock: clock)
        await store.close()
        return result
    }

    private func run(postgres client: PostgresClient, clock: @Sendable () -> Instant) async -> Result {
        let store: PostgresStore
        do {
            try await client.start()
            store = try await PostgresStore.open(client: client, readOnly: !writes, startTimeout: Self.postgresTimeout)
        } catch {
            return Result(error: "the store cannot be used: \(error)\n", status: openFailureStatus(error))
        }
        return await run(on: store, name: store.name, clock: clock)
    }

    /// How long a command waits for the Postgres server to answer.
    static let postgresTimeout: Duration = .seconds(5)

    private func run(on store: any StoreBackend, name: String, clock: @Sendable () -> Instant) async -> Result {
        var result = Result()
        do {
            try await execute(store, name: name, into: &result, now: clock())
        } catch {
            result.error += "\(error)\n"
            // `db check` exits 1 for damage only: a store that failed otherwise was not checked.
            if case .check = self, !Self.isDamage(error) { result.status = 2 } else { result.status = 1 }
        }
        return result
    }

    /// The exit status when the store cannot be opened: 2, but for `db check` on a damaged
    /// file (its first pages, or not a database at all), which is what the check looks for: 1.
    private func openFailureStatus(_ error: any Error) -> Int32 {
        if case .check = self, let error = error as? StoreError, Self.isDamage(error) { return 1 }
        return 2
    }

    private static func isDamage(_ error: StoreError) -> Bool {
        error.code == .corrupt || error.code == .notADatabase
    }

    private func execute(_ store: any StoreBackend, name: String, into result: inout Result, now: Instant)
        async throws(StoreError)
    {
        switch self {
        case .createToken(let user, let plan, let label):
            let (token, stored) = try await TokenIssuer.issue(user: user, plan: plan, label: label, in: store, now: now)
            result.output = token + "\n"
            result.error = "token \(stored.id) for \(user) (plan \(plan)) created; it is shown only now\n"
        case .listTokens(let format):
            let tokens = try await store.tokens()
            result.output = Self.render(tokens, format: format)
        case .revokeToken(let id):
            if try await store.revokeToken(id: id, atMilliseconds: Self.milliseconds(now)) {
                result.error = "token \(id) revoked; a running gateway on this store refuses it within 2 s\n"
            } else {
                result.error = "no active token has the id \(id)\n"
                result.status = 1
            }
        case .usage(let since, let user, let format):
            var fromDay = now.utcDay - Self.defaultUsageDays + 1
            if let since {
                guard let day = Timestamp.day(fromDate: since) else {
                    result.error = "--since must be a date: YYYY-MM-DD\n"
                    result.status = 2
                    return
                }
                fromDay = day
            }
            let days = try await store.usageReport(fromDay: fromDay, userID: user)
            result.output = Self.render(days, format: format)
        case .backup(let file):
            try await store.backup(to: file)
            result.error = "backed up \(name) to \(file)\n"
        case .listDevices(let format):
            result.output = Self.render(try await store.devices(), format: format)
        case .revokeDevice(let id):
            if try await store.revokeDevice(id: id, atMilliseconds: Self.milliseconds(now)) {
                result.error = "device \(id) revoked; a running gateway on this store refuses its sessions within 2 s\n"
            } else {
                result.error = "no active device has the id \(id)\n"
                result.status = 1
            }
        case .check:
            let findings = try await store.integrityCheck()
            if findings.isEmpty {
                result.output = "ok\n"
            } else {
                result.output = findings.joined(separator: "\n") + "\n"
                result.status = 1
            }
        }
    }

    private static func milliseconds(_ instant: Instant) -> Int64 {
        Int64((instant.secondsSinceEpoch * 1000).rounded(.down))
    }

    // MARK: Rendering

    static func render(_ tokens: [StoredToken], format: ReportFormat) -> String {
        func time(_ milliseconds: Int64?) -> String? { milliseconds.map { Timestamp.iso8601(milliseconds: $0) } }
        let header = ["id", "user", "plan", "label", "created", "last_used", "revoked"]
        let rows = tokens.map { token in
            [
                token.id, token.userID, token.plan, token.label, time(token.createdAtMilliseconds),
                time(token.lastUsedAtMilliseconds),
                time(token.revokedAtMilliseconds),
            ]
        }
        return Report(name: "tokens", header: header, rows: rows, numeric: []).render(format)
    }

    /// The devices, never their keys, receipts or clients: the caller id their sessions have,
    /// the platform, the app (an App ID or an Android package), the environment (iOS) or where
    /// the key lives (Android: `tee`, `strongbox`), and the times.
    static func render(_ devices: [StoredDevice], format: ReportFormat) -> String {
        func time(_ milliseconds: Int64?) -> String? { milliseconds.map { Timestamp.iso8601(milliseconds: $0) } }
        let header = ["id", "user", "platform", "app_id", "environment", "counter", "created", "last_seen", "revoked"]
        let rows = devices.map { device in
            [
                device.id, DeviceSessions.userID(deviceID: device.id), device.platform.rawValue, device.appID,
                device.environment, String(device.counter),
                time(device.createdAtMilliseconds), time(device.lastSeenAtMilliseconds),
                time(device.revokedAtMilliseconds),
            ]
        }
        return Report(name: "devices", header: header, rows: rows, numeric: [5]).render(format)
    }

    /// All guests' line, in a table: a label no caller's id can be (ids have no spaces). CSV
    /// leaves the user empty and JSON makes it null.
    static let guestsLabel = "(all guests)"

    static func render(_ days: [DailyUsage], format: ReportFormat) -> String {
        let header = ["date", "user", "requests", "input_tokens", "output_tokens", "total_tokens", "cost_micros"]
        let rows: [[String?]] = days.map { day in
            let user = day.isGuests ? (format == .table ? guestsLabel : nil) : day.userID
            return [
                Timestamp.date(day: day.day), user, String(day.requests), String(day.inputTokens),
                String(day.outputTokens),
                String(day.totalTokens), String(day.costMicros),
            ]
        }
        return Report(name: "usage", header: header, rows: rows, numeric: [2, 3, 4, 5, 6]).render(format)
    }
}

/// Rows of text as an aligned table, CSV (RFC 4180) or JSON (`{"<name>": [{…}, …]}`).
struct Report {
    let name: String
    let header: [String]
    let rows: [[String?]]
    /// Columns whose values are numbers (right-aligned, unquoted in JSON).
    let numeric: Set<Int>

    func render(_ format: StoreCommand.ReportFormat) -> String {
        switch format {
        case .table:
            var widths = header.map(\.count)
            for row in rows {
                for (index, cell) in row.enumerated() { widths[index] = max(widths[index], (cell ?? "-").count) }
            }
            func line(_ cells: [String]) -> String {
                cells.enumerated().map { index, cell in
                    let pad = String(repeating: " ", count: widths[index] - cell.count)
                    return numeric.contains(index) ? pad + cell : cell + pad
                }.joined(separator: "  ").trimmingTrailingSpaces() + "\n"
            }
            return line(header) + rows.map { line($0.map { $0 ?? "-" }) }.joined()
        case .csv:
            func field(_ text: String?) -> String {
                guard let text else { return "" }
                guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
                return "\"" + text.replacing("\"", with: "\"\"") + "\""
            }
            return ([header.map(field)] + rows.map { $0.map(field) }).map { $0.joined(separator: ",") + "\r\n" }
                .joined()
        case .json:
            var writer = JSONWriter()
            writer.object {
                $0.field(name, array: rows) { object, row in
                    for (index, column) in header.enumerated() {
                        if let cell = row[index], numeric.contains(index), let number = Int(cell) {
                            object.field(column, number)
                        } else {
                            object.field(column, row[index])
                        }
                    }
                }
            }
            return String(decoding: writer.bytes, as: UTF8.self) + "\n"
        }
    }
}

extension String {
    fileprivate func trimmingTrailingSpaces() -> String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }

}
