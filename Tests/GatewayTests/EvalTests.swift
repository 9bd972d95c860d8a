import HTTPClient
import HTTPServer
import MockUpstream
import Testing

@testable import Gateway
@testable import GatewayCommandLine
@testable import TextTasks

@Suite("text-gateway eval: the corpus, the checks, and a run against mock-upstream")
struct EvalTests {
    static let text = EvalCorpus.texts[0]

    @Test("the corpus: at least 12 texts in three registers, each with numbers and its names in it")
    func corpus() {
        #expect(EvalCorpus.texts.count >= 12)
        #expect(Set(EvalCorpus.texts.map(\.kind)) == [.news, .technical, .conversational])
        #expect(Set(EvalCorpus.texts.map(\.id)).count == EvalCorpus.texts.count)
        for text in EvalCorpus.texts {
            #expect(EvalChecks.numbers(in: text.text).count >= 3, "\(text.id)")
            #expect(text.names.allSatisfy { EvalChecks.mentions(text.text, $0) }, "\(text.id)")
            #expect(
                !text.keyNumbers.isEmpty && Set(text.keyNumbers).isSubset(of: EvalChecks.numbers(in: text.text)),
                "\(text.id)")
            #expect(EvalChecks.isPersianScript(text.text), "\(text.id)")
            #expect(text.text.count >= 20 && text.text.count <= ProcessRequest.maximumCharacters)
        }
    }

    @Test("numbers are read in Persian, Arabic-Indic and ASCII digits, with a decimal point")
    func numbers() {
        #expect(
            EvalChecks.numbers(in: "خط ۱۰ با ۱.۸ میلیون و 43 کیلومتر، ٣ روز، SHA-256.") == [
                "10", "1.8", "43", "3", "256",
            ])
        #expect(EvalChecks.numbers(in: "بدون عدد") == [])
    }

    @Test("a name is found whatever marks and letter forms its writer chose")
    func mentions() {
        #expect(EvalChecks.mentions("برندهٔ جشنواره فجر امسال", "جشنوارهٔ فجر"))
        #expect(EvalChecks.mentions("سیاست پشتیبان‌گیری", "پشتیبان"))
        #expect(EvalChecks.mentions("لایهٔ کش redis", "Redis"))
        #expect(EvalChecks.mentions("استاد كريمي گفت", "استاد کریمی"))
        #expect(!EvalChecks.mentions("استاد گفت", "استاد کریمی"))
    }

    @Test("each task's checks pass a good answer and fail a bad one")
    func checks() {
        func failed(_ task: TextTask, _ answer: String) -> [String] {
            EvalChecks.checks(task: task, answer: answer, text: Self.text).filter { !$0.passed }.map(\.name)
        }
        #expect(failed(.summarize, "مترو تهران خط ۱۰ را با ۱۲ ایستگاه تا سال ۱۴۰۴ می‌سازد.") == [])
        #expect(
            failed(.summarize, "مترو خط ۱۱ را می‌سازد.") == ["keeps_names", "keeps_key_numbers", "no_invented_numbers"])
        #expect(failed(.summarize, "مترو تهران خط ۱۰ را می‌سازد.") == ["keeps_key_numbers"])
        #expect(
            failed(.summarize, "Tehran metro opens line 10 with 12 stations by 1404.") == [
                "persian_script", "keeps_names",
            ])
        #expect(failed(.summarize, Self.text.text + " تهران") == ["shorter_than_input"])
        #expect(failed(.keyPoints, "- نکتهٔ یک\n- نکتهٔ دو\n• نکتهٔ سه") == [])
        #expect(failed(.keyPoints, "۱. نکتهٔ یک\n۲. نکتهٔ دو\n۳. نکتهٔ سه\n۴. نکتهٔ چهار") == [])
        #expect(failed(.keyPoints, "- نکتهٔ یک\n- نکتهٔ دو") == ["bulleted_list_3_to_10"])
        #expect(failed(.keyPoints, "مقدمه\n- نکتهٔ یک\n- نکتهٔ دو\n- نکتهٔ سه") == ["bulleted_list_3_to_10"])
        let titles = (1...10).map { "\($0). عنوان شمارهٔ \($0)" }
        #expect(failed(.titles, titles.joined(separator: "\n")) == [])
        #expect(failed(.titles, titles.dropLast().joined(separator: "\n")) == ["ten_numbered_lines"])
        #expect(failed(.titles, titles.reversed().joined(separator: "\n")) == ["ten_numbered_lines"])
        let numbers = EvalChecks.numbers(in: Self.text.text).joined(separator: " ")
        #expect(failed(.rewrite, "متن بازنویسی‌شده با عددهای " + numbers) == [])
        #expect(failed(.rewrite, "متن بازنویسی‌شده بدون عدد") == ["keeps_every_number"])
        #expect(EvalChecks.structured(task: .titles, answer: "{\"titles\":[\"الف\"]}").passed == false)
        #expect(EvalChecks.structured(task: .summarize, answer: "{\"summary\":\"خلاصه\"}").passed)
    }

    /// A run against a mock whose every answer is `content` (nil: its own fixed sentence).
    static func run(
        content: String? = nil, minimum: Double = EvalCommand.defaultMinimumPassRate, tasks: [TextTask]? = nil
    ) async throws -> (String, Int32) {
        var behaviour = MockBehaviour()
        if let content { behaviour.content = content }
        let mock = try await MockUpstream.started(defaults: behaviour, apiKey: "k")
        var configuration = GatewayConfiguration()
        configuration.apiKey = "k"
        configuration.defaultModel = "mock-model"
        configuration.baseURL = mock.baseURL
        let client = try HTTPClient()
        let result = await EvalCommand(format: .table, minimumPassRate: minimum, tasks: tasks).run(
            configuration: configuration, client: client)
        await client.shutdown()
        await mock.shutdown()
        return (result.output, result.status)
    }

    @Test("against mock-upstream's fixed answer the checks fail where they should, and --min-pass exits 1")
    func againstTheMock() async throws {
        let (table, status) = try await Self.run(minimum: 0.5)
        #expect(status == 1)
        for line in [
            "summarize: persian_script 12/12, shorter_than_input 12/12, keeps_names 0/12, keeps_key_numbers 0/12,"
                + " no_invented_numbers 12/12, json_validates 12/12",
            "rewrite: persian_script 12/12, keeps_every_number 0/12, json_validates 12/12",
            "key-points: persian_script 12/12, bulleted_list_3_to_10 0/12, json_validates 12/12",
            "titles: persian_script 12/12, ten_numbered_lines 0/12, json_validates 12/12",
            "all: 0 of 48 cases pass every check (0 %)",
        ] {
            #expect(table.contains(line), "\(table)")
        }
    }

    @Test("a well-formed answer passes its task's checks, and the run exits 0 above --min-pass")
    func wellFormed() async throws {
        let titles = (1...10).map { "\($0). عنوانی برای این متن" }.joined(separator: "\n")
        let (table, status) = try await Self.run(content: titles, minimum: 1, tasks: [.titles])
        #expect(status == 0, "\(table)")
        #expect(
            table.contains("titles: persian_script 12/12, ten_numbered_lines 12/12, json_validates 12/12"), "\(table)")
    }

    @Test("without --min-pass a run under 80 % exits 1 and says so; one above exits 0; --min-pass 0 only reports")
    func defaultMinimum() async throws {
        #expect(EvalCommand().minimumPassRate == 0.8)
        #expect(
            try GatewayCommand.parse(["eval"]) == .eval(EvalCommand(minimumPassRate: 0.8), environment: "development"))
        #expect(GatewayCommand.usage.contains("0.8 when not"))
        let (_, failing) = try await Self.run(tasks: [.titles])
        #expect(failing == 1)
        let titles = (1...10).map { "\($0). عنوانی برای این متن" }.joined(separator: "\n")
        let (_, passing) = try await Self.run(content: titles, tasks: [.titles])
        #expect(passing == 0)
        let (_, reporting) = try await Self.run(minimum: 0, tasks: [.titles])
        #expect(reporting == 0)
    }

    @Test("text-gateway eval, as a process, exits 1 under the default minimum and prints why")
    func processExitsUnderDefault() async throws {
        let mock = try await MockUpstream.started(apiKey: "k")
        let environment = CommandLineProcessTests.baseEnvironment.merging([
            "DARVAREH_API_KEY": "k", "DARVAREH_MODEL_ID": "m", "DARVAREH_BASE_URL": mock.baseURL,
        ]) { $1 }
        let failing = try ChildProcess(
            "text-gateway", arguments: ["eval", "--task", "titles"], environment: environment,
            workingDirectory: CommandLineProcessTests.emptyDirectory())
        #expect(await failing.waitForExit(seconds: 60) == 1, "\(failing.output)")
        #expect(failing.output.contains("under --min-pass 80 %"), "\(failing.output)")
        let reporting = try ChildProcess(
            "text-gateway", arguments: ["eval", "--task", "titles", "--min-pass", "0"], environment: environment,
            workingDirectory: CommandLineProcessTests.emptyDirectory())
        #expect(await reporting.waitForExit(seconds: 60) == 0, "\(reporting.output)")
        await mock.shutdown()
    }

    @Test("without an API key or a model eval exits 2 and says which is missing, calling nothing")
    func notConfigured() async throws {
        let client = try HTTPClient()
        var configuration = GatewayConfiguration()
        configuration.baseURL = "http://127.0.0.1:9/v1"
        let noKey = await EvalCommand().run(configuration: configuration, client: client)
        configuration.apiKey = "k"
        let noModel = await EvalCommand().run(configuration: configuration, client: client)
        configuration.taskModels["titles"] = "titles-model"
        let titlesOnly = await EvalCommand(tasks: [.titles, .rewrite]).run(configuration: configuration, client: client)
        await client.shutdown()
        #expect(noKey.status == 2 && noKey.error.contains("API key") && noKey.output.isEmpty)
        #expect(noModel.status == 2 && noModel.error.contains("model for summarize") && noModel.output.isEmpty)
        #expect(titlesOnly.status == 2 && titlesOnly.error.contains("model for rewrite"))
    }

    @Test("the command line takes eval's options and refuses bad ones")
    func commandLine() throws {
        #expect(try GatewayCommand.parse(["eval"]) == .eval(EvalCommand(), environment: "development"))
        #expect(
            try GatewayCommand.parse([
                "eval", "--format", "json", "--min-pass", "0.8", "--task", "titles", "--env", "production",
            ])
                == .eval(EvalCommand(format: .json, minimumPassRate: 0.8, tasks: [.titles]), environment: "production"))
        for bad in [
            ["eval", "--min-pass", "2"], ["eval", "--format", "xml"], ["eval", "--task", "translate"],
            ["eval", "--nope", "1"], ["eval", "--format"],
        ] {
            #expect(throws: CommandLineError.self) { try GatewayCommand.parse(bad) }
        }
    }
}
