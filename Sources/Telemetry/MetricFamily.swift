/// What the registry needs from every registered family: its identity, for checking a
/// second registration and name clashes, and its samples, for `/metrics`.
protocol MetricFamily: AnyObject, Sendable {
    /// The metric name on the `# HELP` and `# TYPE` lines.
    var name: String { get }
    /// The help text, unescaped.
    var help: String { get }
    var kind: MetricKind { get }
    /// Every sample name this family writes (a histogram writes three); no two families may share one.
    var sampleNames: [String] { get }
    /// Appends the sample lines (not `# HELP` / `# TYPE`), each ending in a newline.
    func writeSamples(into text: inout String)
}
