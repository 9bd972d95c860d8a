package import ChatAPI
package import JSON
package import Store
package import TextTasks

/// What one item of a job asks: the task's own answer of a text (the final pass), or one
/// map or reduce step's prompt, answered with the model of `rounds`.
package enum JobQuestion: Sendable {
    case final(task: TextTask, tone: Tone?, format: OutputFormat, text: String)
    case step(prompt: Prompt, rounds: TextTask)
}

/// An item's answer: the trimmed text, a final `format: json` pass's data, the usage and
/// what it cost at `PRICES` (nil: unknown, as without prices or for a model without one).
package struct JobAnswer: Sendable, Equatable {
    let result: String
    let data: JSONValue?
    package let usage: Usage?
    package var costMicros: Int64?

    package init(result: String, data: JSONValue? = nil, usage: Usage?, costMicros: Int64? = nil) {
        self.result = result
        self.data = data
        self.usage = usage
        self.costMicros = costMicros
    }
}

/// Why an item has no answer: the error code and message its job ends with.
package struct JobFailure: Error, Sendable, Equatable {
    package let code: String
    let message: String

    package init(code: String, message: String) {
        self.code = code
        self.message = message
    }
}

/// What the runner asks of the gateway: "answer a task" through the upstreams (retries,
/// fallback and the structured-output repair as for any request), and where a finished
/// job's row goes. The runner knows no route, no pool and no HTTP.
package protocol JobAnswering: Sendable {
    /// `job`'s caller is whose budgets the call counts in; its request id goes upstream.
    func answer(_ question: JobQuestion, job: JobRecord) async throws(JobFailure) -> JobAnswer
    /// The failure a job ends with when its own record cannot be run (an unknown task).
    var internalFailure: JobFailure { get }
    /// Hands a finished job's one row to the ledger (history and the access log).
    func recordEnd(_ job: JobRecord, durationMilliseconds: Double)
}
