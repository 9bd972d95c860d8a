import ChatAPI
import Testing

@testable import Gateway
@testable import Upstream

/// The answers real model servers give when a request does not fit the model's context,
/// recorded from the servers (llama.cpp's from the `llama-server` that `make
/// real-upstream-check` builds), and the one classification every route shares: `413
/// text_too_long` on `/api`, OpenAI's `400 context_length_exceeded` on `/v1`, not retried on
/// another upstream and not counted against this one.
@Suite("An upstream's context overflow, in each server's words")
struct ContextOverflowTests {
    static let overflows: [(server: String, status: Int, body: String)] = [
        (
            "OpenAI", 400,
            #"{"error":{"message":"This model's maximum context length is 128000 tokens. However,"#
                + #" your messages resulted in 130211 tokens. Please reduce the length of the messages.","#
                + #""type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#
        ),
        (
            "llama.cpp", 400,
            #"{"error":{"code":400,"message":"request (11010 tokens) exceeds the available context size (2048 tokens),"#
                + #" try increasing it","type":"exceed_context_size_error","n_prompt_tokens":11010,"n_ctx":2048}}"#
        ),
        (
            "llama.cpp before its 400", 500,
            #"{"error":{"code":500,"#
                + #""message":"the request exceeds the available context size. try increasing the context size or "#
                + #"enable context shift","type":"exceed_context_size_error","n_prompt_tokens":1407,"n_ctx":256}}"#
        ),
        (
            "vLLM", 400,
            #"{"object":"error","message":"This model's maximum context length is 4096 tokens. However,"#
                + #" you requested 6379 tokens (6029 in the messages,"#
                + #" 350 in the completion). Please reduce the length of the messages or completion.","#
                + #""type":"BadRequestError","param":null,"code":400}"#
        ),
        (
            "vLLM, nested", 400,
            #"{"error":{"message":"This model's maximum context length is 2048 tokens. However,"#
                + #" your request has 3012 input tokens. Please reduce the length of the input messages.","#
                + #""type":"BadRequestError","param":null,"code":400}}"#
        ),
        (
            "vLLM, max_model_len", 400,
            #"{"error":{"message":"The decoder prompt (length 3012) is longer than the maximum model length of 2048. "#
                + #"Make sure that `max_model_len` is no smaller than the number of text tokens.","#
                + #""type":"BadRequestError","param":null,"code":400}}"#
        ),
        (
            "vLLM with OpenAI's code", 400,
            #"{"error":{"message":"This model's maximum context length is 2048 tokens.","type":"BadRequestError","#
                + #""param":null,"code":"context_length_exceeded"}}"#
        ),
    ]

    /// Other refusals of the same servers, which must stay what they are.
    static let others: [(server: String, status: Int, body: String, kind: UpstreamFailureKind, code: String)] = [
        (
            "llama.cpp, bad messages", 400,
            #"{"error":{"code":400,"message":"Failed to parse messages: Expected 'content'","#
                + #""type":"invalid_request_error"}}"#,
            .rejected, "upstream_error"
        ),
        (
            "llama.cpp, loading", 503, #"{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}"#,
            .busy, "upstream_busy"
        ),
        (
            "llama.cpp, a crash", 500,
            #"{"error":{"code":500,"message":"vector::_M_range_check","type":"server_error"}}"#, .serverError,
            "upstream_error"
        ),
        (
            "vLLM, max_tokens", 400,
            #"{"object":"error","message":"max_tokens must be at least 1, got -186.","type":"BadRequestError","#
                + #""param":null,"code":400}"#,
            .rejected, "upstream_error"
        ),
        (
            "a context error behind a busy gateway", 503,
            #"{"error":{"message":"This model's maximum context length is 2048 tokens.","#
                + #""code":"context_length_exceeded"}}"#,
            .busy, "upstream_busy"
        ),
        (
            "a 502 that mentions it", 502,
            #"{"error":{"message":"upstream said: maximum context length","type":"server_error"}}"#, .serverError,
            "upstream_error"
        ),
    ]

    static func failure(status: Int, body: String) throws -> UpstreamFailure {
        let error = try #require(UpstreamErrorBody.decode(from: Array(body.utf8)))
        return try #require(UpstreamFailure(.httpStatus(status, error: error, retryAfter: nil)))
    }

    @Test("is 413 text_too_long, and OpenAI's 400 context_length_exceeded on /v1", arguments: overflows)
    func overflow(server: String, status: Int, body: String) throws {
        let failure = try Self.failure(status: status, body: body)
        #expect(failure.kind == .contextLength, "\(server)")
        #expect(failure.error.status.code == 413 && failure.error.code == .textTooLong, "\(server)")
        #expect(
            failure.error.openAI?.status.code == 400 && failure.error.openAI?.code == .contextLengthExceeded,
            "\(server)")
        #expect(failure.error.openAI?.param == "messages")
        #expect(!failure.retryable && !failure.countsAgainstUpstream, "\(server)")
    }

    @Test("other refusals keep their own classification", arguments: others)
    func other(server: String, status: Int, body: String, kind: UpstreamFailureKind, code: String) throws {
        let failure = try Self.failure(status: status, body: body)
        #expect(failure.kind == kind, "\(server)")
        #expect(failure.error.code == GatewayError.Code(rawValue: code), "\(server)")
    }

    @Test("an /api/process whose upstream overflows answers 413 text_too_long, the server's words kept out")
    func throughTheGateway() async throws {
        for (server, status, body) in Self.overflows {
            let error = try #require(UpstreamErrorBody.decode(from: Array(body.utf8)))
            let upstream = InProcessGatewayTests.FakeUpstream(
                failure: .httpStatus(status, error: error, retryAfter: nil))
            let response = await InProcessGatewayTests.gateway(upstream, logs: .memory()).respond(
                to: InProcessGatewayTests.request(InProcessGatewayTests.body))
            #expect(response.status.code == 413, "\(server)")
            guard case .bytes(let bytes) = response.body else {
                Issue.record("expected a whole body")
                continue
            }
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(text.contains(#""code":"text_too_long""#), "\(server)")
            #expect(!text.contains("context") && !text.contains("tokens"), "\(server)")
            await response.finished?(.completed)
        }
    }
}
