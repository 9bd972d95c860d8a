import Synchronization
import Testing

@testable import Telemetry

@Suite("Metrics")
struct MetricsTests {
    // MARK: Exposition text

    @Test("writes the exact text format for counters, gauges, a gauge function and a histogram")
    func writesExactExposition() {
        let registry = MetricsRegistry()
        let requests = registry.counter(
            "gateway_requests_total", help: "Requests answered.", labels: ["route", "status"])
        let errors = registry.counter("gateway_errors_total", help: "Errors.\nSecond line with a \\ backslash.")
        let inFlight = registry.gauge("gateway_in_flight", help: "Requests in flight.")
        registry.gaugeFunction("gateway_open_connections", help: "Open connections.") { 7 }
        let latency = registry.histogram(
            "gateway_latency_seconds",
            help: "Latency.",
            labels: ["route"],
            buckets: [0.25, 0.5, 1]
        )
        _ = registry.counter("gateway_unused_total", help: "Never incremented.", labels: ["kind"])

        requests.labels("/v1/process", "200").increment(by: 3)
        requests.labels("/v1/chat", "500").increment()
        requests.labels("/v1/chat", "200").increment(by: 2.5)
        errors.labels().increment()
        let gauge = inFlight.labels()
        gauge.set(4)
        gauge.increment()
        gauge.decrement(by: 2)
        let process = latency.labels("/v1/process")
        process.observe(0.125)
        process.observe(0.5) // on a boundary: counts in le="0.5"
        process.observe(0.75)
        process.observe(3) // above every bound: only in le="+Inf"

        let expected = """
            # HELP gateway_requests_total Requests answered.
            # TYPE gateway_requests_total counter
            gateway_requests_total{route="/v1/chat",status="200"} 2.5
            gateway_requests_total{route="/v1/chat",status="500"} 1
            gateway_requests_total{route="/v1/process",status="200"} 3
            # HELP gateway_errors_total Errors.\\nSecond line with a \\\\ backslash.
            # TYPE gateway_errors_total counter
            gateway_errors_total 1
            # HELP gateway_in_flight Requests in flight.
            # TYPE gateway_in_flight gauge
            gateway_in_flight 3
            # HELP gateway_open_connections Open connections.
            # TYPE gateway_open_connections gauge
            gateway_open_connections 7
            # HELP gateway_latency_seconds Latency.
            # TYPE gateway_latency_seconds histogram
            gateway_latency_seconds_bucket{route="/v1/process",le="0.25"} 1
            gateway_latency_seconds_bucket{route="/v1/process",le="0.5"} 2
            gateway_latency_seconds_bucket{route="/v1/process",le="1"} 3
            gateway_latency_seconds_bucket{route="/v1/process",le="+Inf"} 4
            gateway_latency_seconds_sum{route="/v1/process"} 4.375
            gateway_latency_seconds_count{route="/v1/process"} 4
            # HELP gateway_unused_total Never incremented.
            # TYPE gateway_unused_total counter

            """
        #expect(registry.exposition() == expected)
        #expect(MetricsRegistry.contentType == "text/plain; version=0.0.4; charset=utf-8")
    }

