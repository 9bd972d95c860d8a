/// Which traces are recorded (`OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`), decided once
/// at a trace's root in this process: the OpenTelemetry SDK's samplers.
package enum Sampler: Sendable, Equatable {
    case alwaysOn
    case alwaysOff
    /// A share of traces, decided by the trace id alone, so every process that uses the same
    /// ratio keeps the same traces.
    case ratio(Double)
    /// The caller's `sampled` flag where a `traceparent` came, else `root`.
    indirect case parentBased(root: Sampler)

    /// Whether a span of `traceID` is recorded, its parent's flag being `parentSampled` (nil
    /// at a root).
    package func shouldSample(_ traceID: TraceID, parentSampled: Bool?) -> Bool {
        switch self {
        case .alwaysOn: return true
        case .alwaysOff: return false
        case .ratio(let ratio):
            // The trace id's last 56 bits, which W3C asks to be random, against the share.
            guard ratio < 1 else { return true }
            guard ratio > 0 else { return false }
            let bound = UInt64(ratio * Double(1 << 56))
            return traceID.low & ((1 << 56) - 1) < bound
        case .parentBased(let root):
            if let parentSampled { return parentSampled }
            return root.shouldSample(traceID, parentSampled: nil)
        }
    }

    /// `OTEL_TRACES_SAMPLER` and its argument; nil for a name the SDK does not define, or a
    /// ratio outside 0…1. The argument defaults to 1.0 (the specification's default).
    package init?(name: String, argument: String?) {
        func ratio() -> Double? {
            guard let argument, !argument.isEmpty else { return 1 }
            guard let value = Double(argument), value >= 0, value <= 1 else { return nil }
            return value
        }
        switch name {
        case "always_on": self = .alwaysOn
        case "always_off": self = .alwaysOff
        case "traceidratio":
            guard let value = ratio() else { return nil }
            self = .ratio(value)
        case "parentbased_always_on": self = .parentBased(root: .alwaysOn)
        case "parentbased_always_off": self = .parentBased(root: .alwaysOff)
        case "parentbased_traceidratio":
            guard let value = ratio() else { return nil }
            self = .parentBased(root: .ratio(value))
        default: return nil
        }
    }
}
