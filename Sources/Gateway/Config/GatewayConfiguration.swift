package import Access
import EventLoop
package import Jobs
package import Pricing
package import Redis
package import Telemetry
package import TextTasks
package import Tracing
package import Upstream

/// The gateway's settings, read from environment variables (docs/configuration.md).
/// Empty values count as unset. Invalid values are a ``ConfigurationError``, and the server
/// does not start; a missing key or model is not (then `/api/process` answers 500).
package struct GatewayConfiguration: Sendable {
    /// The first upstream's key, model, per-task models and base URL (the `DARVAREH_*`
    /// variables without `UPSTREAMS`); with ``upstreams`` empty, they are the one upstream.
    package var apiKey: String?
    package var defaultModel: String?
    package var taskModels: [String: String] = [:]
    package var baseURL = "https://api.darvareh.ir/v1"
    /// `UPSTREAMS` in fallback order, each with its `UPSTREAM_<NAME>_*` settings; empty: the
    /// one upstream ``apiKey``, ``defaultModel``, ``taskModels`` and ``baseURL`` describe.
    package var upstreams: [UpstreamSettings] = []
    /// Retries, backoff, fallback and cooldown (`UPSTREAM_RETRIES`, …).
    package var upstreamPolicy = UpstreamPolicy()

    /// The upstreams in force, in fallback order.
    package var effectiveUpstreams: [UpstreamSettings] {
        if !upstreams.isEmpty { return upstreams }
        var upstream = UpstreamSettings(
            name: UpstreamSettings.defaultName, baseURL: baseURL, apiKey: apiKey, defaultModel: defaultModel)
        upstream.taskModels = taskModels
        upstream.structuredMode = structuredMode
        for (alias, model) in modelAliases { upstream.aliasModels[alias] = model }
        return [upstream]
    }
    package var host = "127.0.0.1"
    package var port = 8080
    package var upstreamTimeout: Duration = .seconds(60)
    package var upstreamConnectTimeout: Duration = .seconds(10)
    /// Most upstream connections open at once; calls beyond it wait for a free one.
    package var upstreamMaxConnections = 16_384
    /// Idle upstream connections are closed this long after their last use.
    package var upstreamIdleTimeout: Duration = .seconds(60)
    /// Plain `http://` upstreams on the gateway's own HTTP/1.1 connections (off: through
    /// libcurl, as https always goes).
    package var upstreamOwnHTTP1 = true
    package var maxTokens = 1200
    /// How the first upstream is asked for `"format": "json"` answers (its `_STRUCTURED`),
    /// which `/api/process` uses until it asks through the pool, each upstream in its own.
    package var structuredMode = StructuredMode.jsonSchema
    package var maxBodyBytes = 1_048_576
    package var logLevel = Logger.Level.info
    package var logFormat = Logger.Format.text
    /// How long in-flight requests may run after SIGTERM before connections are closed.
    package var shutdownGrace: Duration = .seconds(10)
    /// Event loops; 0 (the default) is one per CPU the process may use (``EventLoopGroup/processorCount``).
    package var loopCount = 0
    /// `EVENT_LOOP_POLL_MICROSECONDS`: the longest a loop whose events come quickly polls for
    /// them before it sleeps (``LoopPolling``); 0 turns polling off. Nil (the default) is
    /// ``defaultLoopPollMicroseconds``, or 0 under a cgroup CPU quota, which polling would spend.
    package var loopPollMicroseconds: Int?
    package static let defaultLoopPollMicroseconds = 500

    /// The polling limit in force, given the CPUs the cgroup's quota allows (nil: no quota).
    package func loopPollLimit(cpuQuota: Int?) -> Duration {
        .microseconds(loopPollMicroseconds ?? (cpuQuota == nil ? Self.defaultLoopPollMicroseconds : 0))
    }
    /// `GATEWAY_MODELS`: the `/v1` model aliases a client may name, in order (alias →
    /// upstream model id). When empty, the one alias `default` names `DARVAREH_MODEL_ID`.
    package var modelAliases: [(alias: String, model: String)] = []

    /// The aliases in force.
    package var effectiveModelAliases: [(alias: String, model: String)] {
        if !modelAliases.isEmpty { return modelAliases }
        return defaultModel.map { [("default", $0)] } ?? []
    }
    /// A stream whose first upstream token takes longer ends with `upstream_timeout`.
    package var streamFirstTokenTimeout: Duration = .seconds(30)
    /// A stream whose upstream stays silent this long between chunks ends with `upstream_timeout`.
    package var streamIdleTimeout: Duration = .seconds(30)
    /// The longest a whole stream may run.
    package var streamTotalTimeout: Duration = .seconds(300)
    /// A comment line (`: ping`) is sent when a stream has been quiet this long.
    package var heartbeatInterval: Duration = .seconds(15)
    /// Most messages a `/v1/chat/completions` request may carry.
    package var maxMessages = 256
    /// `MAX_CHOICES`: the most answers (`n`) one `/v1/chat/completions` request may ask
    /// for; each may take `MAX_TOKENS`, so this bounds what one request can spend.
    package var maxChoices = 4
    /// How long identical `/api/process` answers are served from memory; nil (the default,
    /// `CACHE_TTL_SECONDS=0`) turns the cache off.
    package var cacheTimeToLive: Duration?
    /// Most answers the cache holds.
    package var cacheMaxEntries = 1000
    /// The clock the cache's time to live runs on (tests advance their own).
    var cacheClock: @Sendable () -> MonotonicInstant = { .now() }
    /// `IDEMPOTENCY_TTL_SECONDS`: how long an answer given to a request with an
    /// `Idempotency-Key` is kept for its retries (a job's always; an answer's text only with
    /// ``historyStoresResults``: ``idempotencyAnswerTimeToLive``).
    package var idempotencyTimeToLive: Duration = .seconds(86_400)
    /// `IDEMPOTENCY_RETRY_WINDOW_SECONDS`: with `HISTORY_STORE_RESULTS=off`, the longest an
    /// answer's text is kept for a retry. Five minutes: a client retries a lost answer within
    /// seconds (the Swift client's back-off waits at most 10 s between attempts), and a phone
    /// back on the network or an app back in the foreground within minutes.
    package var idempotencyRetryWindow: Duration = .seconds(300)
    /// How often expired idempotency records are deleted (tests make it short).
    var idempotencyPurgeInterval: Duration = .seconds(60)

    /// How long an answer of `/api/process` or `/v1/chat/completions` is kept for its
    /// retries. Its body is the answer's text: an operator who promised not to keep answers
    /// (`HISTORY_STORE_RESULTS=off`) gets only the retry window, however long the TTL is.
    package var idempotencyAnswerTimeToLive: Duration {
        historyStoresResults ? idempotencyTimeToLive : min(idempotencyTimeToLive, idempotencyRetryWindow)
    }
    /// When set, `GET /metrics` needs `Authorization: Bearer <this>`.
    package var metricsToken: String?
    /// `ADMIN_TOKEN`: when set, the operator's console (`/admin`, `/api/admin/…`) is served
    /// to a bearer of it; unset, those paths do not exist.
    package var adminToken: String?
    /// `ADMIN_FAILURES_PER_MINUTE`: wrong admin tokens one client address may send within a
    /// minute; the next admin calls from it are `429` for a minute.
    package var adminFailuresPerMinute = 5
    /// Caller tokens (`GATEWAY_TOKENS` or `GATEWAY_TOKENS_FILE`); nil: the gateway is open.
    package var tokens: TokenStore?
    /// Rate-limit plans (`PLANS`), with the built-in `guest` and `default`.
    package var plans = PlanCatalog()
    /// `CURRENCY` (and `CURRENCY_MINOR_UNITS`): what prices and costs are in.
    package var currency = Currency.standard
    /// `PRICES` or `PRICES_FILE`: what each upstream model's tokens cost; nil: no prices, and
    /// no request has a cost.
    package var prices: PriceList?
    /// `BUDGETS`: the spending budgets of all guests, all device sessions and the whole
    /// gateway (a caller's own are its plan's, `PLANS`).
    package var budgets = BudgetSettings()
    /// `BUDGET_TIMEZONE`: where the budgets' days and months begin.
    package var budgetCalendar = BudgetCalendar.utc
    /// `PRICES_REQUIRED=on`: the gateway starts only when every model it may call has a price
    /// in force, so no request is ever unpriced (prices are only ever added to: a model
    /// priced at the start stays priced).
    package var pricesRequired = false
    /// Per-user (or per-address) rate limits and token quotas; `RATE_LIMITS=off` disables them.
    package var rateLimitsEnabled = true
    /// Request metrics for `/metrics`; `METRICS=off` stops recording them.
    package var metricsEnabled = true
    /// Proxies whose `X-Forwarded-For` names the client (`TRUSTED_PROXIES`).
    package var trustedProxies = TrustedProxies(ranges: [])
    /// Where spans go and which traces are kept (docs/observability.md); nil: tracing off.
    package var tracing: TracingSettings?
    /// `IPV6_CLIENT_PREFIX`: the bits of an IPv6 client's address that name it, for every
    /// count and key kept per address (``ClientAddressKey``).
    package var ipv6ClientPrefix = ClientAddressKey.defaultIPv6PrefixLength

    /// How a client's address keys what is kept per address.
    package var clientAddressKey: ClientAddressKey {
        ClientAddressKey(trustedProxies: trustedProxies, ipv6PrefixLength: ipv6ClientPrefix)
    }
    /// `ERROR_LANGUAGE`; nil (unset): Persian on `/api`, negotiated on `/v1`.
    package var errorLanguage: ErrorLanguage?
    /// `AUTH_REQUIRED`: whether every request to `/api/process` and `/v1` needs a valid
    /// token; nil (unset): when ``tokens`` are configured. Off, a request without a valid
    /// token is a guest (a valid one still names its caller).
    package var authRequired: Bool?

    /// Sign-in with the app's JWTs (`JWT_*`); nil: no JWT is accepted.
    package var jwt: JWTConfiguration?

    /// App Attest devices (`APP_ATTEST_*`); nil: no device registers.
    package var appAttest: AppAttestSettings?

    /// Whether `/api/process` and `/v1` refuse a request without a valid token (or, with
    /// `APP_ATTEST_REQUIRED`, a device session).
    package var requiresTokens: Bool {
        if let appAttest, appAttest.requirement != .off { return true }
        return authRequired ?? (tokens != nil || jwt != nil)
    }

    /// How callers are admitted, for the start's log line: `open` when no credential is
    /// needed; else what a caller may present, `tokens` (`GATEWAY_TOKENS`,
    /// `GATEWAY_TOKENS_FILE`, or the store's from `text-gateway tokens create`), `jwt`, or
    /// `tokens+jwt`; `none` when nothing can be (which the reading refuses).
    package var access: String {
        guard requiresTokens else { return "open" }
        var ways: [String] = []
        if tokens != nil || database != .off { ways.append("tokens") }
        if jwt != nil { ways.append("jwt") }
        if appAttest?.requirement == .all { return "devices" }
        if appAttest != nil { ways.append("devices") }
        return ways.isEmpty ? "none" : ways.joined(separator: "+")
    }
    /// `DATABASE_URL`.
    package var database = DatabaseLocation.standard
    /// `REDIS_URL` and `REDIS_TIMEOUT_MS`: the limits, quotas and cache every instance
    /// shares; nil keeps them in this process.
    package var redis: RedisConfiguration?
    /// `REDIS_FAILURE_MODE`.
    package var redisFailureMode = RedisFailureMode.local
    /// `CACHE_BACKEND`: `redis` by default when ``redis`` is set.
    package var cacheBackend = CacheBackend.memory
    /// `LEDGER_DURABILITY`.
    package var ledgerDurability = LedgerDurability.fast
    /// `HISTORY_STORE_RESULTS`: whether history keeps the answer's text.
    package var historyStoresResults = false
    /// `HISTORY_RETENTION_DAYS`: how long history rows are kept.
    package var historyRetentionDays = 30
    /// `USAGE_RETENTION_DAYS`: how long daily usage is kept.
    package var usageRetentionDays = 400
    /// `JOB_*`: long texts as durable jobs (served when there is a store).
    package var jobs = JobSettings()

    /// The longest a stream's upstream calls may take, all attempts together, until an
    /// answer's head: a head must come before the first token.
    var streamHeadDeadline: Duration { min(upstreamTimeout, streamFirstTokenTimeout) }

    /// How long a rate-limit lease lives if its request never gives it back: longer than
    /// any request or stream may run.
    package var leaseTimeToLive: Duration {
        max(upstreamTimeout, streamTotalTimeout) + .seconds(60)
    }

    package init() {}

    /// Reads every variable of docs/configuration.md from `environment`. A variable that looks
    /// like a setting and is not one (``SettingNames``) is an error too.
    package init(environment: [String: String]) throws(ConfigurationError) {
        try self.init(environment: environment, reads: nil)
    }

    /// `reads`, when given, gets every name the reading looks up.
    init(environment: [String: String], reads: SettingReads?) throws(ConfigurationError) {
        func value(_ name: String) -> String? {
            reads?.names.insert(name)
            guard let raw = environment[name] else { return nil }
            let trimmed = TextTrim.trimmed(raw)
            return trimmed.isEmpty ? nil : trimmed
        }
        func integer(_ name: String, _ range: ClosedRange<Int>) throws(ConfigurationError) -> Int? {
            guard let text = value(name) else { return nil }
            guard let number = Int(text), range.contains(number) else {
                throw ConfigurationError("\(name) must be a whole number in \(range.lowerBound)...\(range.upperBound)")
            }
            return number
        }
        func flag(_ name: String) throws(ConfigurationError) -> Bool? {
            guard let text = value(name) else { return nil }
            switch text.lowercased() {
            case "on", "true", "1", "yes": return true
            case "off", "false", "0", "no": return false
            default: throw ConfigurationError("\(name) must be on or off")
            }
        }
        func seconds(_ name: String) throws(ConfigurationError) -> Duration? {
            guard let text = value(name) else { return nil }
            guard let number = Double(text), number.isFinite, number > 0, number <= 86_400 else {
                throw ConfigurationError("\(name) must be a number of seconds greater than 0 (at most 86400)")
            }
            return .milliseconds(Int((number * 1000).rounded()))
        }

        // Names first, before any value: a misspelled name is the likelier mistake behind a
        // value that seems to be missing.
        let upstreamNames =
            try value("UPSTREAMS").map { list throws(ConfigurationError) in try Self.upstreamNames(list) } ?? []
        try SettingNames.check(environment, upstreams: upstreamNames.map { $0.uppercased() })

        host = value("HOST") ?? host
        port = try integer("PORT", 0...65535) ?? port
        upstreamTimeout = try seconds("UPSTREAM_TIMEOUT_SECONDS") ?? upstreamTimeout
        upstreamConnectTimeout = try seconds("UPSTREAM_CONNECT_TIMEOUT_SECONDS") ?? upstreamConnectTimeout
        upstreamMaxConnections = try integer("UPSTREAM_MAX_CONNECTIONS", 1...1_000_000) ?? upstreamMaxConnections
        upstreamIdleTimeout = try seconds("UPSTREAM_IDLE_TIMEOUT_SECONDS") ?? upstreamIdleTimeout
        upstreamOwnHTTP1 = try flag("UPSTREAM_OWN_HTTP1") ?? upstreamOwnHTTP1
        maxTokens = try integer("MAX_TOKENS", 1...1_000_000) ?? maxTokens
        maxBodyBytes = try integer("MAX_BODY_BYTES", 1024...(64 * 1024 * 1024)) ?? maxBodyBytes
        shutdownGrace = try seconds("SHUTDOWN_GRACE_SECONDS") ?? shutdownGrace
        loopCount = try integer("EVENT_LOOPS", 0...256) ?? loopCount
        loopPollMicroseconds = try integer("EVENT_LOOP_POLL_MICROSECONDS", 0...1000) ?? loopPollMicroseconds
        streamFirstTokenTimeout = try seconds("STREAM_FIRST_TOKEN_TIMEOUT_SECONDS") ?? streamFirstTokenTimeout
        streamIdleTimeout = try seconds("STREAM_IDLE_TIMEOUT_SECONDS") ?? streamIdleTimeout
        streamTotalTimeout = try seconds("STREAM_TOTAL_TIMEOUT_SECONDS") ?? streamTotalTimeout
        heartbeatInterval = try seconds("HEARTBEAT_SECONDS") ?? heartbeatInterval
        maxMessages = try integer("MAX_MESSAGES", 1...10_000) ?? maxMessages
        maxChoices = try integer("MAX_CHOICES", 1...128) ?? maxChoices
        if let ttl = try integer("CACHE_TTL_SECONDS", 0...604_800), ttl > 0 { cacheTimeToLive = .seconds(ttl) }
        cacheMaxEntries = try integer("CACHE_MAX_ENTRIES", 1...1_000_000) ?? cacheMaxEntries
        if let ttl = try integer("IDEMPOTENCY_TTL_SECONDS", 60...604_800) { idempotencyTimeToLive = .seconds(ttl) }
        if let window = try integer("IDEMPOTENCY_RETRY_WINDOW_SECONDS", 60...604_800) {
            idempotencyRetryWindow = .seconds(window)
        }
        metricsToken = value("METRICS_TOKEN")
        if let token = value("ADMIN_TOKEN") {
            // The console can mint caller tokens: a guessable secret would open the whole gateway.
            guard token.utf8.count >= 24, token.utf8.count <= 512,
                token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
            else {
                throw ConfigurationError(
                    "ADMIN_TOKEN must be 24-512 visible ASCII characters (make one: openssl rand -hex 32)")
            }
            guard !AdminAccess.isGuessable(token) else {
                throw ConfigurationError(
                    "ADMIN_TOKEN is too easy to guess: it needs at least \(AdminAccess.minimumDistinctCharacters) "
                        + "different characters, and its length times log2 of their number must be at least "
                        + "\(Int(AdminAccess.minimumEstimatedBits)) (make one: openssl rand -hex 32)")
            }
            adminToken = token
        }
        adminFailuresPerMinute = try integer("ADMIN_FAILURES_PER_MINUTE", 1...1_000_000) ?? adminFailuresPerMinute
        if let inline = value("GATEWAY_TOKENS") {
            do {
                tokens = try TokenStore.parse(inline: inline)
            } catch {
                throw ConfigurationError("GATEWAY_TOKENS: \(error)")
            }
        } else if let path = value("GATEWAY_TOKENS_FILE") {
            guard let text = DotEnv.readText(path: path) else {
                throw ConfigurationError("GATEWAY_TOKENS_FILE cannot be read (at most 1 MiB of UTF-8 text)")
            }
            do {
                tokens = try TokenStore.parse(file: text)
            } catch {
                throw ConfigurationError("GATEWAY_TOKENS_FILE: \(error)")
            }
        }
        if tokens?.isEmpty == true { tokens = nil }
        authRequired = try flag("AUTH_REQUIRED")
        if let url = value("DATABASE_URL") { database = try DatabaseLocation(url: url) }
        if let name = value("LEDGER_DURABILITY") {
            guard let durability = LedgerDurability(rawValue: name.lowercased()) else {
                throw ConfigurationError("LEDGER_DURABILITY must be fast or strict")
            }
            ledgerDurability = durability
        }
        historyStoresResults = try flag("HISTORY_STORE_RESULTS") ?? historyStoresResults
        historyRetentionDays = try integer("HISTORY_RETENTION_DAYS", 1...36_500) ?? historyRetentionDays
        usageRetentionDays = try integer("USAGE_RETENTION_DAYS", 1...36_500) ?? usageRetentionDays
        jobs = try JobSettings.parse(integer: integer)
        if let text = value("PLANS") {
            do {
                plans = try PlanCatalog.parse(text)
            } catch {
                throw ConfigurationError("PLANS: \(error)")
            }
        }
        if let text = value("TRUSTED_PROXIES") {
            do {
                trustedProxies = try TrustedProxies.parse(text)
            } catch {
                throw ConfigurationError("TRUSTED_PROXIES: \(error)")
            }
        }
        ipv6ClientPrefix = try integer("IPV6_CLIENT_PREFIX", ClientAddressKey.ipv6PrefixLengths) ?? ipv6ClientPrefix
        (redis, redisFailureMode, cacheBackend) = try Self.sharedState(environment: environment, value: value)
        jwt = try Self.jwtConfiguration(value: value, integer: integer, seconds: seconds, plans: plans)
        appAttest = try AppAttestSettings.parse(
            value: value, integer: integer, flag: flag, readFile: { DotEnv.readText(path: $0) })
        if let appAttest {
            // Devices, their counters and their sessions live in the store, shared by every instance.
            guard database != .off else {
                throw ConfigurationError(
                    (appAttest.appIDs.isEmpty ? "ANDROID_ATTEST_APPS" : "APP_ATTEST_APP_IDS")
                        + " needs a store: set DATABASE_URL (SQLite or Postgres), not off")
            }
            if value("APP_ATTEST_PLAN") != nil, !plans.contains(appAttest.plan) {
                throw ConfigurationError("APP_ATTEST_PLAN names no plan: define it in PLANS")
            }
            if appAttest.requirement != .off, authRequired == false {
                throw ConfigurationError(
                    "AUTH_REQUIRED is off but APP_ATTEST_REQUIRED refuses guests: leave AUTH_REQUIRED unset or on")
            }
        }
        rateLimitsEnabled = try flag("RATE_LIMITS") ?? rateLimitsEnabled
        metricsEnabled = try flag("METRICS") ?? metricsEnabled
        if let list = value("GATEWAY_MODELS") { modelAliases = try Self.aliasPairs(list, variable: "GATEWAY_MODELS") }
        (upstreams, upstreamPolicy) = try Self.upstreams(
            value: value, integer: integer, seconds: seconds, aliases: modelAliases)
        // The first upstream is the one the single-upstream settings describe.
        let primary = upstreams[0]
        apiKey = primary.apiKey
        defaultModel = primary.defaultModel
        taskModels = primary.taskModels
        baseURL = primary.baseURL
        structuredMode = primary.structuredMode
        try readPrices(value: value, integer: integer, flag: flag)
        try readTracing(value: value, integer: integer, flag: flag)
        if let name = value("LOG_LEVEL") {
            guard let level = Logger.Level(name: name) else {
                throw ConfigurationError(
                    "LOG_LEVEL must be one of \(Logger.Level.allCases.map(\.name).joined(separator: ", "))")
            }
            logLevel = level
        }
        if let name = value("ERROR_LANGUAGE") {
            guard let language = ErrorLanguage(rawValue: name.lowercased()) else {
                throw ConfigurationError("ERROR_LANGUAGE must be fa, en or auto")
            }
            errorLanguage = language
        }
        if let name = value("LOG_FORMAT") {
            guard let format = Logger.Format(rawValue: name.lowercased()) else {
                throw ConfigurationError("LOG_FORMAT must be text or json")
            }
            logFormat = format
        }
        // Required with nothing to present would refuse every caller: a mistake, not a policy.
        if authRequired == true, tokens == nil, jwt == nil, database == .off, appAttest == nil {
            throw ConfigurationError(
                "AUTH_REQUIRED is on but no caller can authenticate: set GATEWAY_TOKENS or GATEWAY_TOKENS_FILE, "
                    + "a JWT key (JWT_HS256_SECRET, JWT_JWKS_FILE or JWT_JWKS_URL), or a store (DATABASE_URL other "
                    + "than off) "
                    + "for tokens made with `text-gateway tokens create`"
            )
        }
    }

    /// The `JWT_*` variables; nil when none of the key variables is set.
    private static func jwtConfiguration(
        value: (String) -> String?, integer: (String, ClosedRange<Int>) throws(ConfigurationError) -> Int?,
        seconds: (String) throws(ConfigurationError) -> Duration?, plans: PlanCatalog
    ) throws(ConfigurationError) -> JWTConfiguration? {
        let secret = value("JWT_HS256_SECRET")
        let file = value("JWT_JWKS_FILE")
        let url = value("JWT_JWKS_URL")
        guard secret != nil || file != nil || url != nil else {
            // A check asked for that would not happen is a mistake worth stopping for.
            for name in ["JWT_ISSUER", "JWT_AUDIENCE"] where value(name) != nil {
                throw ConfigurationError(
                    "\(name) is set but no key is: set JWT_HS256_SECRET, JWT_JWKS_FILE or JWT_JWKS_URL")
            }
            return nil
        }
        var jwt = JWTConfiguration()
        if let secret {
            guard secret.utf8.count >= JWTConfiguration.minimumSecretBytes else {
                throw ConfigurationError(
                    "JWT_HS256_SECRET must be at least \(JWTConfiguration.minimumSecretBytes) bytes")
            }
            jwt.hs256Secret = Array(secret.utf8)
        }
        guard file == nil || url == nil else { throw ConfigurationError("set JWT_JWKS_FILE or JWT_JWKS_URL, not both") }
        if let file {
            do {
                jwt.jwksFile = (file, try JWKSFileSource.read(path: file))
            } catch {
                throw ConfigurationError("JWT_JWKS_FILE: \(error)")
            }
        }
        if let url {
            guard JWTConfiguration.isAcceptableKeySetURL(url) else {
                throw ConfigurationError("JWT_JWKS_URL must be an https:// URL (http:// only to a loopback address)")
            }
            jwt.jwksURL = url
        }
        jwt.jwksRefresh = try seconds("JWT_JWKS_REFRESH_SECONDS") ?? jwt.jwksRefresh
        guard jwt.jwksRefresh >= .seconds(10) else {
            throw ConfigurationError("JWT_JWKS_REFRESH_SECONDS must be at least 10")
        }
        jwt.cacheEntries = try integer("JWT_CACHE_ENTRIES", 2...10_000_000) ?? jwt.cacheEntries
        jwt.policy.issuer = value("JWT_ISSUER")
        if let list = value("JWT_AUDIENCE") {
            jwt.policy.audiences = list.split(separator: ",").map { TextTrim.trimmed(String($0)) }.filter {
                !$0.isEmpty
            }
        }
        if let claim = value("JWT_PLAN_CLAIM") {
            let path = claim.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard !path.contains(where: \.isEmpty) else {
                throw ConfigurationError("JWT_PLAN_CLAIM must be a claim name or a dotted path of names")
            }
            jwt.policy.planClaim = path
        }
        jwt.policy.leewaySeconds = Double(try integer("JWT_LEEWAY_SECONDS", 0...3600) ?? 30)
        if let list = value("JWT_ALGORITHMS") {
            var algorithms: Set<JWTAlgorithm> = []
            for name in list.split(separator: ",") {
                guard let algorithm = JWTAlgorithm(rawValue: TextTrim.trimmed(String(name)).uppercased()) else {
                    throw ConfigurationError("JWT_ALGORITHMS must list some of HS256, RS256, ES256")
                }
                algorithms.insert(algorithm)
            }
            guard !algorithms.isEmpty else {
                throw ConfigurationError("JWT_ALGORITHMS must list some of HS256, RS256, ES256")
            }
            // A list no key can serve would refuse every JWT: a mistake, not a policy. A key
            // set (file or URL) may hold RSA and P-256 keys, and change while the gateway runs.
            var usable: Set<JWTAlgorithm> = []
            if secret != nil { usable.insert(.hs256) }
            if file != nil || url != nil { usable.formUnion([.rs256, .es256]) }
            guard !algorithms.isDisjoint(with: usable) else {
                throw ConfigurationError(
                    "JWT_ALGORITHMS names no algorithm a configured key can verify: HS256 needs JWT_HS256_SECRET, "
                        + "RS256 and ES256 need JWT_JWKS_FILE or JWT_JWKS_URL")
            }
            jwt.policy.algorithms = algorithms
        }
        jwt.policy.plans = plans
        return jwt
    }

    /// The upstream model id for a `/v1` alias, nil when the alias is not allowed.
    package func upstreamModel(forAlias alias: String) -> String? {
        effectiveModelAliases.first { $0.alias == alias }?.model
    }

    /// The model for `task`: its override when set, else `DARVAREH_MODEL_ID`.
    package func model(for task: TextTask) -> String? {
        taskModels[task.rawValue] ?? defaultModel
    }
}

/// A configuration value that cannot be used. The message names the variable, never its value.
package struct ConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    package let message: String
    package init(_ message: String) { self.message = message }
    package var description: String { message }
}
