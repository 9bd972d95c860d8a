import Telemetry

/// The children a finished request touches, looked up without a lock: one slot per route
/// and status, per route, and per task, model and direction known at start. A child
/// appears in `/metrics` only once it was used, as with a lookup by label values.
final class RequestMetricSlots: Sendable {
    static let statuses = 100..<600
    private let statusSlots: [ChildSlot<Counter>]
    private let routeSlots: [ChildSlot<Histogram>]
    private let tokenSlots: [String: ChildSlot<Counter>]

    init(tokenKeys: [(task: String, model: String)]) {
        let routes = RouteLabel.allCases.count
        statusSlots = (0..<(routes * Self.statuses.count)).map { _ in ChildSlot() }
        routeSlots = (0..<(routes * 2)).map { _ in ChildSlot() }
        var tokens: [String: ChildSlot<Counter>] = [:]
        for key in tokenKeys {
            for direction in ["input", "output"] { tokens[Self.tokenKey(key.task, key.model, direction)] = ChildSlot() }
        }
        tokenSlots = tokens
    }

    func requests(_ family: CounterFamily, route: RouteLabel, status: Int) -> Counter {
        guard Self.statuses.contains(status) else { return family.labels(route.rawValue, String(status)) }
        return statusSlots[route.index * Self.statuses.count + status - Self.statuses.lowerBound].child {
            family.labels(route.rawValue, String(status))
        }
    }

    /// `upstream` false: the request duration; true: the upstream duration.
    func duration(_ family: HistogramFamily, route: RouteLabel, upstream: Bool) -> Histogram {
        routeSlots[route.index * 2 + (upstream ? 1 : 0)].child { family.labels(route.rawValue) }
    }

    func tokens(_ family: CounterFamily, task: String, model: String, direction: String) -> Counter {
        guard let slot = tokenSlots[Self.tokenKey(task, model, direction)] else {
            return family.labels(task, model, direction)
        }
        return slot.child { family.labels(task, model, direction) }
    }

    private static func tokenKey(_ task: String, _ model: String, _ direction: String) -> String {
        task + "\u{0}" + model + "\u{0}" + direction
    }
}
