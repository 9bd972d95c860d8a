import EventLoop
import HTTPServer
import MockUpstream

// mock-upstream: an OpenAI-compatible fake chat-completions server for the demo, tests and
// benchmarks. See MockBehaviour for the per-request overrides.
#if canImport(Glibc)
    import Glibc
#endif

let usage = """
    usage: mock-upstream [options]
      --host H              address to listen on (default 127.0.0.1)
      --port P              port, 0 for any free port (default 0)
      --loops N             event loops (default 1)
      --api-key K           require Authorization: Bearer K
      --latency-ms N        wait before each answer (default 0)
      --deltas N            pieces per streamed answer (default 5)
      --delta-delay-ms N    pause between streamed pieces (default 10)
      --content TEXT        the answer text
      --provider-headers    answer with the header fields a hosted API behind a CDN sends
    Prints "mock-upstream listening on http://HOST:PORT/v1" once ready; stops on SIGTERM/SIGINT.

    """

func fail(_ message: String) -> Never {
    StandardStreams.write("mock-upstream: \(message)\n\(usage)", to: 2)
    exit(2)
}

struct Options {
    var configuration = ServerConfiguration()
    var defaults = MockBehaviour()
    var apiKey: String?
}

func parseOptions(_ arguments: [String]) -> Options {
    var options = Options()
    options.configuration.port = 0
    options.configuration.loopCount = 1
    var iterator = arguments.makeIterator()
    func value(_ flag: String) -> String {
        guard let value = iterator.next() else { fail("\(flag) needs a value") }
        return value
    }
    func number(_ flag: String) -> Int {
        guard let number = Int(value(flag)), number >= 0 else { fail("\(flag) needs a non-negative number") }
        return number
    }
    while let argument = iterator.next() {
        switch argument {
        case "--host": options.configuration.host = value(argument)
        case "--port": options.configuration.port = number(argument)
        case "--loops": options.configuration.loopCount = max(1, number(argument))
        case "--api-key": options.apiKey = value(argument)
        case "--latency-ms": options.defaults.latencyMilliseconds = number(argument)
        case "--deltas": options.defaults.deltas = max(1, number(argument))
        case "--delta-delay-ms": options.defaults.deltaDelayMilliseconds = number(argument)
        case "--content": options.defaults.content = value(argument)
        case "--provider-headers": options.defaults.providerHeaders = true
        case "--help", "-h":
            StandardStreams.write(usage, to: 1)
            exit(0)
        default: fail("unknown option \(argument)")
        }
    }
    return options
}

let options = parseOptions(Array(CommandLine.arguments.dropFirst()))

// Signals become an event to await: their handlers only write to a pipe.
let signals: SignalStream
do {
    signals = try SignalStream([SIGTERM, SIGINT])
} catch {
    fail("cannot install signal handlers: \(error)")
}

let mock: MockUpstream
do {
    mock = try MockUpstream(configuration: options.configuration, defaults: options.defaults, apiKey: options.apiKey)
    try await mock.start()
} catch {
    fail("cannot start: \(error)")
}
StandardStreams.write("mock-upstream listening on \(mock.baseURL)\n", to: 1)

_ = await signals.next()
await mock.shutdown(gracePeriod: .seconds(1))
