/// A gauge or counter without labels whose value is read from a closure at each scrape.
final class FunctionMetric: MetricFamily {
    let name: String
    let help: String
    let kind: MetricKind
    private let read: @Sendable () -> Double

    init(name: String, help: String, kind: MetricKind, read: @escaping @Sendable () -> Double) {
        self.name = name
        self.help = help
        self.kind = kind
        self.read = read
    }

    var sampleNames: [String] { [name] }

    func writeSamples(into text: inout String) {
        ExpositionFormat.appendSample(to: &text, name: name, labels: "", value: ExpositionFormat.value(read()))
    }
}
