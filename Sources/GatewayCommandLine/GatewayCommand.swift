import Access
import Gateway
import TextTasks

/// The `text-gateway` command line.
package enum GatewayCommand: Equatable, Sendable {
    /// `serve [--hostname H] [--port P] [--env E]` (also the default with no subcommand).
    case serve(hostname: String?, port: Int?, environment: String)
    /// `healthcheck [--port P]`: GET /api/health on loopback; exit 0 when it answers 200.
    case healthcheck(port: Int?)
    /// `token hash`: reads a caller token from standard input, prints its SHA-256 hash (the
    /// form `GATEWAY_TOKENS` / `GATEWAY_TOKENS_FILE` store).
    case tokenHash
    /// `tokens …`, `usage …`, `db …`: work on the store `DATABASE_URL` names, with settings
    /// read as `serve` reads them (`--env NAME`).
    case store(StoreCommand, environment: String)
    /// `jwt check [--env E]`: reads a JWT from standard input and explains what the gateway,
    /// configured as `serve` would be, decides about it.
    case jwtCheck(environment: String)
    /// `eval [--format table|json] [--min-pass F] [--task T]… [--concurrency N] [--env E]`:
    /// the fixed corpus through each task against the configured upstreams, checked.
    case eval(EvalCommand, environment: String)
    /// `--help` or `-h`, alone or after any command: the usage, on standard output.
    case help
    case version

    package static let usage = """
        usage: text-gateway [serve] [--hostname H] [--port P] [--env NAME]
               text-gateway healthcheck [--port P]
               text-gateway token hash < token.txt
               text-gateway tokens create --user U [--plan P] [--label L]
               text-gateway tokens list [--format table|json]
               text-gateway tokens revoke <id>
               text-gateway devices list [--format table|json]
               text-gateway devices revoke <deviceId>
               text-gateway usage [--since YYYY-MM-DD] [--user U] [--format table|csv|json]
               text-gateway db backup <file>
               text-gateway db check
               text-gateway jwt check [--env NAME] < token.txt
               text-gateway eval [--format table|json] [--min-pass F] [--task T]... [--concurrency N] [--env NAME]
               text-gateway [COMMAND] --help | --version

        --help       (or -h, after any command too) print this on standard output, exit 0.
        serve        run the gateway (the default). Settings come from the environment,
                     after .env and then .env.<NAME> in the working directory; the real
                     environment wins, and --hostname/--port win over HOST/PORT.
                     NAME is development (the default), production, testing or any
                     other name of letters, digits, '-' and '_'.
        healthcheck  ask a running gateway on 127.0.0.1 for /api/health (for HEALTHCHECK).
        token hash   read a caller token (one line: 1-512 printable ASCII characters, no
                     spaces) from standard input and print its SHA-256 hash.
        tokens       make (printing the token, only then), list or revoke caller tokens in
                     the store; a running gateway on the same store follows within 2 s.
        devices      list the App Attest devices registered in the store, or revoke one: its
                     sessions stop on every gateway on the same store within 2 s, and its
                     key can open no new one.
        usage        requests and tokens per user and UTC day (the last 30 days by default);
                     all guests (requests without a user id, from any address) are one
                     line a day: "(all guests)" in a table, an empty user in CSV, null in
                     JSON. --user U shows only U.
        db backup    write a consistent copy of the store to a new file, even while the
                     gateway runs.
        db check     run SQLite's integrity check on the store (on Postgres, the gateway's own
                     checks) and print ok or what it found: exit 0 when all is well, 1 when
                     it finds damage (a file too damaged to open or not a database too), 2
                     when it cannot check (no store, a missing or unreadable file, a schema
                     from a newer version, a server away).
                     The store commands read DATABASE_URL as serve does (with --env NAME).
        jwt check    read a JWT from standard input and explain what the gateway decides
                     about it with the JWT_* settings serve would read: accepted (the user
                     and plan) or refused and why. Exit 0 when accepted, 1 when refused.
        eval         run the built-in corpus of Persian texts (news, technical,
                     conversational) through each task against the upstreams serve would
                     use, plain and with "format": "json", and check what can be checked
                     without a judge: Persian script, a summary shorter than its text that
                     keeps its numbers and subject, 3-10 bullet points, exactly 10 numbered
                     titles, a rewrite that keeps every number, JSON that validates. Prints
                     a table per task (pass rate, tokens, latency) or JSON; exit 1 when the
                     share of passing cases is under --min-pass F (0 to 1; 0.8 when not
                     given, 0 never fails), 2 when no upstream has a key or a model.

        """

    /// Parses the arguments after the program name.
    package static func parse(_ arguments: [String]) throws(CommandLineError) -> GatewayCommand {
        var rest = arguments[...]
        if rest.first == "help" || asksForHelp(arguments) { return .help }
        if rest.first == "--version" || rest.first == "version" { return .version }
        if rest.count == 2, rest.first == "token", rest.last == "hash" { return .tokenHash }
        if let first = rest.first, ["tokens", "devices", "usage", "db"].contains(first) { return try parseStore(rest) }
        if rest.first == "jwt" { return try parseJWT(rest.dropFirst()) }
        if rest.first == "eval" { return try parseEval(rest.dropFirst()) }
        var subcommand = "serve"
        if let first = rest.first, !first.hasPrefix("-") {
            subcommand = first
            rest = rest.dropFirst()
        }
        var hostname: String?
        var port: Int?
        var environment = "development"
        while let flag = rest.popFirst() {
            func value() throws(CommandLineError) -> String {
                guard let value = rest.popFirst(), !value.hasPrefix("--") else {
                    throw CommandLineError("\(flag) needs a value")
                }
                return value
            }
            switch (subcommand, flag) {
            case ("serve", "--hostname"), ("serve", "-H"):
                hostname = try value()
            case ("serve", "--port"), ("serve", "-p"), ("healthcheck", "--port"):
                let text = try value()
                guard let number = Int(text), (0...65535).contains(number) else {
                    throw CommandLineError("--port must be a number in 0...65535")
                }
                port = number
            case ("serve", "--env"), ("serve", "-e"):
                environment = try value()
                guard !environment.isEmpty,
                    environment.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
                else {
                    throw CommandLineError("--env must be a plain name such as development or production")
                }
            default:
                throw CommandLineError(
                    subcommand == "serve" || subcommand == "healthcheck"
                        ? "unknown option \(flag)" : "unknown command \(subcommand)")
            }
        }
        switch subcommand {
        case "serve": return .serve(hostname: hostname, port: port, environment: environment)
        case "healthcheck": return .healthcheck(port: port)
        default: throw CommandLineError("unknown command \(subcommand)")
        }
    }
}

