import Tracing

/// One upstream attempt of a traced request, as a client span (the OpenTelemetry GenAI
/// conventions): begun before the call, so that the call's `traceparent` names it, and
/// recorded when the call ends (written when the request ends). The answer's model, usage and finish reasons are the
/// request's to add once it knows them. Nil for a request that is not traced: nothing is
/// allocated then.
struct AttemptSpan {
    private let recorder: TraceRecorder
    private let spanID: SpanID
    private let start: UInt64
    private let template: SpanTemplate
    private let retry: Int

    /// What every attempt of `model` on `upstream` holds: its name and the attributes that
    /// name the operation, the model and the upstream, encoded once.
    static func template(upstream: UpstreamSettings, model: String) -> SpanTemplate {
        let server = AttemptSpan.server(upstream.baseURL)
        var attributes = SpanAttributes()
        attributes.append("gen_ai.operation.name", "chat")
        attributes.append("gen_ai.system", "openai")
        attributes.append("gen_ai.request.model", model)
        if let host = server.host { attributes.append("server.address", host) }
        if let port = server.port { attributes.append("server.port", Int64(port)) }
        attributes.append("textgateway.upstream", upstream.name)
        return SpanTemplate(name: name(model: model), attributes: attributes)
    }

    init?(member: UpstreamPool.Member, model: String, retry: Int) {
        guard let recorder = CurrentTrace.recorder else { return nil }
        self.recorder = recorder
        spanID = recorder.beginAttempt()
        start = WallClock.nanoseconds()
        template = member.span(model)
        self.retry = retry
    }

    /// An attempt's span name: the GenAI conventions' `{operation} {model}`.
    static func name(model: String) -> String {
        "chat " + model
    }

    /// Records the attempt, to be written as a span when the request ends: `error` is the
    /// failure's kind (``UpstreamFailure/label``), nil when the attempt answered.
    func end(error: String?) {
        recorder.record(
            TraceRecorder.Attempt(
                spanID: spanID, start: start, end: WallClock.nanoseconds(), template: template, retry: retry,
                error: error))
    }

    /// The host and port of an `http(s)://host[:port]/…` URL.
    static func server(_ url: String) -> (host: String?, port: Int?) {
        guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") else { return (nil, nil) }
        let secure = url[..<colon].lowercased() == "https"
        let rest = url[url.index(colon, offsetBy: 3)...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let hostPort = authority.split(separator: "@").last ?? authority
        if hostPort.hasPrefix("["), let close = hostPort.firstIndex(of: "]") {
            let host = String(hostPort[hostPort.index(after: hostPort.startIndex)..<close])
            let after = hostPort[hostPort.index(after: close)...]
            return (host, after.hasPrefix(":") ? Int(after.dropFirst()) : (secure ? 443 : 80))
        }
        let parts = hostPort.split(separator: ":", maxSplits: 1)
        guard let host = parts.first else { return (nil, nil) }
        return (String(host), parts.count > 1 ? Int(parts[1]) : (secure ? 443 : 80))
    }
}
