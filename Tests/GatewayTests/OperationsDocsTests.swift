import EventLoop
import Gateway
import HTTPClient
import JSON
import Pricing
import Redis
import TestSupport
import Testing

@testable import Access

#if canImport(Glibc)
    import Glibc
#endif

/// `docs/grafana-dashboard.json` and `docs/alerts.yaml` against a real gateway's `/metrics`:
/// every metric they name is served, and every label they group or select by is one that
/// metric has. The gateway has everything on that registers metrics (a SQLite store, so
/// the ledger and jobs; Redis, for limits and the shared cache; rate limits and the cache).
@Suite("The dashboard and the alerting rules name only metrics and labels /metrics serves", .serialized)
struct OperationsDocsTests {
    static let sample = ProcessEndToEndTests.sample
    static let carol = "tg-carol-token-0123456789"
    /// Labels Prometheus adds when it scrapes, which no exposition has.
    static let targetLabels: Set<String> = ["instance", "job"]

    /// Every `textgateway_…` name in `text`, a histogram's `_bucket`, `_sum` and `_count`
    /// samples as its base name.
    static func metricNames(_ text: String) -> Set<String> {
        Set(text.matches(of: /textgateway_[a-z0-9_]+/).map { baseName(String($0.output)) })
    }

    static func baseName(_ name: String) -> String {
        for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
            return String(name.dropLast(suffix.count))
        }
        return name
    }

    /// Every query of the dashboard: its panels' (and rows' panels') targets, and its variables'.
    static func dashboardQueries(_ dashboard: JSONValue) -> [String] {
        var queries: [String] = []
        func panels(_ value: JSONValue?) {
            for panel in value?.arrayValue ?? [] {
                for target in panel["targets"]?.arrayValue ?? [] {
                    if let expr = target["expr"]?.stringValue { queries.append(expr) }
                }
                panels(panel["panels"])
            }
        }
        panels(dashboard["panels"])
        for variable in dashboard["templating"]?["list"]?.arrayValue ?? [] {
            if let definition = variable["definition"]?.stringValue { queries.append(definition) }
        }
        return queries
    }

    /// Every rule's `expr:`, on its line or as the more indented block after `expr: |`.
    static func alertQueries(_ yaml: String) -> [String] {
        let lines = yaml.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var queries: [String] = []
        var index = 0
        while index < lines.count {
            let line = lines[index]
            let trimmed = line.drop { $0 == " " }
            index += 1
            guard trimmed.hasPrefix("expr:") else { continue }
            let rest = trimmed.dropFirst("expr:".count).trimmingPrefix(" ")
            guard rest == "|" || rest == ">" else {
                queries.append(String(rest))
                continue
            }
            let indent = line.count - trimmed.count
            var block: [String] = []
            while index < lines.count,
                lines[index].prefix(while: { $0 == " " }).count > indent || lines[index].allSatisfy({ $0 == " " })
            {
                block.append(String(lines[index].drop { $0 == " " }))
                index += 1
            }
            queries.append(block.joined(separator: " "))
        }
        return queries
    }

    /// The labels `query` uses, with the metrics it uses them on: the matchers of each
    /// `textgateway_…{…}` selector, and each `by (…)`'s labels on every metric in the
    /// parentheses that follow it.
    static func labelUses(_ query: String) -> [(metric: String, label: String)] {
        var uses: [(metric: String, label: String)] = []
        let characters = Array(query)
        for match in query.matches(of: /(textgateway_[a-z0-9_]+)\{([^}]*)\}/) {
            let metric = baseName(String(match.output.1))
            for matcher in String(match.output.2).matches(
                of: /([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"(?:[^"\\]|\\.)*"/)
            {
                uses.append((metric, String(matcher.output.1)))
            }
        }
        for match in query.matches(of: /\bby\s*\(([^)]*)\)\s*\(/) {
            let labels = match.output.1.split(separator: ",").map {
                String($0.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
            }.filter { !$0.isEmpty }
            // The group opened by the `(` that ends the match, to its closing parenthesis.
            var position = query.distance(from: query.startIndex, to: match.range.upperBound)
            var depth = 1
            let start = position
            while position < characters.count, depth > 0 {
                if characters[position] == "(" { depth += 1 }
                if characters[position] == ")" { depth -= 1 }
                position += 1
            }
            let inner = String(characters[start..<max(start, position - 1)])
            for metric in metricNames(inner) { for label in labels { uses.append((metric, label)) } }
        }
        return uses
    }

    /// `# TYPE` names of an exposition with their kinds, and the labels each family's samples carry.
    static func exposition(_ text: String) -> (types: [String: String], labels: [String: Set<String>]) {
        var types: [String: String] = [:]
        var labels: [String: Set<String>] = [:]
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") {
                let words = line.split(separator: " ")
                if words.count == 4 { types[String(words[2])] = String(words[3]) }
                continue
            }
            if line.hasPrefix("#") { continue }
            let name = String(line.prefix { $0 != "{" && $0 != " " })
            let family = types[name] != nil ? name : baseName(name)
            var set = labels[family] ?? []
            if let open = line.firstIndex(of: "{"), let close = line.lastIndex(of: "}") {
                for matcher in String(line[line.index(after: open)..<close]).matches(
                    of: /([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"/)
                {
                    set.insert(String(matcher.output.1))
                }
            }
            labels[family] = set
        }
        return (types, labels)
    }

    @Test(
        "dashboard: schema 39 JSON, Prometheus data source and instance variables; rules file: groups of whole rules"
    )
    func structure() throws {
        let dashboard = try JSONValue.parse(Array(try RepositoryFile.text("docs/grafana-dashboard.json").utf8))
        #expect(dashboard["schemaVersion"]?.intValue == 39)
        #expect(
            dashboard["__inputs"]?.arrayValue?.contains {
                $0["name"]?.stringValue == "DS_PROMETHEUS" && $0["pluginId"]?.stringValue == "prometheus"
            } == true)
        let variables = dashboard["templating"]?["list"]?.arrayValue ?? []
        #expect(
            variables.contains {
                $0["name"]?.stringValue == "DS_PROMETHEUS" && $0["type"]?.stringValue == "datasource"
                    && $0["query"]?.stringValue == "prometheus"
            })
        #expect(variables.contains { $0["name"]?.stringValue == "instance" && $0["type"]?.stringValue == "query" })
        var panels: [JSONValue] = []
        var ids: [Int] = []
        func collect(_ value: JSONValue?) {
            for panel in value?.arrayValue ?? [] {
                if let id = panel["id"]?.intValue { ids.append(id) }
                if panel["type"]?.stringValue != "row" { panels.append(panel) }
                collect(panel["panels"])
            }
        }
        collect(dashboard["panels"])
        #expect(panels.count >= 20)
        #expect(Set(ids).count == ids.count, "panel ids repeat")
        for panel in panels {
            let title = panel["title"]?.stringValue ?? "?"
            #expect(panel["datasource"]?["uid"]?.stringValue == "${DS_PROMETHEUS}", "\(title)")
            let targets = panel["targets"]?.arrayValue ?? []
            #expect(!targets.isEmpty, "\(title) has no query")
            for target in targets {
                let expr = target["expr"]?.stringValue ?? ""
                #expect(expr.contains("textgateway_"), "\(title)")
                #expect(expr.contains("instance=~\"$instance\""), "\(title): \(expr) is not filtered by $instance")
                // Histograms only through their buckets' rate, or their sums and counts.
                if expr.contains("histogram_quantile") {
                    #expect(expr.contains("_bucket{") && expr.contains("[5m]"), "\(title)")
                }
            }
        }

        let yaml = try RepositoryFile.text("docs/alerts.yaml")
        let lines = yaml.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.allSatisfy { $0 == " " } }
        #expect(lines.first == "groups:")
        #expect(lines.contains("  - name: textgateway"))
        #expect(lines.contains("    rules:"))
        // Each rule: alert, expr, for, labels.severity, annotations.summary and .description.
        let rules = yaml.split(separator: "\n      - alert: ", omittingEmptySubsequences: false).dropFirst()
        #expect(rules.count >= 6)
        for rule in rules {
            let name = String(rule.prefix { $0 != "\n" })
            #expect(name.hasPrefix("TextGateway"), "\(name)")
            for key in [
                "\n        expr: ", "\n        for: ", "\n        labels:\n          severity: ",
                "\n        annotations:\n", "\n          summary: ", "\n          description: ",
            ] {
                #expect(rule.contains(key), "\(name) has no \(key)")
            }
            #expect(rule.contains(/\n          severity: (critical|warning)\n/), "\(name)")
            #expect(rule.contains(/\n        for: [0-9]+[smh]\n/), "\(name)")
        }
        #expect(Set(rules.map { $0.prefix { $0 != "\n" } }).count == rules.count, "alert names repeat")
    }

    @Test(
        "every metric the dashboard and rules name is a # TYPE of /metrics, and every label they use is the metric's"
    )
    func namesAndLabels() async throws {
        let dashboardText = try RepositoryFile.text("docs/grafana-dashboard.json")
        let dashboard = try JSONValue.parse(Array(dashboardText.utf8))
        let alertsText = try RepositoryFile.text("docs/alerts.yaml")
        let names = Self.metricNames(dashboardText).union(Self.metricNames(alertsText))
        let queries = Self.dashboardQueries(dashboard) + Self.alertQueries(alertsText)
        #expect(Self.alertQueries(alertsText).count == alertsText.ranges(of: "        expr: ").count)
        // What the issue asks the dashboard to show.
        for wanted in [
            "textgateway_requests_total", "textgateway_request_duration_seconds",
            "textgateway_upstream_duration_seconds",
            "textgateway_upstream_attempts_total", "textgateway_upstream_circuit_state", "textgateway_tokens_total",
            "textgateway_rate_limited_total",
            "textgateway_cache_requests_total", "textgateway_ledger_queue_depth",
            "textgateway_ledger_rows_committed_total",
            "textgateway_ledger_rows_dropped_total", "textgateway_store_errors_total", "textgateway_redis_up",
            "textgateway_jobs",
            "textgateway_job_queue_depth", "textgateway_job_items_total", "textgateway_job_duration_seconds",
            "textgateway_jobs_finished_total",
        ] {
            #expect(Self.metricNames(dashboardText).contains(wanted), "the dashboard does not show \(wanted)")
        }

        let redis = try await RedisServer()
        defer { redis.kill() }
        try await GatewayHarness.with(configure: {
            StoreEndToEndTests.configure(&$0, path: storeDirectory() + "/gateway.sqlite")
            // carol's plan allows one request a minute, so a refusal is counted too.
            $0.tokens = try? TokenStore.parse(
                inline: [
                    "\(TokenStore.hashLine(forToken: StoreEndToEndTests.alice)):alice:pro",
                    "\(TokenStore.hashLine(forToken: Self.carol)):carol:tiny",
                ].joined(separator: ","))
            $0.plans = (try? PlanCatalog.parse("pro:-:-:1000000,tiny:1:-:-")) ?? PlanCatalog()
            $0.redis = try? RedisConfiguration(url: redis.url)
            // Generous: a loaded machine's slow reply must not be taken for Redis away.
            $0.redis?.timeout = .seconds(5)
            $0.cacheTimeToLive = .seconds(60)
            $0.cacheBackend = .redis
            $0.jobs.chunkTokens = 400
            // Prices and a shared budget in Redis: the cost and the budgets' families. The device
            // sessions' budget, which alice's requests do not count in: with Redis stopped below,
            // they still reach the cache and count its Redis errors.
            $0.prices = try? PriceList.parse("test-model=1/2", currency: .standard)
            $0.budgets = BudgetSettings(devices: [BudgetLimit(period: .day, unit: .micros, amount: 1_000_000_000)])
        }) { harness in
            let alice = StoreEndToEndTests.bearer(StoreEndToEndTests.alice)
            // A miss then a hit, an upstream failure, and a refusal: the labelled children appear.
            #expect(try await harness.process(task: "summarize", text: Self.sample, headers: alice).status == 200)
            #expect(try await harness.process(task: "summarize", text: Self.sample, headers: alice).status == 200)
            #expect(
                try await harness.process(task: "rewrite", text: Self.sample + " [mock:status=400]", headers: alice)
                    .status >= 400)
            #expect(
                try await harness.process(
                    task: "summarize", text: Self.sample + " (carol)", headers: StoreEndToEndTests.bearer(Self.carol)
                ).status == 200)
            #expect(
                try await harness.process(
                    task: "summarize", text: Self.sample + " (carol)", headers: StoreEndToEndTests.bearer(Self.carol)
                ).status == 429)
            // A job that succeeds and one whose item the upstream refuses, for the job families' children.
            let id = try await JobsEndToEndTests.submitted(
                harness, task: "summarize", text: JobsEndToEndTests.longText(sentences: 30))
            #expect(try await JobsEndToEndTests.finished(harness, id)["status"]?.stringValue == "succeeded")
            let failing = try await JobsEndToEndTests.submitted(
                harness, task: "summarize", text: JobsEndToEndTests.longText(sentences: 30, extra: " [mock:status=400]")
            )
            #expect(try await JobsEndToEndTests.finished(harness, failing)["status"]?.stringValue == "failed")
            // Redis stopped for a moment: the limiter's and the shared cache's errors.
            redis.signal(SIGSTOP)
            _ = try await harness.process(task: "summarize", text: Self.sample + " (Redis away)", headers: alice)
            redis.signal(SIGCONT)

            var exposition = (types: [String: String](), labels: [String: Set<String>]())
            await eventually("/metrics serves the jobs' and the ledger's families") {
                guard
                    let response = try? await harness.client.send(
                        HTTPClientRequest(url: harness.base + "/metrics")), response.status == 200
                else { return false }
                exposition = Self.exposition(String(decoding: response.body, as: UTF8.self))
                return exposition.labels["textgateway_jobs_finished_total"]?.contains("status") == true
                    && (exposition.labels["textgateway_ledger_rows_committed_total"] != nil)
            }
            for name in names.sorted() {
                #expect(exposition.types[name] != nil, "\(name) is named in docs/ but /metrics has no # TYPE \(name)")
            }
            var checked = 0
            for query in queries {
                for use in Self.labelUses(query) where !Self.targetLabels.contains(use.label) {
                    guard exposition.types[use.metric] != nil else { continue } // reported above
                    if use.label == "le" {
                        #expect(
                            exposition.types[use.metric] == "histogram",
                            "\(query): le on \(use.metric), not a histogram")
                        continue
                    }
                    #expect(
                        exposition.labels[use.metric]?.contains(use.label) == true,
                        "\(query): \(use.metric) has no label \(use.label) in /metrics")
                    checked += 1
                }
            }
            #expect(checked > 40)
        }
    }
}