extension GatewayCommand {
    /// Whether `--help` or `-h` stands where an option could, after any subcommand
    /// (`eval --help`, `db check -h`): help wins over whatever else the line holds. No
    /// option's value may begin with `--`, so `--help` is never one; `-h` right after an
    /// option (`--user -h`) is that option's value.
    private static func asksForHelp(_ arguments: [String]) -> Bool {
        arguments.indices.contains { index in
            switch arguments[index] {
            case "--help": true
            case "-h": index == 0 || !arguments[index - 1].hasPrefix("-")
            default: false
            }
        }
    }

    /// `eval` and its options.
    private static func parseEval(_ arguments: ArraySlice<String>) throws(CommandLineError) -> GatewayCommand {
        var rest = arguments
        var eval = EvalCommand()
        var environment = "development"
        var tasks: [TextTask] = []
        while let word = rest.popFirst() {
            guard let value = rest.popFirst(), !value.hasPrefix("--") else {
                throw CommandLineError(word.hasPrefix("--") ? "\(word) needs a value" : "unknown argument \(word)")
            }
            switch word {
            case "--format":
                guard let format = EvalCommand.Format(rawValue: value) else {
                    throw CommandLineError("--format must be table or json")
                }
                eval.format = format
            case "--min-pass":
                guard let rate = Double(value), (0...1).contains(rate) else {
                    throw CommandLineError("--min-pass must be a number from 0 to 1")
                }
                eval.minimumPassRate = rate
            case "--task":
                guard let task = TextTask(rawValue: value) else {
                    throw CommandLineError("--task must be summarize, rewrite, key-points or titles")
                }
                tasks.append(task)
            case "--concurrency":
                guard let number = Int(value), (1...64).contains(number) else {
                    throw CommandLineError("--concurrency must be a number in 1...64")
                }
                eval.concurrency = number
            case "--env":
                guard !value.isEmpty, value.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
                    throw CommandLineError("--env must be a plain name such as development or production")
                }
                environment = value
            default:
                throw CommandLineError("unknown option \(word)")
            }
        }
        if !tasks.isEmpty { eval.tasks = tasks }
        return .eval(eval, environment: environment)
    }

    /// `jwt check [--env NAME]`.
    private static func parseJWT(_ arguments: ArraySlice<String>) throws(CommandLineError) -> GatewayCommand {
        var rest = arguments
        guard rest.popFirst() == "check" else { throw CommandLineError("jwt needs a command: jwt check") }
        var environment = "development"
        while let word = rest.popFirst() {
            guard word == "--env" else { throw CommandLineError("unknown option \(word)") }
            guard let value = rest.popFirst(), !value.hasPrefix("--") else {
                throw CommandLineError("--env needs a value")
            }
            environment = value
        }
        guard !environment.isEmpty, environment.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
        else {
            throw CommandLineError("--env must be a plain name such as development or production")
        }
        return .jwtCheck(environment: environment)
    }

    /// `tokens create|list|revoke`, `usage`, `db backup|check`, each with its options and `--env`.
    private static func parseStore(_ arguments: ArraySlice<String>) throws(CommandLineError) -> GatewayCommand {
        var rest = arguments
        let group = rest.popFirst() ?? ""
        var action = ""
        if group != "usage" {
            guard let next = rest.popFirst(), !next.hasPrefix("-") else {
                throw CommandLineError("\(group) needs a command (see --help)")
            }
            action = next
        }
        var options: [String: String] = [:]
        var positional: [String] = []
        let allowed: Set<String>
        switch (group, action) {
        case ("tokens", "create"): allowed = ["--user", "--plan", "--label", "--env"]
        case ("tokens", "list"): allowed = ["--format", "--env"]
        case ("tokens", "revoke"), ("db", "backup"), ("db", "check"), ("devices", "revoke"): allowed = ["--env"]
        case ("devices", "list"): allowed = ["--format", "--env"]
        case ("usage", _): allowed = ["--since", "--user", "--format", "--env"]
        default: throw CommandLineError("unknown command \(group) \(action)")
        }
        while let word = rest.popFirst() {
            guard word.hasPrefix("--") else {
                positional.append(word)
                continue
            }
            guard allowed.contains(word) else { throw CommandLineError("unknown option \(word)") }
            guard let value = rest.popFirst(), !value.hasPrefix("--") else {
                throw CommandLineError("\(word) needs a value")
            }
            guard options[word] == nil else { throw CommandLineError("\(word) given twice") }
            options[word] = value
        }
        let environment = options["--env"] ?? "development"
        guard environment.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
            throw CommandLineError("--env must be a plain name such as development or production")
        }
        func format(_ allowed: [StoreCommand.ReportFormat]) throws(CommandLineError) -> StoreCommand.ReportFormat {
            guard let text = options["--format"] else { return .table }
            guard let format = StoreCommand.ReportFormat(rawValue: text), allowed.contains(format) else {
                throw CommandLineError("--format must be \(allowed.map(\.rawValue).joined(separator: ", "))")
            }
            return format
        }
        func positionals(_ count: Int, _ what: String) throws(CommandLineError) {
            guard positional.count == count else { throw CommandLineError("\(group) \(action) takes \(what)") }
        }
        let command: StoreCommand
        switch (group, action) {
        case ("tokens", "create"):
            try positionals(0, "no arguments besides its options")
            guard let user = options["--user"] else { throw CommandLineError("tokens create needs --user") }
            command = .createToken(
                user: user, plan: options["--plan"] ?? PlanCatalog.defaultName, label: options["--label"])
        case ("tokens", "list"):
            try positionals(0, "no arguments besides its options")
            command = .listTokens(format: try format([.table, .json]))
        case ("tokens", "revoke"):
            try positionals(1, "one token id")
            command = .revokeToken(id: positional[0])
        case ("devices", "list"):
            try positionals(0, "no arguments besides its options")
            command = .listDevices(format: try format([.table, .json]))
        case ("devices", "revoke"):
            try positionals(1, "one device id")
            command = .revokeDevice(id: positional[0])
        case ("db", "backup"):
            try positionals(1, "the file to write")
            command = .backup(file: positional[0])
        case ("db", "check"):
            try positionals(0, "no arguments")
            command = .check
        default:
            try positionals(0, "no arguments besides its options")
            command = .usage(
                since: options["--since"], user: options["--user"], format: try format([.table, .csv, .json]))
        }
        return .store(command, environment: environment)
    }
}

/// A command line that cannot be run.
package struct CommandLineError: Error, Hashable, Sendable, CustomStringConvertible {
    package let message: String
    package init(_ message: String) { self.message = message }
    package var description: String { message }
}
