import Testing

@testable import Tracing

@Suite("OTLP encoding, read back by opentelemetry-proto")
struct OTLPEncodingTests {
    static let traceA = TraceID(high: 0x4bf9_2f35_77b3_4da6, low: 0xa3ce_929d_0e0e_4736)
    static let traceB = TraceID(high: 0x0000_0000_0000_0001, low: 0xffff_ffff_ffff_fffe)
    // Times above 2^53: a reader that went through a double would lose the last digits.
    static let start: UInt64 = 1_700_000_000_123_456_789
    static let end: UInt64 = 1_700_000_001_987_654_321

    /// A server root span with every attribute kind, an event and `ok`; a client child with an
    /// error and a link; an internal span under a remote parent with no status; an error with
    /// no description.
    static func spans() -> [SpanRecord] {
        var root = SpanRecord(
            traceID: traceA, spanID: SpanID(0x00f0_67aa_0ba9_02b7), parentSpanID: nil, name: "POST /v1/process",
            kind: .server, startNanoseconds: start, endNanoseconds: end)
        root.traceState = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
        root.attributes = [
            SpanAttribute("text.persian", .string("سلام دنیا، متن فارسی")),
            SpanAttribute("text.empty", .string("")),
            SpanAttribute("count.positive", .int(1_234_567_890_123)),
            SpanAttribute("count.negative", .int(-42)),
            SpanAttribute("count.zero", .int(0)),
            SpanAttribute("count.min", .int(.min)),
            SpanAttribute("ratio", .double(3.25)),
            SpanAttribute("ratio.negative", .double(-0.001)),
            SpanAttribute("flag.true", .bool(true)),
            SpanAttribute("flag.false", .bool(false)),
            SpanAttribute("names", .strings(["a", "ب", ""])),
            SpanAttribute("names.none", .strings([])),
        ]
        root.set("http.status_code", 200)
        root.set("absent", nil as String?)
        root.events = [
            SpanEvent(
                name: "first_token", timeNanoseconds: start + 5_000_000,
                attributes: [SpanAttribute("tokens", .int(3)), SpanAttribute("cached", .bool(false))]),
            SpanEvent(name: "bare", timeNanoseconds: start + 6_000_000),
        ]
        root.status = .ok

        var child = SpanRecord(
            traceID: traceA, spanID: SpanID(0xffff_ffff_ffff_ffff), parentSpanID: root.spanID, name: "upstream",
            kind: .client, startNanoseconds: start + 1, endNanoseconds: end - 1)
        child.links = [
            SpanLink(
                traceID: traceB, spanID: SpanID(1), attributes: [SpanAttribute("job.id", .string("job-7"))])
        ]
        child.status = .error("upstream answered 503")

        var remote = SpanRecord(
            traceID: traceB, spanID: SpanID(0x0102_0304_0506_0708), parentSpanID: SpanID(0x1112_1314_1516_1718),
            name: "گام", kind: .internal, startNanoseconds: start, endNanoseconds: start)
        remote.parentIsRemote = true

        var failed = SpanRecord(
            traceID: traceB, spanID: SpanID(0x2000), parentSpanID: nil, name: "failed", kind: .internal,
            startNanoseconds: start, endNanoseconds: end)
        failed.status = .error("")
        return [root, child, remote, failed]
    }

