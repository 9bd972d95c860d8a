import ChatAPI
import EventLoop
package import Gateway
package import HTTPClient
import JSON
import Telemetry
package import TextTasks

/// `text-gateway eval`: the fixed corpus (``EvalCorpus``) through each task against the
/// configured upstreams, as `/api/process` would ask them, every answer checked
/// (``EvalChecks``); a table per task, or JSON. For comparing models and prompts before a
/// change ships.
package struct EvalCommand: Sendable, Equatable {
    package enum Format: String, Sendable, Equatable {
        case table, json
    }

    package var format = Format.table
    /// Exit 1 when the share of cases that pass all their checks is below this (0...1;
    /// `--min-pass 0` never fails).
    package var minimumPassRate = Self.defaultMinimumPassRate
    /// Calls in flight at once.
    package var concurrency = 4
    /// Only these tasks; nil: all four.
    package var tasks: [TextTask]?

    /// `--min-pass` when not given: a run must pass four cases in five, so a change that
    /// breaks answers fails a script or CI step that runs eval without choosing a bar.
    package static let defaultMinimumPassRate = 0.8

    package init(
        format: Format = .table, minimumPassRate: Double = defaultMinimumPassRate, concurrency: Int = 4,
        tasks: [TextTask]? = nil
    ) {
        self.format = format
        self.minimumPassRate = minimumPassRate
        self.concurrency = concurrency
        self.tasks = tasks
    }

    /// What one text and task gave: the plain answer's checks and the `format: json` one's.
    struct Case: Sendable {
        let task: TextTask
        let textID: String
        var checks: [EvalChecks.Check]
        /// The call that failed, by its error code.
        var failure: GatewayError.Code?
        var inputTokens = 0
        var outputTokens = 0
        /// Both calls' milliseconds.
        var milliseconds: [Double] = []

        var passed: Bool { failure == nil && checks.allSatisfy(\.passed) }
    }

    /// Runs the corpus; the report, and the exit status (0, 1 under ``minimumPassRate``, 2
    /// when no upstream is configured).
    package func run(configuration: GatewayConfiguration, client: HTTPClient) async -> (
        output: String, error: String, status: Int32
    ) {
        let logger = Logger(level: .error)
        guard let answers = TaskAnswers(configuration: configuration, client: client, logger: logger) else {
            return ("", "eval: no upstream has an API key (DARVAREH_API_KEY or UPSTREAM_<NAME>_API_KEY)\n", 2)
        }
        let tasks = tasks ?? TextTask.allCases
        let settings = configuration.effectiveUpstreams
        // Without a model a task's every case would fail as an upstream error: say what is missing instead.
        if let task = tasks.first(where: { task in !settings.contains { $0.model(for: task) != nil } }) {
            return (
                "", "eval: no upstream has a model for \(task.rawValue) (DARVAREH_MODEL_ID or a per-task MODEL_ID)\n", 2
            )
        }
        let work = tasks.flatMap { task in EvalCorpus.texts.map { (task, $0) } }
        var cases: [Case] = []
        var next = 0
        await withTaskGroup(of: Case.self) { group in
            func add() {
                guard next < work.count else { return }
                let (task, text) = work[next]
                next += 1
                group.addTask {
                    await Self.evaluate(task: task, text: text, answers: answers)
                }
            }
            for _ in 0..<max(1, concurrency) { add() }
            for await finished in group {
                cases.append(finished)
                add()
            }
        }
        let order = TextTask.allCases
        cases.sort { (order.firstIndex(of: $0.task) ?? 0, $0.textID) < (order.firstIndex(of: $1.task) ?? 0, $1.textID) }
        let model = tasks.first.flatMap { task in settings.lazy.compactMap { $0.model(for: task) }.first } ?? ""
        let report = EvalReport(cases: cases, model: model)
        let output = format == .json ? report.json() : report.table()
        if report.passRate < minimumPassRate {
            return (
                output,
                "eval: pass rate \(EvalReport.percent(report.passRate)) is under --min-pass "
                    + "\(EvalReport.percent(minimumPassRate))\n",
                1
            )
        }
        return (output, "", 0)
    }

    private static func evaluate(task: TextTask, text: EvalText, answers: TaskAnswers) async -> Case {
        var result = Case(task: task, textID: text.id, checks: [])
        for format in OutputFormat.allCases {
            let start = MonotonicInstant.now()
            do {
                let answer = try await answers.answer(task: task, text: text.text, format: format)
                result.milliseconds.append(Double(start.nanoseconds(until: .now())) / 1e6)
                result.inputTokens += max(0, answer.usage?.promptTokens ?? 0)
                result.outputTokens += max(0, answer.usage?.completionTokens ?? 0)
                if format == .text {
                    result.checks += EvalChecks.checks(task: task, answer: answer.result, text: text)
                } else {
                    // The answer's data, as the client gets it, must be what the schema says.
                    let data = answer.data.map { String(decoding: $0.jsonBytes(), as: UTF8.self) } ?? ""
                    result.checks.append(EvalChecks.structured(task: task, answer: data))
                }
            } catch {
                result.milliseconds.append(Double(start.nanoseconds(until: .now())) / 1e6)
                if format == .json, error.code == .invalidModelOutput {
                    result.checks.append(EvalChecks.Check(name: "json_validates", passed: false))
                } else {
                    result.failure = result.failure ?? error.code
                }
            }
        }
        return result
    }
}

/// The results of an eval run, per task.
struct EvalReport {
    let cases: [EvalCommand.Case]
    let model: String
    /// Per task, in the order of ``TextTask/allCases``: what the table and the JSON show.
    let tasks: [TaskSummary]