    @Test("families without labels show 0 before any update; an unlabelled histogram has no braces but le")
    func unlabelledFamiliesStartAtZero() {
        let registry = MetricsRegistry()
        _ = registry.counter("c_total", help: "c")
        _ = registry.gauge("g", help: "g")
        let histogram = registry.histogram("h_seconds", help: "h", buckets: [1])
        histogram.labels().observe(.milliseconds(1500))

        #expect(
            registry.exposition() == """
                # HELP c_total c
                # TYPE c_total counter
                c_total 0
                # HELP g g
                # TYPE g gauge
                g 0
                # HELP h_seconds h
                # TYPE h_seconds histogram
                h_seconds_bucket{le="1"} 0
                h_seconds_bucket{le="+Inf"} 1
                h_seconds_sum 1.5
                h_seconds_count 1

                """)
        #expect(MetricsRegistry().exposition() == "")
    }

    struct ValueCase: Sendable, CustomTestStringConvertible {
        var value: Double
        var text: String
        var testDescription: String { text }
    }

    @Test(
        "spells values as whole numbers when whole, shortest form otherwise",
        arguments: [
            ValueCase(value: 3, text: "3"),
            ValueCase(value: 0, text: "0"),
            ValueCase(value: -0.0, text: "0"),
            ValueCase(value: -7, text: "-7"),
            ValueCase(value: 123_456_789_012, text: "123456789012"),
            ValueCase(value: 2.5, text: "2.5"),
            ValueCase(value: 0.1, text: "0.1"),
            ValueCase(value: 0.0005, text: "0.0005"),
            ValueCase(value: 0.00001, text: "1e-05"),
            ValueCase(value: 1e20, text: "1e+20"),
            ValueCase(value: .infinity, text: "+Inf"),
            ValueCase(value: -.infinity, text: "-Inf"),
            ValueCase(value: .nan, text: "NaN"),
        ]
    )
    func spellsValues(_ testCase: ValueCase) {
        #expect(ExpositionFormat.value(testCase.value) == testCase.text)
    }

    @Test("escapes label values and help text")
    func escapes() {
        #expect(ExpositionFormat.escapeLabelValue(#"a\b"c"# + "\nd") == #"a\\b\"c\nd"#)
        #expect(ExpositionFormat.escapeHelp(#"a\b"c"# + "\nd") == #"a\\b"c\nd"#)
        #expect(ExpositionFormat.escapeLabelValue("plain") == "plain")
    }

    // MARK: Round trip

    @Test("reads back what was recorded, including label values with quotes, backslashes and newlines")
    func roundTrip() throws {
        let registry = MetricsRegistry()
        let counter = registry.counter("rt_events_total", help: "Events \"quoted\".", labels: ["kind", "detail"])
        let gauge = registry.gauge("rt_level", help: "Level.", labels: ["name"])
        let histogram = registry.histogram("rt_size", help: "Size.", labels: ["path"], buckets: [1, 10])
        let awkward = [
            #"say "hi""#,
            #"C:\path\"#,
            "line1\nline2",
            #"\n is not a newline"#,
            "زبان و 中文 🙂",
            "",
            "{a=\"b\",c}",
        ]
        var expected: Set<Sample> = []
        for (index, value) in awkward.enumerated() {
            counter.labels(value, "d\(index)").increment(by: index + 1)
            expected.insert(Sample("rt_events_total", ["kind": value, "detail": "d\(index)"], Double(index + 1)))
            gauge.labels(value).set(Double(index) - 0.5)
            expected.insert(Sample("rt_level", ["name": value], Double(index) - 0.5))
            let sizes = histogram.labels(value)
            sizes.observe(0.5)
            sizes.observe(Double(index) * 4)
            let small = index * 4 <= 1 ? 2.0 : 1.0
            let medium = index * 4 <= 10 ? 2.0 : 1.0
            expected.insert(Sample("rt_size_bucket", ["path": value, "le": "1"], small))
            expected.insert(Sample("rt_size_bucket", ["path": value, "le": "10"], medium))
            expected.insert(Sample("rt_size_bucket", ["path": value, "le": "+Inf"], 2))
            expected.insert(Sample("rt_size_sum", ["path": value], 0.5 + Double(index) * 4))
            expected.insert(Sample("rt_size_count", ["path": value], 2))
        }

        let text = registry.exposition()
        let samples = try ExpositionParser.samples(text)
        #expect(samples.count == expected.count)
        #expect(Set(samples) == expected)
        // Every sample belongs to a family announced by a TYPE line before it.
        #expect(try ExpositionParser.typedFamilies(text) == ["rt_events_total", "rt_level", "rt_size"])
    }

    // MARK: Concurrency

    @Test("8 tasks × 10,000 updates on shared children add up exactly")
    func concurrentUpdatesAddUp() async {
        let registry = MetricsRegistry()
        let counter = registry.counter("cc_total", help: "c", labels: ["route"])
        let fractional = registry.counter("cc_seconds_total", help: "c", labels: ["route"])
        let gauge = registry.gauge("cc_in_flight", help: "g", labels: ["route"])
        let histogram = registry.histogram("cc_seconds", help: "h", labels: ["route"], buckets: [0.25, 0.5])
        let tasks = 8
        let perTask = 10_000

        await withTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    // Half the tasks keep the child, half look it up every time.
                    let keep = task.isMultiple(of: 2)
                    let kept = counter.labels("/v1/process")
                    let keptHistogram = histogram.labels("/v1/process")
                    for index in 0..<perTask {
                        (keep ? kept : counter.labels("/v1/process")).increment()
                        fractional.labels("/v1/process").increment(by: 0.5)
                        let level = gauge.labels("/v1/process")
                        level.increment()
                        level.decrement()
                        (keep ? keptHistogram : histogram.labels("/v1/process")).observe(Double(index % 4) * 0.25)
                    }
                }
            }
            group.addTask {
                // Scrapes while updates run must neither crash nor block them.
                for _ in 0..<20 { _ = registry.exposition() }
            }
        }

        let total = Double(tasks * perTask)
        #expect(counter.labels("/v1/process").value == total)
        #expect(fractional.labels("/v1/process").value == total / 2)
        #expect(gauge.labels("/v1/process").value == 0)
        let observed = histogram.labels("/v1/process")
        #expect(observed.count == UInt64(total))
        #expect(observed.sum == total / 4 * (0 + 0.25 + 0.5 + 0.75))
        let snapshot = observed.snapshot()
        #expect(snapshot.buckets == [UInt64(total / 2), UInt64(total / 4), UInt64(total / 4)])
        #expect(snapshot.buckets.reduce(0, +) == snapshot.count)

        let samples = (try? ExpositionParser.samples(registry.exposition())) ?? []
        #expect(samples.contains(Sample("cc_total", ["route": "/v1/process"], total)))
        #expect(samples.contains(Sample("cc_seconds_bucket", ["route": "/v1/process", "le": "+Inf"], total)))
        #expect(samples.contains(Sample("cc_seconds_count", ["route": "/v1/process"], total)))
    }

    // MARK: Bounds and registration

    @Test("label sets beyond the child limit fold into one _other child")
    func foldsExtraLabelSetsIntoOther() {
        let registry = MetricsRegistry(maxChildrenPerFamily: 3)
        let family = registry.counter("bound_total", help: "b", labels: ["client", "model"])
        for client in ["a", "b", "c", "d", "e"] {
            family.labels(client, "m").increment()
        }
        family.labels("a", "m").increment() // existing children still count on their own
        family.labels("f", "m").increment(by: 5)

        #expect(family.children.count == 4)
        #expect(family.labels("d", "m") === family.labels("_other", "_other"))
        #expect(
            registry.exposition() == """
                # HELP bound_total b
                # TYPE bound_total counter
                bound_total{client="_other",model="_other"} 7
                bound_total{client="a",model="m"} 2
                bound_total{client="b",model="m"} 1
                bound_total{client="c",model="m"} 1

                """)

        // Thousands of distinct values never grow the family past the limit plus one.
        let histogram = registry.histogram("bound_seconds", help: "h", labels: ["client"], buckets: [1])
        for index in 0..<5_000 {
            histogram.labels("client-\(index)").observe(2)
        }
        #expect(histogram.children.count == 4)
        #expect(histogram.labels("_other").count == 4_997)
    }

    @Test("registering a name again returns the same family")
    func reRegistrationReturnsTheSameFamily() {
        let registry = MetricsRegistry()
        let first = registry.counter("again_total", help: "a", labels: ["x"])
        let second = registry.counter("again_total", help: "other help is ignored", labels: ["x"])
        #expect(first === second)
        let histogram = registry.histogram("again_seconds", help: "h", buckets: [1, 2])
        #expect(histogram === registry.histogram("again_seconds", help: "h", buckets: [1, 2, .infinity]))
        #expect(registry.gauge("again_level", help: "g") === registry.gauge("again_level", help: "g"))
        #expect(registry.exposition().split(separator: "\n").filter { $0.hasPrefix("# TYPE ") }.count == 3)
    }

    @Test("a gauge function is read at each scrape, and registering it again replaces it in place")
    func gaugeFunctionReadsAtScrape() {
        let registry = MetricsRegistry()
        let source = registry.gauge("source", help: "s")
        registry.gaugeFunction("reading", help: "r") { source.labels().value * 2 }
        _ = registry.counter("after_total", help: "a")
        source.labels().set(21)
        #expect(registry.exposition().contains("\nreading 42\n"))

        registry.gaugeFunction("reading", help: "r2") { -1.5 }
        let text = registry.exposition()
        #expect(text.contains("# HELP reading r2\n# TYPE reading gauge\nreading -1.5\n# HELP after_total"))
    }

    @Test("a counter function is typed counter and read at each scrape")
    func counterFunctionReadsAtScrape() {
        let registry = MetricsRegistry()
        let total = Mutex(3.0)
        registry.counterFunction("polled_total", help: "p") { total.withLock { $0 } }
        #expect(registry.exposition() == "# HELP polled_total p\n# TYPE polled_total counter\npolled_total 3\n")
        total.withLock { $0 = 8 }
        #expect(registry.exposition().hasSuffix("\npolled_total 8\n"))
    }

    @Test("negative counter increments and NaN observations are ignored")
    func ignoresValuesThatWouldCorruptAMetric() {
        let registry = MetricsRegistry()
        let counter = registry.counter("ignored_total", help: "i").labels()
        counter.increment(by: 2)
        counter.increment(by: -5)
        counter.increment(by: -0.5)
        counter.increment(by: Double.nan)
        counter.increment(by: 0.25)
        #expect(counter.value == 2.25)

        let histogram = registry.histogram("ignored_seconds", help: "i", buckets: [1]).labels()
        histogram.observe(Double.nan)
        histogram.observe(0.5)
        #expect(histogram.count == 1)
        #expect(histogram.sum == 0.5)
    }

    struct NameCase: Sendable, CustomTestStringConvertible {
        var name: String
        var metric: Bool
        var label: Bool
        var testDescription: String { name.debugDescription }
    }

    @Test(
        "validates metric and label names",
        arguments: [
            NameCase(name: "http_requests_total", metric: true, label: true),
            NameCase(name: "_private", metric: true, label: true),
            NameCase(name: "Mixed9Case", metric: true, label: true),
            NameCase(name: "job:rate5m", metric: true, label: false),
            NameCase(name: ":leading", metric: true, label: false),
            NameCase(name: "__reserved", metric: true, label: false),
            NameCase(name: "9starts_with_digit", metric: false, label: false),
            NameCase(name: "", metric: false, label: false),
            NameCase(name: "has-dash", metric: false, label: false),
            NameCase(name: "has space", metric: false, label: false),
            NameCase(name: "ünicode", metric: false, label: false),
        ]
    )
    func validatesNames(_ testCase: NameCase) {
        #expect(MetricName.isValidMetricName(testCase.name) == testCase.metric)
        #expect(MetricName.isValidLabelName(testCase.name) == testCase.label)
    }

    @Test("programming errors stop the program")
    func programmingErrorsTrap() async {
        await #expect(processExitsWith: .failure) {
            _ = MetricsRegistry().counter("wrong_count_total", help: "w", labels: ["a", "b"]).labels("only-one")
        }
        await #expect(processExitsWith: .failure) {
            let registry = MetricsRegistry()
            _ = registry.counter("clash", help: "c")
            _ = registry.gauge("clash", help: "c")
        }
        await #expect(processExitsWith: .failure) {
            let registry = MetricsRegistry()
            _ = registry.histogram("latency", help: "h", buckets: [1])
            _ = registry.counter("latency_count", help: "c")
        }
        await #expect(processExitsWith: .failure) {
            _ = MetricsRegistry().histogram("bad_le", help: "h", labels: ["le"], buckets: [1])
        }
        await #expect(processExitsWith: .failure) {
            _ = MetricsRegistry().histogram("unsorted", help: "h", buckets: [2, 1])
        }
        await #expect(processExitsWith: .failure) {
            _ = MetricsRegistry().counter("bad-name", help: "b")
        }
    }
}

