/// A gauge without labels whose value is read from a closure at each scrape.
final class GaugeFunction: MetricFamily {
    let name: String
    let help: String
    private let read: @Sendable () -> Double

    init(name: String, help: String, read: @escaping @Sendable () -> Double) {
        self.name = name
        self.help = help
        self.read = read
    }

    var kind: MetricKind { .gauge }
    var sampleNames: [String] { [name] }

    func writeSamples(into text: inout String) {
        ExpositionFormat.appendSample(to: &text, name: name, labels: "", value: ExpositionFormat.value(read()))
    }
}
