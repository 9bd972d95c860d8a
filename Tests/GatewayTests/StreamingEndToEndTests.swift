import ChatAPI
import EventLoop
import Gateway
import HTTPClient
import JSON
import TestSupport
import Testing

/// The events of one streamed answer, and the comment lines (heartbeats) seen.
struct StreamedAnswer {
    var status = 0
    var contentType: String?
    var events: [ServerSentEvent] = []
    var comments = 0

    func data(_ index: Int) throws -> [String: JSONScalar] {
        try JSON.decode([String: JSONScalar].self, from: Array(events[index].data.utf8))
    }
}

extension GatewayHarness {
    /// POSTs a streaming /api/process request and reads the whole event stream.
    func streamProcess(_ text: String, task: String = "summarize", accept: String? = nil, streamFlag: Bool = true)
        async throws -> StreamedAnswer
    {
        var body = "{\"task\":\(jsonString(task)),\"text\":\(jsonString(text))"
        if streamFlag { body += ",\"stream\":true" }
        body += "}"
        var headers: [(name: String, value: String)] = [("Content-Type", "application/json")]
        if let accept { headers.append(("Accept", accept)) }
        let response = try await client.stream(
            HTTPClientRequest(method: "POST", url: base + "/api/process", headers: headers, body: Array(body.utf8)))
        var answer = StreamedAnswer(status: response.status, contentType: response.head.header("Content-Type"))
        var reader = ServerSentEventReader()
        var raw: [UInt8] = []
        for try await chunk in response.body {
            raw += chunk
            answer.events += try reader.feed(chunk)
        }
        answer.events += reader.finish()
        answer.comments = reader.commentCount
        _ = raw
        return answer
    }
}

@Suite("Streaming /api/process end to end", .serialized)
struct StreamingEndToEndTests {
    static let sample = ProcessEndToEndTests.sample

    @Test("streams start, deltas with the growing text, and one done with the full result and usage")
    func lifecycle() async throws {
        try await GatewayHarness.with { harness in
            let answer = try await harness.streamProcess(Self.sample + " [mock:deltas=12]")
            #expect(answer.status == 200)
            #expect(answer.contentType == "text/event-stream; charset=utf-8")
            let names = answer.events.map { $0.event ?? "message" }
            #expect(names.first == "start")
            #expect(names.last == "done")
            #expect(names.filter { $0 == "done" || $0 == "error" }.count == 1)
            #expect(names.filter { $0 == "delta" }.count >= 10)
            let start = try answer.data(0)
            guard case .string(let id) = start["requestId"] else {
                Issue.record("no request id")
                return
            }
            var joined = ""
            var previous = ""
            for (index, event) in answer.events.enumerated() where event.event == "delta" {
                let data = try answer.data(index)
                guard case .string(let delta) = data["delta"], case .string(let text) = data["text"] else { continue }
                joined += delta
                #expect(text == joined)
                #expect(text.hasPrefix(previous) && text.count > previous.count)
                previous = text
                #expect(data["requestId"] == .string(id))
            }
            let done = try answer.data(answer.events.count - 1)
            #expect(done["result"] == .string(joined))
            guard case .object(let usage) = done["usage"], case .number(let total) = usage["totalTokens"] else {
                Issue.record("done has no usage")
                return
            }
            #expect(total > 0)
            #expect(joined == "این یک پاسخ آزمایشی از سرویس شبیه‌سازی‌شده است که برای آزمون دروازه ساخته شده است.")
            let lines = harness.logs.lines.filter { $0.contains(id) && $0.contains(" request ") }
            #expect(lines.count == 1)
            #expect(lines.first?.contains("outcome=done") == true && lines.first?.contains("output_tokens=") == true)
            let sent = try #require(harness.lastUpstreamRequest)
            #expect(sent.stream == true && sent.streamOptions?.includeUsage == true)
        }
    }

