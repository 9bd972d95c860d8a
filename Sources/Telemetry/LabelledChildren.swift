import Synchronization

/// The children of one family, one per distinct tuple of label values, bounded: once
/// `limit` tuples exist, any new tuple folds into one overflow child whose label values are
/// all `"_other"`, so no caller (say, one labelling by a client-supplied value) can grow
/// memory without bound.
final class LabelledChildren<Child: AnyObject & Sendable>: Sendable {
    /// The label value of the overflow child.
    static var overflowValue: String { "_other" }

    let metricName: String
    let labelNames: [String]
    private let limit: Int
    private let make: @Sendable (_ values: [String], _ renderedLabels: String) -> Child
    private let children: Mutex<[[String]: Child]>

    /// - Parameters:
    ///   - limit: the number of distinct label tuples kept before folding into the overflow child.
    ///   - make: makes a child from its label values and its rendered `a="x",b="y"` pairs.
    init(
        metricName: String,
        labelNames: [String],
        limit: Int,
        make: @escaping @Sendable (_ values: [String], _ renderedLabels: String) -> Child
    ) {
        precondition(limit >= 1, "metric \(metricName): the child limit must be at least 1")
        self.metricName = metricName
        self.labelNames = labelNames
        self.limit = limit
        self.make = make
        var initial: [[String]: Child] = [:]
        if labelNames.isEmpty {
            // A family without labels has exactly one child, shown (as 0) from the start.
            initial[[]] = make([], "")
        }
        self.children = Mutex(initial)
    }

    /// The child for `values`, made on first use; the overflow child once the limit is reached.
    func child(_ values: [String]) -> Child {
        precondition(
            values.count == labelNames.count,
            "metric \(metricName): \(values.count) label values for \(labelNames.count) label names"
        )
        return children.withLock { children in
            if let existing = children[values] { return existing }
            let key = children.count < limit ? values : Array(repeating: Self.overflowValue, count: labelNames.count)
            if let overflow = children[key] { return overflow }
            let child = make(key, ExpositionFormat.labelPairs(names: labelNames, values: key))
            children[key] = child
            return child
        }
    }

    /// All children, sorted by their label values.
    func sorted() -> [Child] {
        let entries = children.withLock { children in Array(children) }
        return entries.sorted { $0.key.lexicographicallyPrecedes($1.key) }.map(\.value)
    }

    /// How many children exist now.
    var count: Int {
        children.withLock { $0.count }
    }
}