// MARK: - A small reader of the text format, for round trips

extension MetricsTests {
    /// One sample line: name, labels and value.
    struct Sample: Hashable, CustomStringConvertible {
        var name: String
        var labels: [String: String]
        var value: Double

        init(_ name: String, _ labels: [String: String], _ value: Double) {
            self.name = name
            self.labels = labels
            self.value = value
        }

        var description: String { "\(name)\(labels.sorted { $0.key < $1.key }) \(value)" }
    }

    /// Reads the Prometheus text format 0.0.4 back, strictly enough to catch a wrong escape.
    enum ExpositionParser {
        struct Failure: Error, CustomStringConvertible {
            var description: String
        }

        /// Every sample line, in order.
        static func samples(_ text: String) throws -> [Sample] {
            guard text.isEmpty || text.hasSuffix("\n") else { throw Failure(description: "no final newline") }
            var samples: [Sample] = []
            for line in text.split(separator: "\n", omittingEmptySubsequences: false).dropLast() {
                if line.hasPrefix("#") { continue }
                samples.append(try sample(Array(line.unicodeScalars)))
            }
            return samples
        }

        /// The family names of the `# TYPE` lines, checking that each sample follows its family's.
        static func typedFamilies(_ text: String) throws -> [String] {
            var families: [String] = []
            for line in text.split(separator: "\n") {
                if line.hasPrefix("# TYPE ") {
                    families.append(String(line.dropFirst(7).split(separator: " ")[0]))
                } else if !line.hasPrefix("#") {
                    let name = String(line.prefix { $0 != "{" && $0 != " " })
                    guard let family = families.last, name == family || name.hasPrefix(family + "_") else {
                        throw Failure(description: "sample \(name) outside its family")
                    }
                }
            }
            return families
        }