    init(cases: [EvalCommand.Case], model: String) {
        self.cases = cases
        self.model = model
        tasks = Self.summaries(of: cases)
    }

    var passRate: Double { cases.isEmpty ? 0 : Double(cases.filter(\.passed).count) / Double(cases.count) }

    struct TaskSummary {
        let task: TextTask
        let cases: Int
        let passed: Int
        let inputTokens: Int
        let outputTokens: Int
        let p50: Double
        let p95: Double
        /// Each check's passes and total, in the order first seen; call failures by code.
        let checks: [(name: String, passed: Int, total: Int)]
        let failures: [GatewayError.Code: Int]
    }

    private static func summaries(of cases: [EvalCommand.Case]) -> [TaskSummary] {
        TextTask.allCases.compactMap { task in
            let mine = cases.filter { $0.task == task }
            guard !mine.isEmpty else { return nil }
            var names: [String] = []
            var counts: [String: (Int, Int)] = [:]
            var failures: [GatewayError.Code: Int] = [:]
            for item in mine {
                for check in item.checks {
                    if counts[check.name] == nil { names.append(check.name) }
                    let (passed, total) = counts[check.name] ?? (0, 0)
                    counts[check.name] = (passed + (check.passed ? 1 : 0), total + 1)
                }
                if let failure = item.failure { failures[failure, default: 0] += 1 }
            }
            let times = mine.flatMap(\.milliseconds).sorted()
            func percentile(_ fraction: Double) -> Double {
                times.isEmpty ? 0 : times[min(times.count - 1, Int(fraction * Double(times.count)))]
            }
            return TaskSummary(
                task: task, cases: mine.count, passed: mine.filter(\.passed).count,
                inputTokens: mine.reduce(0) { $0 + $1.inputTokens },
                outputTokens: mine.reduce(0) { $0 + $1.outputTokens }, p50: percentile(0.5), p95: percentile(0.95),
                checks: names.map { (name: $0, passed: counts[$0]?.0 ?? 0, total: counts[$0]?.1 ?? 0) },
                failures: failures
            )
        }
    }

    static func percent(_ fraction: Double) -> String {
        "\(Int((fraction * 100).rounded())) %"
    }

    private static func padded(_ text: String, _ width: Int, right: Bool = false) -> String {
        let pad = String(repeating: " ", count: max(0, width - text.count))
        return right ? pad + text : text + pad
    }

    func table() -> String {
        var lines = ["text-gateway eval: \(EvalCorpus.texts.count) texts, model \(model)", ""]
        lines.append(
            Self.padded("task", 12) + Self.padded("cases", 7, right: true) + Self.padded("passed", 8, right: true)
                + Self.padded("pass rate", 11, right: true) + Self.padded("tokens in/out", 16, right: true)
                + Self.padded("p50 ms", 9, right: true) + Self.padded("p95 ms", 9, right: true))
        for summary in tasks {
            lines.append(
                Self.padded(summary.task.rawValue, 12) + Self.padded(String(summary.cases), 7, right: true)
                    + Self.padded(String(summary.passed), 8, right: true)
                    + Self.padded(Self.percent(Double(summary.passed) / Double(max(1, summary.cases))), 11, right: true)
                    + Self.padded("\(summary.inputTokens)/\(summary.outputTokens)", 16, right: true)
                    + Self.padded(String(Int(summary.p50.rounded())), 9, right: true)
                    + Self.padded(String(Int(summary.p95.rounded())), 9, right: true))
        }
        lines.append("")
        for summary in tasks {
            let checks = summary.checks.map { "\($0.name) \($0.passed)/\($0.total)" }
            let failures = summary.failures.sorted { $0.key.rawValue < $1.key.rawValue }.map {
                "failed \($0.key) ×\($0.value)"
            }
            lines.append("\(summary.task.rawValue): " + (checks + failures).joined(separator: ", "))
        }
        lines.append("")
        lines.append(
            "all: \(cases.filter(\.passed).count) of \(cases.count) cases pass every check (\(Self.percent(passRate)))")
        return lines.joined(separator: "\n") + "\n"
    }

    func json() -> String {
        var writer = JSONWriter()
        writer.object {
            $0.field("model", model)
            $0.field("texts", EvalCorpus.texts.count)
            $0.field("cases", cases.count)
            $0.field("passed", cases.filter(\.passed).count)
            $0.field("passRate", passRate)
            $0.field("tasks", array: tasks) { task, summary in
                task.field("task", summary.task.rawValue)
                task.field("cases", summary.cases)
                task.field("passed", summary.passed)
                task.field("inputTokens", summary.inputTokens)
                task.field("outputTokens", summary.outputTokens)
                task.field("p50Ms", summary.p50)
                task.field("p95Ms", summary.p95)
                task.field("checks", array: summary.checks) { object, check in
                    object.field("name", check.name)
                    object.field("passed", check.passed)
                    object.field("total", check.total)
                }
                task.field(
                    "failures",
                    object: { object in
                        for (code, count) in summary.failures.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                            object.field(code.rawValue, count)
                        }
                    })
            }
            $0.field("results", array: cases) { result, item in
                result.field("task", item.task.rawValue)
                result.field("text", item.textID)
                result.field("passed", item.passed)
                result.field("failure", item.failure?.rawValue)
                result.field("failedChecks", strings: item.checks.filter { !$0.passed }.map(\.name))
            }
        }
        return String(decoding: writer.bytes, as: UTF8.self) + "\n"
    }
}
