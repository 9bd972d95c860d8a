import Access
import EventLoop
import Gateway
import GatewayCommandLine
import HTTPClient
import Telemetry

// text-gateway: the TextGateway server. See `text-gateway --help` and README.md.
#if canImport(Glibc)
    import Glibc
#endif

func write(_ text: String, to fd: CInt) {
    StandardStreams.write(text, to: fd)
}

func fail(_ message: String, exitCode: CInt = 2) -> Never {
    LogSink.standardError.flush()
    write("text-gateway: \(message)\n", to: 2)
    exit(exitCode)
}

// libcurl's global state before any thread starts (the signal thread, the loops).
guard HTTPClient.initializeGlobally() else { fail("cannot initialise libcurl", exitCode: 1) }

/// The settings: `.env`, then `.env.<name>`, under the real environment.
func loadConfiguration(environmentName: String) -> GatewayConfiguration {
    var files: [[String: String]] = []
    for path in [".env", ".env.\(environmentName)"] {
        do {
            if let values = try DotEnv.load(path: path) { files.append(values) }
        } catch {
            fail("\(error)")
        }
    }
    guard let processEnvironment = ProcessEnvironment.read() else {
        fail("cannot read the environment from /proc/self/environ (is /proc mounted?)")
    }
    do {
        return try GatewayConfiguration(environment: DotEnv.merged(environment: processEnvironment, files: files))
    } catch {
        fail("invalid configuration: \(error)")
    }
}

let command: GatewayCommand
do {
    command = try GatewayCommand.parse(Array(CommandLine.arguments.dropFirst()))
} catch {
    write("text-gateway: \(error)\n\(GatewayCommand.usage)", to: 2)
    exit(2)
}

switch command {
case .help:
    write(GatewayCommand.usage, to: 1)
case .version:
    write("text-gateway \(TextGatewayVersion.current)\n", to: 1)
case .tokenHash:
    let input = StandardStreams.read(0, upTo: 4096)
    guard input.count <= 4096, let token = TokenStore.token(fromInput: input) else {
        fail("token hash: write one token on standard input: 1-512 printable ASCII characters, no spaces")
    }
    write(TokenStore.hashLine(forToken: token) + "\n", to: 1)
case .store(let storeCommand, let environmentName):
    let result = await storeCommand.run(configuration: loadConfiguration(environmentName: environmentName))
    write(result.output, to: 1)
    write(result.error, to: 2)
    exit(result.status)
case .jwtCheck(let environmentName):
    let input = StandardStreams.read(0, upTo: 65_536)
    guard !input.isEmpty, input.count < 65_536 else { fail("jwt check: write one token on standard input") }
    let result = await JWTCheck.run(token: input, configuration: loadConfiguration(environmentName: environmentName))
    write(result.output, to: 1)
    exit(result.status)
case .eval(let eval, let environmentName):
    let configuration = loadConfiguration(environmentName: environmentName)
    var clientConfiguration = HTTPClientConfiguration()
    clientConfiguration.timeout = configuration.upstreamTimeout
    clientConfiguration.connectTimeout = configuration.upstreamConnectTimeout
    let client: HTTPClient
    do {
        client = try HTTPClient(configuration: clientConfiguration)
    } catch {
        fail("eval: cannot start the HTTP client: \(error)", exitCode: 1)
    }
    let result = await eval.run(configuration: configuration, client: client)
    await client.shutdown()
    write(result.output, to: 1)
    write(result.error, to: 2)
    exit(result.status)
case .healthcheck(let port):
    exit(await Healthcheck.run(port: port ?? Int(ProcessEnvironment.read()?["PORT"] ?? "") ?? 8080) ? 0 : 1)
case .serve(let hostname, let port, let environmentName):
    // Signals become an event to await: their handlers only write to a pipe.
    let signals: SignalStream
    do {
        signals = try SignalStream([SIGTERM, SIGINT, SIGHUP])
    } catch {
        fail("cannot install signal handlers: \(error)", exitCode: 1)
    }
    signal(SIGPIPE, SIG_IGN)
    // A file-size limit reached (`ulimit -f`) is then a failed write the store counts and
    // retries, not the end of the process.
    signal(SIGXFSZ, SIG_IGN)

    var configuration = loadConfiguration(environmentName: environmentName)
    // A test root makes any chain it signs a genuine app's: never outside a test run.
    if configuration.appAttest?.extraRoot != nil, environmentName != "testing" {
        fail("invalid configuration: APP_ATTEST_EXTRA_ROOT_CA_FILE is honoured only with --env testing")
    }
    if configuration.appAttest?.android?.extraRoot != nil, environmentName != "testing" {
        fail("invalid configuration: ANDROID_ATTEST_EXTRA_ROOT_CA_FILE is honoured only with --env testing")
    }
    if let hostname { configuration.host = hostname }
    if let port { configuration.port = port }

    let logger = Logger(level: configuration.logLevel, format: configuration.logFormat)
    let server: GatewayServer
    do {
        server = try await GatewayServer.start(
            configuration: configuration, logger: logger, environmentName: environmentName)
    } catch let error as StoreStartError {
        logger.error("start_failed", [("reason", .string("\(error)"))])
        fail("\(error)", exitCode: 2)
    } catch {
        logger.error("start_failed", [("reason", .string("\(error)"))])
        fail("cannot start: \(error)", exitCode: 1)
    }

    // SIGHUP reloads JWT_JWKS_FILE; SIGTERM and SIGINT stop.
    var received = await signals.next()
    while received == SIGHUP {
        logger.info("reloading", [("signal", .string("SIGHUP"))])
        server.reloadKeys()
        received = await signals.next()
    }
    logger.info("stopping", [("signal", .string(received == SIGTERM ? "SIGTERM" : "SIGINT"))])
    await server.stop()
    logger.info("stopped")
}
LogSink.standardError.flush()
exit(0)
