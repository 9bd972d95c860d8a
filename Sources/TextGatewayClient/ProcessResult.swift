/// Tokens the upstream model counted for one answer.
public struct Usage: Sendable, Hashable, Codable {
    /// Tokens of the prompt (instructions and the user's text).
    public var inputTokens: Int
    /// Tokens of the answer.
    public var outputTokens: Int
    /// `inputTokens + outputTokens`.
    public var totalTokens: Int

    /// A usage of the given token counts.
    public init(inputTokens: Int, outputTokens: Int, totalTokens: Int) {
        self.inputTokens = inputTokens
        self.outputTokens = outputTokens
        self.totalTokens = totalTokens
    }
}

/// The typed answer of a request made with ``OutputFormat/json``, one case per task.
public enum StructuredData: Sendable, Hashable {
    /// ``TextTask/summarize``: `{"summary": …}`.
    case summary(String)
    /// ``TextTask/keyPoints``: `{"points": […]}`.
    case points([String])
    /// ``TextTask/titles``: `{"titles": […]}`.
    case titles([String])
    /// ``TextTask/rewrite``: `{"text": …}`.
    case text(String)
}

/// The answer of one ``TextGatewayClient/process(_:text:tone:format:idempotencyKey:)`` call, or the last
/// event of a stream.
public struct ProcessResult: Sendable, Hashable {
    /// The answer as text (also present with ``OutputFormat/json``).
    public var result: String
    /// The gateway's id of the request, to quote in a support ticket or to find in history.
    public var requestId: String
    /// The tokens the answer cost, `nil` when the upstream reported none.
    public var usage: Usage?
    /// The typed answer when ``OutputFormat/json`` was asked for.
    public var data: StructuredData?

    /// A result of the given parts.
    public init(result: String, requestId: String, usage: Usage?, data: StructuredData?) {
        self.result = result
        self.requestId = requestId
        self.usage = usage
        self.data = data
    }
}

/// `data` as it comes on the wire: every task's member optional, picked by task afterwards.
struct StructuredDataWire: Decodable {
    var summary: String?
    var points: [String]?
    var titles: [String]?
    var text: String?

    func value(for task: TextTask) -> StructuredData? {
        switch task {
        case .summarize: summary.map(StructuredData.summary)
        case .keyPoints: points.map(StructuredData.points)
        case .titles: titles.map(StructuredData.titles)
        case .rewrite: text.map(StructuredData.text)
        }
    }
}

/// The body of a successful `/api/process` answer, and of a stream's `done` event.
struct ProcessResultWire: Decodable {
    var result: String
    var requestId: String
    var usage: Usage?
    var data: StructuredDataWire?

    func value(for task: TextTask) -> ProcessResult {
        ProcessResult(result: result, requestId: requestId, usage: usage, data: data?.value(for: task))
    }
}