    @Test("streams when Accept asks for text/event-stream, and answers validation errors as JSON first")
    func acceptHeaderAndValidation() async throws {
        try await GatewayHarness.with { harness in
            let answer = try await harness.streamProcess(Self.sample, accept: "text/event-stream", streamFlag: false)
            #expect(answer.events.last?.event == "done")
            let invalid = try await harness.client.send(
                HTTPClientRequest(
                    method: "POST", url: harness.base + "/api/process",
                    headers: [("Content-Type", "application/json"), ("Accept", "text/event-stream")],
                    body: Array(#"{"task":"summarize","text":"short","stream":true}"#.utf8)))
            #expect(invalid.status == 400)
            #expect(try Body(invalid).code == "text_too_short")
        }
    }

    @Test("sends heartbeats on a slow stream")
    func heartbeat() async throws {
        try await GatewayHarness.with(configure: { $0.heartbeatInterval = .milliseconds(100) }) { harness in
            let answer = try await harness.streamProcess(Self.sample + " [mock:deltas=3,delta-delay-ms=400]")
            #expect(answer.comments >= 3)
            #expect(answer.events.last?.event == "done")
        }
    }

    @Test(
        "ends with one error event when the upstream fails, stops or stalls",
        arguments: [
            ("[mock:stream-error-after=2]", "upstream_error", 502),
            ("[mock:cut-stream=clean]", "upstream_error", 502),
            ("[mock:cut-stream=abort]", "upstream_error", 502),
            ("[mock:deltas=4,delta-delay-ms=1500]", "upstream_timeout", 504),
            ("[mock:body=no-content]", "empty_result", 502),
        ] as [(String, String, Int)]
    )
    func failures(directive: String, code: String, status: Int) async throws {
        try await GatewayHarness.with(configure: {
            $0.streamFirstTokenTimeout = .milliseconds(500)
            $0.streamIdleTimeout = .milliseconds(500)
        }) { harness in
            let answer = try await harness.streamProcess(Self.sample + " " + directive)
            #expect(answer.status == 200)
            #expect(answer.events.first?.event == "start")
            let terminal = answer.events.filter { $0.event == "done" || $0.event == "error" }
            #expect(terminal.count == 1)
            #expect(answer.events.last?.event == "error")
            let data = try answer.data(answer.events.count - 1)
            #expect(data["code"] == .string(code))
            #expect(data["status"] == .number(Double(status)))
            #expect(data["error"] == .bool(true))
            #expect(!answer.events.last!.data.contains("mock"))
        }
    }

    @Test(
        "a failure before the upstream's answer begins is the ordinary JSON error with its status, not a stream",
        arguments: [
            ("[mock:status=503,retry-after=7]", "upstream_busy", 503),
            ("[mock:latency-ms=3000]", "upstream_timeout", 504),
            ("[mock:status=500]", "upstream_error", 502),
        ] as [(String, String, Int)]
    )
    func failuresBeforeStart(directive: String, code: String, status: Int) async throws {
        try await GatewayHarness.with(configure: {
            $0.streamFirstTokenTimeout = .milliseconds(500)
            $0.streamIdleTimeout = .milliseconds(500)
        }) { harness in
            let body = "{\"task\":\"summarize\",\"text\":\(jsonString(Self.sample + " " + directive)),\"stream\":true}"
            let response = try await harness.process(body)
            #expect(response.status == status)
            #expect(response.header("Content-Type") == "application/json; charset=utf-8")
            let error = try Body(response)
            #expect(error.code == code)
            #expect(error.error == true)
            #expect(!String(decoding: response.body, as: UTF8.self).contains("mock"))
            // The upstream's Retry-After reaches the client, as on an unstreamed request.
            if code == "upstream_busy" { #expect(response.header("Retry-After") == "7") }
        }
    }

    @Test("aborts the upstream when the client disconnects mid-stream")
    func clientDisconnect() async throws {
        try await GatewayHarness.with { harness in
            let body =
                "{\"task\":\"summarize\",\"text\":\(jsonString(Self.sample + " [mock:deltas=200,delta-delay-ms=50]")),"
                + "\"stream\":true}"
            do {
                let response = try await harness.client.stream(
                    HTTPClientRequest(
                        method: "POST", url: harness.base + "/api/process",
                        headers: [("Content-Type", "application/json")], body: Array(body.utf8)))
                var iterator = response.body.makeAsyncIterator()
                _ = try await iterator.next()
                _ = try await iterator.next()
                await eventually("the upstream has the call") { harness.mock.stats.inFlight == 1 }
                response.body.cancel()
            }
            await eventually("the upstream's call is cancelled") { harness.mock.stats.cancelled == 1 }
            await eventually("no upstream call is in flight") { harness.mock.stats.inFlight == 0 }
            await eventually("a line says outcome=cancelled") {
                harness.logs.lines.contains { $0.contains("outcome=cancelled") }
            }
        }
    }

    @Test("ends streams in flight with an error event when a shutdown's grace period runs out")
    func shutdownEndsStreams() async throws {
        try await GatewayHarness.with(configure: { $0.shutdownGrace = .milliseconds(300) }) { harness in
            let task = Task { try await harness.streamProcess(Self.sample + " [mock:deltas=100,delta-delay-ms=100]") }
            await eventually("the upstream has the call") { harness.mock.stats.inFlight == 1 }
            await harness.running.stop()
            let answer = try await task.value
            #expect(answer.events.last?.event == "error")
            #expect(try answer.data(answer.events.count - 1)["code"] == .string("shutting_down"))
        }
    }
}
