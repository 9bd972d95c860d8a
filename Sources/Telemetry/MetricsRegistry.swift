import Synchronization

/// The process's metrics, exposed to Prometheus in the text format 0.0.4.
///
/// Made once at start and shared. Register each metric once, at start, and keep the family
/// it returns; registering a name again returns the same family when its type, labels (and
/// buckets) match, and stops the program otherwise, as do invalid names and a wrong number
/// of label values: those are programming errors. On the hot path look a labelled child up
/// once and keep it when its labels are fixed; its updates are lock-free (a histogram's
/// take one brief lock).
package final class MetricsRegistry: Sendable {
    /// The `Content-Type` of `exposition()`.
    package static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// Histogram buckets for request latencies, in seconds: 0.5 ms to 2 minutes.
    package static let latencyBuckets: [Double] = [
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120,
    ]

    private struct State {
        /// In registration order.
        var families: [any MetricFamily] = []
        /// Family name to index in `families`.
        var indexByName: [String: Int] = [:]
        /// Every sample name in use, to the family name that writes it.
        var sampleOwners: [String: String] = [:]
    }

    private let state = Mutex(State())
    private let childLimit: Int

    /// - Parameter maxChildrenPerFamily: the number of distinct label-value tuples each
    ///   family keeps; beyond it, new tuples are counted together in one child whose label
    ///   values are all `"_other"`.
    package init(maxChildrenPerFamily: Int = 10_000) {
        precondition(maxChildrenPerFamily >= 1, "maxChildrenPerFamily must be at least 1")
        self.childLimit = maxChildrenPerFamily
    }

    /// Registers (or returns the already registered) counter `name`.
    package func counter(_ name: String, help: String, labels: [String] = []) -> CounterFamily {
        register(name) {
            MetricName.validate(name, labels: labels)
            return CounterFamily(name: name, help: help, labelNames: labels, childLimit: childLimit)
        } matches: { (existing: CounterFamily) in
            existing.labelNames == labels
        }
    }

    /// Registers (or returns the already registered) gauge `name`.
    package func gauge(_ name: String, help: String, labels: [String] = []) -> GaugeFamily {
        register(name) {
            MetricName.validate(name, labels: labels)
            return GaugeFamily(name: name, help: help, labelNames: labels, childLimit: childLimit)
        } matches: { (existing: GaugeFamily) in
            existing.labelNames == labels
        }
    }

    /// Registers (or returns the already registered) histogram `name`, with the finite upper
    /// bounds `buckets` in increasing order (`+Inf` is always added).
    package func histogram(
        _ name: String,
        help: String,
        labels: [String] = [],
        buckets: [Double] = MetricsRegistry.latencyBuckets
    ) -> HistogramFamily {
        register(name) {
            MetricName.validate(name, labels: labels, reserved: ["le"])
            return HistogramFamily(name: name, help: help, labelNames: labels, buckets: buckets, childLimit: childLimit)
        } matches: { (existing: HistogramFamily) in
            existing.labelNames == labels && existing.hasBuckets(buckets)
        }
    }

    /// Registers a gauge without labels whose value `read` returns at each scrape (for
    /// example, open connections). `read` runs on the scraping thread, outside any
    /// registry lock, and must be quick. Registering the same name again replaces `read`
    /// (so a server restarted in the same process reports its own value), keeping the
    /// gauge's place in the output.
    package func gaugeFunction(_ name: String, help: String, _ read: @escaping @Sendable () -> Double) {
        registerFunction(name, help: help, kind: .gauge, read)
    }

    /// Registers a counter without labels whose running total `read` returns at each scrape
    /// (a total kept elsewhere, such as the event loops' polling), as ``gaugeFunction(_:help:_:)``
    /// does for a gauge. The name ends in `_total`.
    package func counterFunction(_ name: String, help: String, _ read: @escaping @Sendable () -> Double) {
        precondition(name.hasSuffix("_total"), "counter \(name) must end in _total")
        registerFunction(name, help: help, kind: .counter, read)
    }

    private func registerFunction(
        _ name: String, help: String, kind: MetricKind, _ read: @escaping @Sendable () -> Double
    ) {
        MetricName.validate(name, labels: [])
        let family = FunctionMetric(name: name, help: help, kind: kind, read: read)
        state.withLock { state in
            if let index = state.indexByName[name] {
                precondition(
                    (state.families[index] as? FunctionMetric)?.kind == kind,
                    "metric \(name) is already registered as another kind of metric"
                )
                state.families[index] = family
            } else {
                Self.add(family, to: &state)
            }
        }
    }

    /// Every family in registration order, each as `# HELP`, `# TYPE` and its samples,
    /// children sorted by their label values.
    package func exposition() -> String {
        // Gauge functions run user code: read the list under the lock, render outside it.
        let families = state.withLock { $0.families }
        var text = ""
        for family in families {
            text += "# HELP "
            text += family.name
            text += " "
            text += ExpositionFormat.escapeHelp(family.help)
            text += "\n# TYPE "
            text += family.name
            text += " "
            text += family.kind.rawValue
            text += "\n"
            family.writeSamples(into: &text)
        }
        return text
    }

    private func register<Family: MetricFamily>(
        _ name: String,
        make: () -> Family,
        matches: (Family) -> Bool
    ) -> Family {
        state.withLock { state in
            if let index = state.indexByName[name] {
                guard let existing = state.families[index] as? Family, matches(existing) else {
                    preconditionFailure("metric \(name) is already registered with another type, labels or buckets")
                }
                return existing
            }
            let family = make()
            Self.add(family, to: &state)
            return family
        }
    }

    private static func add(_ family: any MetricFamily, to state: inout State) {
        for sample in family.sampleNames {
            if let owner = state.sampleOwners[sample] {
                preconditionFailure("metric \(family.name) writes \(sample), which metric \(owner) already writes")
            }
        }
        for sample in family.sampleNames {
            state.sampleOwners[sample] = family.name
        }
        state.indexByName[family.name] = state.families.count
        state.families.append(family)
    }
}