    @Test("every field of every span, the resource and the scope read back as written")
    func readsBackEveryField() throws {
        let spans = Self.spans()
        let resource = [
            SpanAttribute("service.name", .string("text-gateway")),
            SpanAttribute("deployment.environment", .string("محلی")),
            SpanAttribute("service.instance.count", .int(3)),
        ]
        let body = OTLPEncoding.exportRequest(
            resource: SpanAttributes(resource), scope: (name: "text-gateway", version: "1.2.3"), spans: spans)
        let decoded = try OTLPPython.decodeRequest(body)
        #expect(decoded.canonical, "the bytes are exactly what the protobuf runtime writes for the message")

        let resourceSpans = try #require(decoded.request.resourceSpans.first)
        #expect(decoded.request.resourceSpans.count == 1)
        #expect(attributes(resourceSpans.resource?.attributes) == resource)
        let scopeSpans = try #require(resourceSpans.scopeSpans?.first)
        #expect(resourceSpans.scopeSpans?.count == 1)
        #expect(scopeSpans.scope?.name == "text-gateway")
        #expect(scopeSpans.scope?.version == "1.2.3")

        let read = decoded.request.spans
        try #require(read.count == spans.count)

        let root = read[0]
        #expect(root.traceId == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(root.spanId == "00f067aa0ba902b7")
        #expect(root.parentSpanId == nil)
        #expect(root.traceState == "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")
        #expect(root.name == "POST /v1/process")
        #expect(root.kind == 2)
        #expect(root.startTimeUnixNano == "1700000000123456789")
        #expect(root.endTimeUnixNano == "1700000001987654321")
        #expect(attributes(root.attributes) == spans[0].attributes.list)
        #expect(spans[0].attributes.count == 13, "the nil attribute is not set")
        #expect(root.events?.count == 2)
        #expect(root.events?.first?.name == "first_token")
        #expect(root.events?.first?.timeUnixNano == "1700000000128456789")
        #expect(attributes(root.events?.first?.attributes) == spans[0].events[0].attributes.list)
        #expect(root.events?.last?.name == "bare")
        #expect(root.events?.last?.attributes == nil)
        #expect(root.links == nil)
        #expect(root.status?.code == 1)
        #expect(root.status?.message == nil)
        #expect(root.flags == 0x101, "sampled, parent known not remote")

        let child = read[1]
        #expect(child.traceId == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(child.spanId == "ffffffffffffffff")
        #expect(child.parentSpanId == "00f067aa0ba902b7")
        #expect(child.traceState == nil)
        #expect(child.kind == 3)
        #expect(child.startTimeUnixNano == "1700000000123456790")
        #expect(child.endTimeUnixNano == "1700000001987654320")
        #expect(child.attributes == nil)
        #expect(child.events == nil)
        let link = try #require(child.links?.first)
        #expect(child.links?.count == 1)
        #expect(link.traceId == "0000000000000001fffffffffffffffe")
        #expect(link.spanId == "0000000000000001")
        #expect(link.traceState == nil)
        #expect(attributes(link.attributes) == [SpanAttribute("job.id", .string("job-7"))])
        #expect(link.flags == 0x101)
        #expect(child.status?.code == 2)
        #expect(child.status?.message == "upstream answered 503")
        #expect(child.flags == 0x101)

        let remote = read[2]
        #expect(remote.traceId == "0000000000000001fffffffffffffffe")
        #expect(remote.spanId == "0102030405060708")
        #expect(remote.parentSpanId == "1112131415161718")
        #expect(remote.name == "گام")
        #expect(remote.kind == 1)
        #expect(remote.startTimeUnixNano == remote.endTimeUnixNano)
        #expect(remote.status == nil, "unset is not written")
        #expect(remote.flags == 0x301, "sampled, parent known to be remote")

        let failed = read[3]
        #expect(failed.spanId == "0000000000002000")
        #expect(failed.status?.code == 2)
        #expect(failed.status?.message == nil)

        // No field beyond those above (a dropped_*_count, say) is written.
        #expect(
            decoded.spanKeys[0] == [
                "attributes", "end_time_unix_nano", "events", "flags", "kind", "name", "span_id",
                "start_time_unix_nano", "status", "trace_id", "trace_state",
            ])
        #expect(
            decoded.spanKeys[1] == [
                "end_time_unix_nano", "flags", "kind", "links", "name", "parent_span_id", "span_id",
                "start_time_unix_nano", "status", "trace_id",
            ])
        #expect(
            decoded.spanKeys[2] == [
                "end_time_unix_nano", "flags", "kind", "name", "parent_span_id", "span_id", "start_time_unix_nano",
                "trace_id",
            ])
    }

    @Test("an empty batch and an empty resource still make a request the package reads")
    func emptyBatch() throws {
        let body = OTLPEncoding.exportRequest(resource: [], scope: (name: "text-gateway", version: ""), spans: [])
        let decoded = try OTLPPython.decodeRequest(body)
        #expect(decoded.canonical)
        #expect(decoded.request.resourceSpans.count == 1)
        #expect(decoded.request.spans.isEmpty)
        #expect(decoded.request.resourceSpans.first?.scopeSpans?.first?.scope?.name == "text-gateway")
        #expect(decoded.request.resourceSpans.first?.scopeSpans?.first?.scope?.version == nil)
    }

    @Test("a span's end before its start is taken as its start")
    func endNotBeforeStart() {
        let span = SpanRecord(
            traceID: Self.traceA, spanID: SpanID(1), parentSpanID: nil, name: "x", kind: .internal,
            startNanoseconds: 10, endNanoseconds: 5)
        #expect(span.endNanoseconds == 10)
    }

    @Test("attributes are kept as their bytes and read back as they were set, in order")
    func attributesReadBack() {
        let list = Self.spans()[0].attributes.list
        #expect(list.count == 13)
        #expect(list.first == SpanAttribute("text.persian", .string("سلام دنیا، متن فارسی")))
        #expect(list.last == SpanAttribute("http.status_code", .int(200)))
        #expect(SpanAttributes(list) == Self.spans()[0].attributes)
        #expect(SpanAttributes(list).list == list)
        var grown = SpanAttributes()
        #expect(grown.isEmpty)
        grown.append("a", .int(1))
        #expect(grown.list == [SpanAttribute("a", .int(1))])
        #expect(grown.count == 1)
        // A value: a copy written to leaves the original as it was, past any first capacity.
        var copy = grown
        for number in 0..<100 { copy.append("n", .int(Int64(number))) }
        #expect(grown.list == [SpanAttribute("a", .int(1))])
        #expect(copy.count == 101)
        #expect(copy.list.last == SpanAttribute("n", .int(99)))
        #expect(copy != grown)
    }

    @Test("our own reader of the request agrees with the package on the spans' names")
    func ownReaderCountsSpans() throws {
        let body = OTLPEncoding.exportRequest(
            resource: [SpanAttribute("service.name", .string("s"))], scope: (name: "text-gateway", version: "1"),
            spans: Self.spans())
        #expect(otlpSpanNames(body) == ["POST /v1/process", "upstream", "گام", "failed"])
        #expect(try OTLPPython.decodeRequest(body).request.spans.compactMap(\.name) == otlpSpanNames(body))
    }

    // MARK: ExportTraceServiceResponse

    @Test("rejected spans: 0 for an empty body, the count the package writes, and through unknown fields")
    func rejectedSpans() throws {
        #expect(OTLPEncoding.rejectedSpans(inResponse: []) == 0)
        let seven = try OTLPPython.partialSuccessResponse(rejected: 7)
        #expect(OTLPEncoding.rejectedSpans(inResponse: seven) == 7)
        let large = try OTLPPython.partialSuccessResponse(rejected: 300_000)
        #expect(OTLPEncoding.rejectedSpans(inResponse: large) == 300_000)
        // By hand: an unknown field of each wire type before partial_success, and the error
        // message before rejected_spans inside it.
        let unknownFirst: [UInt8] =
            [0x10, 0x96, 0x01] // field 2, varint
            + [0x19] + [UInt8](repeating: 0xAA, count: 8) // field 3, fixed64
            + [0x25, 1, 2, 3, 4] // field 4, fixed32
            + [0x2A, 0x02, 0x68, 0x69] // field 5, bytes
            + [0x0A, 0x05, 0x12, 0x01, 0x78, 0x08, 0x07] // partial_success { error_message "x", rejected 7 }
        #expect(OTLPEncoding.rejectedSpans(inResponse: unknownFirst) == 7)
        // partial_success present but rejected_spans 0 (not written): nothing rejected.
        #expect(OTLPEncoding.rejectedSpans(inResponse: [0x0A, 0x03, 0x12, 0x01, 0x78]) == 0)
    }

    @Test(
        "a response that does not read is 0, without a crash",
        arguments: [
            [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], // a varint that never ends
            [0x0A, 0x7F, 0x08, 0x07], // partial_success longer than the body
            [0x0A], // a tag and nothing after
            [0x0B, 0x08, 0x07, 0x0C], // a group (wire type 3)
            [0x00, 0x08, 0x07], // field number 0
            [0x19, 0x01, 0x02], // a cut fixed64
            Array("{\"partialSuccess\":{\"rejectedSpans\":\"7\"}}".utf8), // JSON, not protobuf
            Array("<html>bad gateway</html>".utf8),
        ] as [[UInt8]])
    func garbageIsZero(body: [UInt8]) {
        #expect(OTLPEncoding.rejectedSpans(inResponse: body) == 0)
    }

    @Test("random bytes never crash the reader")
    func randomBytes() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<2000 {
            let body = (0..<(length % 64)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = OTLPEncoding.rejectedSpans(inResponse: body)
        }
    }
}