        private static func sample(_ scalars: [Unicode.Scalar]) throws -> Sample {
            var index = 0
            func read(until stop: (Unicode.Scalar) -> Bool) -> String {
                var text = ""
                while index < scalars.count, !stop(scalars[index]) {
                    text.unicodeScalars.append(scalars[index])
                    index += 1
                }
                return text
            }
            func expect(_ scalar: Unicode.Scalar) throws {
                guard index < scalars.count, scalars[index] == scalar else {
                    throw Failure(
                        description: "expected \(scalar) at \(index) in \(String(String.UnicodeScalarView(scalars)))")
                }
                index += 1
            }

            let name = read { $0 == "{" || $0 == " " }
            var labels: [String: String] = [:]
            if index < scalars.count, scalars[index] == "{" {
                index += 1
                while index < scalars.count, scalars[index] != "}" {
                    let label = read { $0 == "=" }
                    try expect("=")
                    try expect("\"")
                    var value = ""
                    while index < scalars.count, scalars[index] != "\"" {
                        var scalar = scalars[index]
                        if scalar == "\\" {
                            index += 1
                            guard index < scalars.count else { throw Failure(description: "dangling escape") }
                            switch scalars[index] {
                            case "\\": scalar = "\\"
                            case "\"": scalar = "\""
                            case "n": scalar = "\n"
                            default: throw Failure(description: "unknown escape \\\(scalars[index])")
                            }
                        }
                        value.unicodeScalars.append(scalar)
                        index += 1
                    }
                    try expect("\"")
                    guard labels.updateValue(value, forKey: label) == nil else {
                        throw Failure(description: "duplicate label \(label)")
                    }
                    if index < scalars.count, scalars[index] == "," { index += 1 }
                }
                try expect("}")
            }
            try expect(" ")
            let text = read { _ in false }
            let value: Double
            switch text {
            case "+Inf": value = .infinity
            case "-Inf": value = -.infinity
            case "NaN": value = .nan
            default:
                guard let parsed = Double(text) else { throw Failure(description: "bad value \(text)") }
                value = parsed
            }
            return Sample(name, labels, value)
        }
    }
}
