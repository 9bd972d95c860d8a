#if canImport(Glibc)
    import Glibc
#endif

/// A finished span, as the exporter sends it: written once the work it stands for ended, from
/// what the request's steps reported, never while the request runs.
package struct SpanRecord: Sendable {
    package enum Kind: Int, Sendable {
        case `internal` = 1
        case server = 2
        case client = 3
    }

    package enum Status: Sendable, Equatable {
        case unset
        case ok
        /// An error, with a short description that holds no user text.
        case error(String)
    }

    package var traceID: TraceID
    package var spanID: SpanID
    package var parentSpanID: SpanID?
    /// Whether the parent came from another process (a caller's `traceparent`).
    package var parentIsRemote = false
    package var traceState = ""
    package var name: String
    package var kind: Kind
    /// Nanoseconds since the Unix epoch.
    package var startNanoseconds: UInt64
    package var endNanoseconds: UInt64
    package var attributes = SpanAttributes()
    package var events: [SpanEvent] = []
    package var links: [SpanLink] = []
    package var status: Status = .unset

    package init(
        traceID: TraceID, spanID: SpanID, parentSpanID: SpanID?, name: String, kind: Kind, startNanoseconds: UInt64,
        endNanoseconds: UInt64
    ) {
        self.traceID = traceID
        self.spanID = spanID
        self.parentSpanID = parentSpanID
        self.name = name
        self.kind = kind
        self.startNanoseconds = startNanoseconds
        self.endNanoseconds = max(startNanoseconds, endNanoseconds)
    }

    package mutating func set(_ key: StaticString, _ value: SpanAttribute.Value) {
        attributes.append(key, value)
    }

    package mutating func set(_ key: StaticString, _ value: String?) {
        if let value { attributes.append(key, value) }
    }

    package mutating func set(_ key: StaticString, _ value: Int?) {
        if let value { attributes.append(key, Int64(value)) }
    }
}

package struct SpanAttribute: Sendable, Equatable {
    package enum Value: Sendable, Equatable {
        case string(String)
        case int(Int64)
        case double(Double)
        case bool(Bool)
        case strings([String])
    }

    package let key: String
    package let value: Value

    package init(_ key: String, _ value: Value) {
        self.key = key
        self.value = value
    }
}

package struct SpanEvent: Sendable, Equatable {
    package var name: String
    package var timeNanoseconds: UInt64
    package var attributes: SpanAttributes

    package init(name: String, timeNanoseconds: UInt64, attributes: SpanAttributes = []) {
        self.name = name
        self.timeNanoseconds = timeNanoseconds
        self.attributes = attributes
    }
}

/// A span of another trace (or another part of this one) this span relates to: a job's chunk
/// and the request that made the job.
package struct SpanLink: Sendable, Equatable {
    package var traceID: TraceID
    package var spanID: SpanID
    /// Whether the linked span's trace was sampled (its W3C flag).
    package var sampled: Bool
    package var attributes: SpanAttributes

    package init(traceID: TraceID, spanID: SpanID, sampled: Bool = true, attributes: SpanAttributes = []) {
        self.traceID = traceID
        self.spanID = spanID
        self.sampled = sampled
        self.attributes = attributes
    }
}

/// The wall clock spans are dated by: nanoseconds since the Unix epoch.
package enum WallClock {
    package static func nanoseconds() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
    }
}
