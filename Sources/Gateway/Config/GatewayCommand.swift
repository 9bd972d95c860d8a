/// The `text-gateway` command line.
public enum GatewayCommand: Equatable, Sendable {
    /// `serve [--hostname H] [--port P] [--env E]` (also the default with no subcommand).
    case serve(hostname: String?, port: Int?, environment: String)
    /// `healthcheck [--port P]`: GET /api/health on loopback; exit 0 when it answers 200.
    case healthcheck(port: Int?)
    /// `token hash`: reads a caller token from standard input, prints its SHA-256 hash (the
    /// form `GATEWAY_TOKENS` / `GATEWAY_TOKENS_FILE` store).
    case tokenHash
    case help
    case version

    public static let usage = """
        usage: text-gateway [serve] [--hostname H] [--port P] [--env NAME]
               text-gateway healthcheck [--port P]
               text-gateway token hash < token.txt
               text-gateway --help | --version

        serve        run the gateway (the default). Settings come from the environment,
                     after .env and then .env.<NAME> in the working directory; the real
                     environment wins, and --hostname/--port win over HOST/PORT.
                     NAME is development (the default), production, testing or any
                     other name of letters, digits, '-' and '_'.
        healthcheck  ask a running gateway on 127.0.0.1 for /api/health (for HEALTHCHECK).
        token hash   read a caller token from standard input and print its SHA-256 hash.

        """

    /// Parses the arguments after the program name.
    public static func parse(_ arguments: [String]) throws(CommandLineError) -> GatewayCommand {
        var rest = arguments[...]
        if rest.first == "--help" || rest.first == "-h" || rest.first == "help" { return .help }
        if rest.first == "--version" || rest.first == "version" { return .version }
        if rest.count == 2, rest.first == "token", rest.last == "hash" { return .tokenHash }
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
                guard let value = rest.popFirst(), !value.hasPrefix("--") else { throw CommandLineError("\(flag) needs a value") }
                return value
            }
            switch (subcommand, flag) {
            case (_, "--help"), (_, "-h"):
                return .help
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
                guard !environment.isEmpty, environment.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
                    throw CommandLineError("--env must be a plain name such as development or production")
                }
            default:
                throw CommandLineError(subcommand == "serve" || subcommand == "healthcheck"
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

/// A command line that cannot be run.
public struct CommandLineError: Error, Hashable, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
