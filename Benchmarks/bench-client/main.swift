import ChatAPI
import EventLoop
import HTTPClient
import JSON
import Synchronization
import Upstream

// Load generator for the upstream client (`make bench-client`) and the gateway's scale
// scenarios (`Benchmarks/bench-scale.sh`).
//
//   bench-client throughput BASE_URL [concurrency=64] [seconds=10]   ChatClient against a mock
//   bench-client inflight   BASE_URL [count=5000]                    ChatClient, RSS of calls in flight
//   bench-client startup RUNS SETTLE_MS -- PROGRAM ARGS...           spawn a server, time to first
//       200 from GET $BENCH_HEALTH_PATH (default /api/health); "{port}" in ARGS becomes a free
//       port, or $BENCH_PORT when set (a server whose port is in its configuration file); the
//       child gets this process's environment; RSS and fds are summed over the child and its
//       children (nginx's master and workers)
//   bench-client burst   URL COUNT BODY_FILE                         COUNT POSTs at once, one connection each
//       (raw sockets on epoll, with `Authorization: Bearer $BENCH_TOKEN` when set; a 200 counts
//       when its body contains $BENCH_EXPECT, by default "success":true; BENCH_BURST_CLIENT=curl
//       sends them through HTTPClient instead, trusting the CA in $BENCH_CA_FILE for https)
//   bench-client streams URL COUNT BODY_FILE EXPECTED_DELTAS         COUNT streamed POSTs at once, each checked
//       (`/api/process` events; BENCH_STREAM_FORMAT=chat checks chat-completions chunks instead,
//       for the mock direct or through nginx, with BENCH_TOKEN as the bearer token)
//   bench-client steady  URL CONCURRENCY SECONDS BODY_FILE           closed-loop POSTs for SECONDS
//       (a 200 counts when its body contains $BENCH_EXPECT, as in burst; BENCH_TOKEN as there)
//
// burst, streams and steady print one `key=value` summary line (for scripts) after their
// human-readable lines. BENCH_LOOPS sets their event loops (default 1); burst and streams
// also sample the processes named in BENCH_WATCH="name=pid,..." (see Watcher).
#if canImport(Glibc)
    import CEventLoop // epoll, for the raw burst client
    import Glibc
#endif

func say(_ text: String) {
    let bytes = Array((text + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
}

func fail(_ text: String) -> Never {
    let bytes = Array("bench-client: \(text)\n".utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(2)
}

/// A `/proc/<pid>/status` field in KiB (`self` for this process), 0 when unreadable.
func memoryKiB(_ field: String, pid: String = "self") -> Int {
    guard let file = fopen("/proc/\(pid)/status", "r") else { return 0 }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 256)
    while fgets(&line, 256, file) != nil {
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if text.hasPrefix(field + ":") {
            return Int(text.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "0") ?? 0
        }
    }
    return 0
}

/// Open descriptors of a process.
func openFileCount(pid: pid_t) -> Int {
    guard let directory = opendir("/proc/\(pid)/fd") else { return 0 }
    defer { closedir(directory) }
    var count = 0
    while let entry = readdir(directory) {
        let first = withUnsafeBytes(of: entry.pointee.d_name) { $0[0] }
        if first != UInt8(ascii: ".") { count += 1 }
    }
    return count
}

func readFile(_ path: String) -> [UInt8] {
    guard let file = fopen(path, "rb") else { fail("cannot read \(path)") }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = fread(&buffer, 1, buffer.count, file)
        if count <= 0 { break }
        bytes += buffer[0..<count]
    }
    return bytes
}

/// User plus system CPU seconds of this process so far.
func ownCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(
        usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

func milliseconds(_ nanoseconds: UInt64) -> Double { Double(nanoseconds) / 1e6 }

func format(_ value: Double, _ decimals: Int = 1) -> String {
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let rounded = (value * scale).rounded() / scale
    return decimals == 0 ? String(Int(rounded)) : String(rounded)
}

/// Latency percentiles in ms of sorted nanosecond samples.
struct Percentiles {
    let sorted: [UInt64]
    init(_ samples: [UInt64]) { sorted = samples.sorted() }
    func ms(_ p: Double) -> Double {
        sorted.isEmpty ? 0 : milliseconds(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))])
    }
    var max: Double { milliseconds(sorted.last ?? 0) }
}

/// Outcomes tallied by name (`200`, `502`, `transport`, ...), printed in a stable order.
struct Tally {
    private(set) var counts: [String: Int] = [:]
    mutating func add(_ key: String, _ count: Int = 1) { counts[key, default: 0] += count }
    mutating func merge(_ other: Tally) { for (key, count) in other.counts { add(key, count) } }
    var total: Int { counts.values.reduce(0, +) }
    var text: String {
        counts.isEmpty ? "-" : counts.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ",")
    }
}

func integer(_ text: String, _ name: String) -> Int {
    guard let value = Int(text), value > 0 else { fail("\(name) must be a positive whole number, not '\(text)'") }
    return value
}

/// A client on BENCH_LOOPS loops of its own; `stop` shuts both down.
struct BenchClient {
    let http: HTTPClient
    let group: EventLoopGroup

    func stop() async {
        await http.shutdown()
        let group = self.group
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DetachedThread.detach {
                group.shutdown()
                continuation.resume()
            }
        }
    }
}

func makeClient(connections: Int, timeout: Duration) -> BenchClient {
    var configuration = HTTPClientConfiguration()
    configuration.timeout = timeout
    // Connects may queue behind a full listen backlog; SYN retries take seconds.
    configuration.connectTimeout = timeout
    configuration.maxConnections = connections
    let loops = Int(getenv("BENCH_LOOPS").map { String(cString: $0) } ?? "") ?? 1
    do {
        let group = try EventLoopGroup(loopCount: max(1, loops), namePrefix: "bench")
        return BenchClient(http: try HTTPClient(configuration: configuration, group: group), group: group)
    } catch {
        fail("cannot create the HTTP client: \(error)")
    }
}

/// A JSON POST, with `Authorization: Bearer $BENCH_TOKEN` when that is set (a reference
/// target: the mock direct or through nginx).
func post(_ url: String, _ body: [UInt8], stream: Bool = false, timeout: Duration? = nil) -> HTTPClientRequest {
    var headers = [(name: "Content-Type", value: "application/json")]
    if stream { headers.append((name: "Accept", value: "text/event-stream")) }
    if let token = getenv("BENCH_TOKEN").map({ String(cString: $0) }), !token.isEmpty {
        headers.append((name: "Authorization", value: "Bearer \(token)"))
    }
    // BENCH_CA_FILE: the private CA of an https target (Benchmarks/bench-https-h2.sh).
    let caFile = getenv("BENCH_CA_FILE").map { String(cString: $0) }
    return HTTPClientRequest(method: "POST", url: url, headers: headers, body: body, timeout: timeout, caFile: caFile)
}

func contains(_ bytes: [UInt8], _ needle: String) -> Bool {
    let pattern = Array(needle.utf8)
    guard !pattern.isEmpty, bytes.count >= pattern.count else { return false }
    for start in 0...(bytes.count - pattern.count) where bytes[start] == pattern[0] {
        if bytes[start..<(start + pattern.count)].elementsEqual(pattern) { return true }
    }
    return false
}

// MARK: - ChatClient modes (make bench-client)

func chatModes(mode: String, arguments: [String]) async throws {
    let base = arguments[1]
    var configuration = HTTPClientConfiguration()
    configuration.timeout = .seconds(30)
    let http = try HTTPClient(configuration: configuration)
    let client = ChatClient(httpClient: http, baseURL: base, apiKey: "bench-key")
    let request = ChatCompletionRequest(
        model: "mock-model",
        messages: [
            ChatMessage(role: .system, content: "system"), ChatMessage(role: .user, content: "a short text to process"),
        ],
        temperature: 0.2, maxTokens: 64
    )
    if mode == "throughput" {
        let concurrency = arguments.count > 2 ? Int(arguments[2]) ?? 64 : 64
        let seconds = arguments.count > 3 ? Int(arguments[3]) ?? 10 : 10
        _ = try? await client.complete(request) // warm the pool
        let deadline = MonotonicInstant.now().advanced(by: .seconds(seconds))
        let start = MonotonicInstant.now()
        let latencies = await withTaskGroup(of: ([UInt64], Int).self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    var samples: [UInt64] = []
                    var errors = 0
                    while MonotonicInstant.now() < deadline {
                        let began = MonotonicInstant.now()
                        do {
                            _ = try await client.complete(request)
                            samples.append(began.nanoseconds(until: .now()))
                        } catch {
                            errors += 1
                        }
                    }
                    return (samples, errors)
                }
            }
            var all: [UInt64] = []
            var errors = 0
            for await (samples, failed) in group {
                all += samples
                errors += failed
            }
            return (all, errors)
        }
        let elapsed = Double(start.nanoseconds(until: .now())) / 1e9
        let percentiles = Percentiles(latencies.0)
        say(
            "throughput: \(concurrency) concurrent for \(seconds)s: \(percentiles.sorted.count) calls,"
                + " \(latencies.1) errors"
        )
        say(
            "  requests/s \(Int(Double(percentiles.sorted.count) / elapsed)), p50 \(percentiles.ms(0.5)) ms,"
                + " p99 \(percentiles.ms(0.99)) ms"
        )
    } else {
        let count = arguments.count > 2 ? Int(arguments[2]) ?? 5000 : 5000
        _ = try? await client.complete(request)
        let rssBefore = memoryKiB("VmRSS")
        let peak = Atomic<Int>(0)
        let start = MonotonicInstant.now()
        let sampler = Task.detached {
            while !Task.isCancelled {
                let rss = memoryKiB("VmRSS")
                if rss > peak.load(ordering: .relaxed) { peak.store(rss, ordering: .relaxed) }
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        let succeeded = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<count {
                group.addTask { (try? await client.complete(request)) != nil }
            }
            var ok = 0
            for await success in group where success { ok += 1 }
            return ok
        }
        sampler.cancel()
        let elapsed = Double(start.nanoseconds(until: .now())) / 1e9
        say("inflight: \(count) calls at once: \(succeeded) succeeded in \((elapsed * 100).rounded() / 100)s")
        say(
            "  RSS before \(rssBefore / 1024) MiB, peak \(peak.load(ordering: .relaxed) / 1024) MiB,"
                + " high-water \(memoryKiB("VmHWM") / 1024) MiB"
        )
    }
    await http.shutdown()
}

// MARK: - startup

/// A port that was free a moment ago on 127.0.0.1.
func freePort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { fail("socket: errno \(errno)") }
    defer { close(fd) }
    var address = loopback(port: 0)
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else { fail("bind: errno \(errno)") }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

func loopback(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    return address
}

/// The path startup polls for a 200: BENCH_HEALTH_PATH, by default the gateway's `/api/health`.
let healthPath = getenv("BENCH_HEALTH_PATH").map { String(cString: $0) } ?? "/api/health"

/// One blocking connect + `GET` ``healthPath``: true on a 200 status line.
func healthy(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = loopback(port: port)
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard connected == 0 else { return false }
    let request = Array("GET \(healthPath) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
    guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else {
        return false
    }
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 512)
    while received.count < 12 {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 1000) == 1 else { return false }
        let count = recv(fd, &buffer, buffer.count, 0)
        guard count > 0 else { return false }
        received += buffer[0..<count]
    }
    return received.starts(with: Array("HTTP/1.1 200".utf8))
}

func sleepMilliseconds(_ value: Int) {
    var request = timespec(tv_sec: value / 1000, tv_nsec: (value % 1000) * 1_000_000)
    var remaining = request
    // After an interruption, sleep only for what was left.
    _ = Syscall.retryingInterrupts {
        request = remaining
        return nanosleep(&request, &remaining)
    }
}

/// Stops a child: SIGTERM, SIGKILL after 10 s; reaped either way.
func stopChild(_ pid: pid_t) {
    kill(pid, SIGTERM)
    var status: Int32 = 0
    for _ in 0..<1000 {
        if waitpid(pid, &status, WNOHANG) == pid { return }
        sleepMilliseconds(10)
    }
    kill(pid, SIGKILL)
    _ = waitpid(pid, &status, 0)
}

/// `pid` and the processes whose parent it is.
func processFamily(_ pid: pid_t) -> [pid_t] {
    var family = [pid]
    guard let directory = opendir("/proc") else { return family }
    defer { closedir(directory) }
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        guard let child = pid_t(name), child != pid, let file = fopen("/proc/\(child)/stat", "r") else { continue }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 512)
        guard fgets(&line, 512, file) != nil else { continue }
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // After the command: state, then the parent's pid.
        guard let close = text.lastIndex(of: ")") else { continue }
        let fields = text[text.index(after: close)...].split(separator: " ")
        if fields.count > 1, pid_t(fields[1]) == pid { family.append(child) }
    }
    return family
}

/// A `/proc/<pid>/status` field summed over `pids`, in KiB.
func memoryKiB(_ field: String, of pids: [pid_t]) -> Int {
    pids.reduce(0) { $0 + memoryKiB(field, pid: String($1)) }
}

func startup(arguments: [String]) {
    guard arguments.count >= 5, arguments[3] == "--" else { fail("usage: startup RUNS SETTLE_MS -- PROGRAM ARGS...") }
    let runs = integer(arguments[1], "RUNS")
    guard let settle = Int(arguments[2]), settle >= 0 else { fail("SETTLE_MS must be a whole number") }
    let program = arguments[4]
    let fixedPort = getenv("BENCH_PORT").map { integer(String(cString: $0), "BENCH_PORT") }
    for run in 1...runs {
        let port = fixedPort ?? freePort()
        let argv = arguments[4...].map { $0.replacing("{port}", with: String(port)) }
        var cArguments: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { for pointer in cArguments { free(pointer) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_adddup2(&actions, 2, 1) // the child's stdout must not mix with ours
        defer { posix_spawn_file_actions_destroy(&actions) }
        var pid: pid_t = 0
        let spawned = MonotonicInstant.now()
        let code = posix_spawn(&pid, program, &actions, nil, &cArguments, environ)
        guard code == 0 else { fail("posix_spawn \(program): error \(code)") }
        var ready: UInt64?
        let deadline = spawned.advanced(by: .seconds(10))
        while MonotonicInstant.now() < deadline {
            if healthy(port: port) {
                ready = spawned.nanoseconds(until: .now())
                break
            }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { fail("\(program) exited during start (status \(status))") }
            sleepMilliseconds(1)
        }
        guard let ready else {
            stopChild(pid)
            fail("\(program) did not answer GET \(healthPath) with 200 within 10 s")
        }
        var family = processFamily(pid)
        let rssReady = memoryKiB("VmRSS", of: family)
        let fdsReady = family.reduce(0) { $0 + openFileCount(pid: $1) }
        sleepMilliseconds(settle)
        family = processFamily(pid)
        let rss = memoryKiB("VmRSS", of: family)
        let anonymous = memoryKiB("RssAnon", of: family)
        let fileBacked = memoryKiB("RssFile", of: family)
        let fds = family.reduce(0) { $0 + openFileCount(pid: $1) }
        stopChild(pid)
        say(
            "startup run=\(run) ready_ms=\(format(milliseconds(ready), 2)) rss_ready_kib=\(rssReady) "
                + "fds_ready=\(fdsReady) rss_kib=\(rss) rss_anon_kib=\(anonymous) rss_file_kib=\(fileBacked) "
                + "fds=\(fds) processes=\(family.count)"
        )
    }
}

// MARK: - watching other processes

/// Samples the processes named in BENCH_WATCH (`name=pid,...`) on a thread of its own: RSS
/// every 20 ms, open descriptors as often as costs at most 5 % of a core (listing
/// `/proc/<pid>/fd` with 20,000 entries takes milliseconds of kernel time, which would
/// otherwise be taken from the processes measured), when the descriptors first reached 95 %
/// of their peak (how long accepting and connecting took), and CPU time used.
final class Watcher: Sendable {
    struct Sample: Sendable {
        var nanoseconds: UInt64
        var rssKiB: Int
        var fds: Int
    }

    let targets: [(name: String, pid: pid_t)]
    private let samples = Mutex<[[Sample]]>([])
    private let running = Atomic<Bool>(true)
    private let stopped = Atomic<Bool>(false)
    private let start = MonotonicInstant.now()
    private let cpuAtStart: [Double]

    init() {
        let text = getenv("BENCH_WATCH").map { String(cString: $0) } ?? ""
        targets = text.split(separator: ",").compactMap { item in
            let parts = item.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let pid = pid_t(parts[1]) else { return nil }
            return (String(parts[0]), pid)
        }
        cpuAtStart = targets.map { Self.cpuSeconds($0.pid) }
        samples.withLock { $0 = Array(repeating: [], count: targets.count) }
        guard !targets.isEmpty else { return }
        DetachedThread.detach { [self] in
            var fds = targets.map { openFileCount(pid: $0.pid) }
            var nextCount: UInt64 = 0
            while running.load(ordering: .relaxed) {
                let now = start.nanoseconds(until: .now())
                if now >= nextCount {
                    fds = targets.map { openFileCount(pid: $0.pid) }
                    let took = now.distance(to: start.nanoseconds(until: .now()))
                    nextCount = now + UInt64(max(Int64(took) * 20, 20_000_000))
                }
                let taken = targets.indices.map {
                    Sample(nanoseconds: now, rssKiB: memoryKiB("VmRSS", pid: String(targets[$0].pid)), fds: fds[$0])
                }
                samples.withLock { for index in taken.indices { $0[index].append(taken[index]) } }
                sleepMilliseconds(20)
            }
            stopped.store(true, ordering: .releasing)
        }
    }

    /// User plus system CPU seconds of `pid` so far.
    static func cpuSeconds(_ pid: pid_t) -> Double {
        guard let file = fopen("/proc/\(pid)/stat", "r") else { return 0 }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 1024)
        guard fgets(&line, 1024, file) != nil else { return 0 }
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let close = text.lastIndex(of: ")") else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // After the command: state is field 3, utime 14 and stime 15.
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Stops sampling and prints one `watch` line per process.
    func report() {
        guard !targets.isEmpty else { return }
        running.store(false, ordering: .relaxed)
        while !stopped.load(ordering: .acquiring) { sleepMilliseconds(5) }
        let all = samples.withLock { $0 }
        for (index, target) in targets.enumerated() {
            let series = all[index]
            let peakRSS = series.map(\.rssKiB).max() ?? 0
            let peakFDs = series.map(\.fds).max() ?? 0
            let ramp = series.first { $0.fds * 100 >= peakFDs * 95 }.map { milliseconds($0.nanoseconds) } ?? 0
            let cpu = Self.cpuSeconds(target.pid) - cpuAtStart[index]
            say(
                "watch name=\(target.name) peak_rss_kib=\(peakRSS) "
                    + "hwm_kib=\(memoryKiB("VmHWM", pid: String(target.pid))) peak_fds=\(peakFDs) "
                    + "fds_95_ms=\(format(ramp, 0)) cpu_s=\(format(cpu, 2)) samples=\(series.count)"
            )
        }
    }
}

// MARK: - burst

/// What a 200 body must contain to count as a success in burst and steady: BENCH_EXPECT, by default the
/// gateway's `"success":true` (a chat-completions answer through a reference proxy: `"choices":`).
let expectedText = getenv("BENCH_EXPECT").map { String(cString: $0) } ?? "\"success\":true"

/// `http://IPv4:port/path`.
func parseURL(_ url: String) -> (host: String, port: Int, path: String) {
    guard url.hasPrefix("http://") else { fail("burst needs an http://IPv4:port/path URL, not \(url)") }
    let rest = url.dropFirst("http://".count)
    let authority = rest.prefix { $0 != "/" }
    let path = rest.dropFirst(authority.count)
    let parts = authority.split(separator: ":")
    guard parts.count == 2, let port = Int(parts[1]) else { fail("burst needs an explicit port in \(url)") }
    return (String(parts[0]), port, path.isEmpty ? "/" : String(path))
}

/// COUNT requests on raw non-blocking sockets and one epoll: every request opens its own
/// connection at once (`Connection: close`), so the server sees COUNT connections. Costs the
/// client a few microseconds per request, leaving the CPU to the processes measured.
func rawBurst(url: String, count: Int, body: [UInt8], timeout: Duration) -> (Tally, [UInt64], Double) {
    let (host, port, path) = parseURL(url)
    var address = loopback(port: port)
    guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { fail("burst needs a numeric IPv4 host, not \(host)") }
    let authorization = getenv("BENCH_TOKEN").map { "Authorization: Bearer \(String(cString: $0))\r\n" } ?? ""
    let request =
        Array(
            ("POST \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nContent-Type: application/json\r\n"
                + "\(authorization)Content-Length: \(body.count)\r\nConnection: close\r\n\r\n").utf8) + body
    let epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
    guard epoll >= 0 else { fail("epoll_create1: errno \(errno)") }
    defer { close(epoll) }

    struct Connection {
        var began: MonotonicInstant
        var written = 0
        var received: [UInt8] = []
    }
    var connections: [CInt: Connection] = [:]
    connections.reserveCapacity(count)
    var tally = Tally()
    var latencies: [UInt64] = []
    latencies.reserveCapacity(count)

    func finish(_ fd: CInt, _ outcome: String) {
        guard let connection = connections.removeValue(forKey: fd) else { return }
        latencies.append(connection.began.nanoseconds(until: .now()))
        tally.add(outcome)
        close(fd)
    }
    /// The outcome once the whole response is in, nil while more is due.
    func outcome(_ bytes: [UInt8], ended: Bool) -> String? {
        let separator = Array("\r\n\r\n".utf8)
        guard let headEnd = bytes.indices.first(where: { bytes[$0...].starts(with: separator) }) else {
            return ended ? "truncated" : nil
        }
        let head = String(decoding: bytes[..<headEnd], as: UTF8.self)
        let lines = head.split(separator: "\r\n")
        let status = lines.first?.split(separator: " ").dropFirst().first.map(String.init) ?? "?"
        let length = lines.dropFirst().compactMap { line -> Int? in
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
            return Int(parts[1].filter { $0 != " " })
        }.first
        let bodyBytes = bytes.count - headEnd - separator.count
        if let length, bodyBytes < length { return ended ? "truncated" : nil }
        if length == nil && !ended { return nil }
        if status == "200" && !contains(Array(bytes[(headEnd + separator.count)...]), expectedText) {
            return "200-unexpected-body"
        }
        return status
    }

    let start = MonotonicInstant.now()
    for _ in 0..<count {
        let fd = socket(
            AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            tally.add("socket-errno-\(errno)")
            latencies.append(0)
            continue
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        connections[fd] = Connection(began: .now())
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if result != 0 && errno != EINPROGRESS {
            finish(fd, "connect-errno-\(errno)")
            continue
        }
        var event = epoll_event()
        event.events = EPOLLOUT.rawValue | EPOLLIN.rawValue | EPOLLRDHUP.rawValue
        event.data.fd = fd
        epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event)
    }

    let deadline = start.advanced(by: timeout)
    let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: 1024)
    defer { events.deallocate() }
    var buffer = [UInt8](repeating: 0, count: 65536)
    while !connections.isEmpty && MonotonicInstant.now() < deadline {
        let ready = epoll_wait(epoll, events, 1024, 100)
        guard ready > 0 else { continue }
        for index in 0..<Int(ready) {
            let fd = events[index].data.fd
            let flags = events[index].events
            guard var connection = connections[fd] else { continue }
            if connection.written < request.count && flags & EPOLLOUT.rawValue != 0 {
                var error: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
                if error != 0 {
                    finish(fd, "connect-errno-\(error)")
                    continue
                }
                let sent = request[connection.written...].withUnsafeBytes {
                    send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                }
                if sent < 0 && errno != EAGAIN {
                    finish(fd, "send-errno-\(errno)")
                    continue
                }
                connection.written += max(0, sent)
                if connection.written == request.count {
                    var event = epoll_event()
                    event.events = EPOLLIN.rawValue | EPOLLRDHUP.rawValue
                    event.data.fd = fd
                    epoll_ctl(epoll, EPOLL_CTL_MOD, fd, &event)
                }
                connections[fd] = connection
            }
            guard flags & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 else {
                continue
            }
            var ended = false
            while true {
                let got = recv(fd, &buffer, buffer.count, 0)
                if got > 0 {
                    connection.received += buffer[0..<got]
                } else {
                    if got == 0 || errno != EAGAIN { ended = true }
                    break
                }
            }
            if let result = outcome(connection.received, ended: ended) {
                finish(fd, result)
            } else if ended {
                finish(fd, connection.received.isEmpty ? "closed-without-response" : "truncated")
            } else {
                connections[fd] = connection
            }
        }
    }
    for fd in Array(connections.keys) { finish(fd, "client-timeout") }
    return (tally, latencies, Double(start.nanoseconds(until: .now())) / 1e9)
}

/// The same burst through HTTPClient (libcurl), for comparison: BENCH_BURST_CLIENT=curl.
func curlBurst(url: String, count: Int, body: [UInt8], timeout: Duration) async -> (Tally, [UInt64], Double) {
    let client = makeClient(connections: count + 64, timeout: timeout)
    let http = client.http
    let request = post(url, body)
    let start = MonotonicInstant.now()
    let (tally, latencies) = await withTaskGroup(of: (String, UInt64).self) { group in
        for _ in 0..<count {
            group.addTask {
                let began = MonotonicInstant.now()
                let outcome: String
                do {
                    let response = try await http.send(request)
                    outcome =
                        response.status == 200 && !contains(response.body, expectedText)
                        ? "200-unexpected-body" : String(response.status)
                } catch let error as HTTPClientError {
                    outcome = error.kind.rawValue
                } catch {
                    outcome = "error"
                }
                return (outcome, began.nanoseconds(until: .now()))
            }
        }
        var tally = Tally()
        var latencies: [UInt64] = []
        latencies.reserveCapacity(count)
        for await (outcome, latency) in group {
            tally.add(outcome)
            latencies.append(latency)
        }
        return (tally, latencies)
    }
    let wall = Double(start.nanoseconds(until: .now())) / 1e9
    await client.stop()
    return (tally, latencies, wall)
}

func burst(arguments: [String]) async {
    guard arguments.count == 4 else { fail("usage: burst URL COUNT BODY_FILE") }
    let url = arguments[1]
    let count = integer(arguments[2], "COUNT")
    let body = readFile(arguments[3])
    let engine = getenv("BENCH_BURST_CLIENT").map { String(cString: $0) } ?? "raw"
    let watcher = Watcher()
    let (tally, latencies, wall) =
        engine == "curl"
        ? await curlBurst(url: url, count: count, body: body, timeout: .seconds(120))
        : rawBurst(url: url, count: count, body: body, timeout: .seconds(120))
    watcher.report()
    let clientCPU = ownCPUSeconds()
    let ok = tally.counts["200"] ?? 0
    let percentiles = Percentiles(latencies)
    say(
        "burst (\(engine) client): \(count) requests at once: \(ok) succeeded,"
            + " \(count - ok) failed (\(tally.text)) in \(format(wall, 3)) s"
    )
    say(
        "  latency p50 \(format(percentiles.ms(0.5))) ms, p99 \(format(percentiles.ms(0.99))) ms,"
            + " max \(format(percentiles.max)) ms; client CPU \(format(clientCPU, 2)) s,"
            + " high-water RSS \(memoryKiB("VmHWM") / 1024) MiB"
    )
    say(
        "burst count=\(count) ok=\(ok) failed=\(count - ok) outcomes=\(tally.text) wall_s=\(format(wall, 3)) "
            + "p50_ms=\(format(percentiles.ms(0.5))) p99_ms=\(format(percentiles.ms(0.99))) "
            + "max_ms=\(format(percentiles.max)) client_cpu_s=\(format(clientCPU, 2))"
    )
}

// MARK: - streams

/// A check of one streamed answer, fed its body's bytes as they come and then told of its end.
protocol StreamCheck {
    init(expectedDeltas: Int)
    /// The first problem found, one word (the outcomes go into a key=value line); nil so far.
    var problem: String? { get set }
    /// When the first delta came, in nanoseconds after the request began.
    var firstDelta: UInt64? { get }
    var verdict: String { get }
    mutating func feed(_ bytes: [UInt8], at nanoseconds: UInt64) throws
    mutating func finish(at nanoseconds: UInt64) throws
    /// What `feed` or `finish` threw, as an outcome.
    static func outcome(of error: any Error) -> String
}

/// Checks one `/api/process` event stream against docs/api.md ("Streaming"): `start`, then
/// `delta`s whose `text` is the previous text plus `delta`, then one `done` whose `result` is
/// that text.
struct ProcessStreamCheck: StreamCheck {
    let expectedDeltas: Int
    private var reader = ServerSentEventReader()
    var requestID: String?
    var started = false
    var deltas = 0
    var text = ""
    var done = false
    var problem: String?
    var firstDelta: UInt64?

    init(expectedDeltas: Int) { self.expectedDeltas = expectedDeltas }

    mutating func take(_ event: ServerSentEvent, at nanoseconds: UInt64) {
        guard problem == nil else { return }
        guard !done else {
            problem = "event-after-done"
            return
        }
        guard let json = try? JSONValue.parse(Array(event.data.utf8)) else {
            problem = "bad-json"
            return
        }
        let id = json["requestId"]?.stringValue
        switch event.event {
        case "start":
            guard !started else {
                problem = "second-start"
                return
            }
            started = true
            requestID = id
            if id == nil { problem = "start-without-id" }
        case "delta":
            guard started else {
                problem = "delta-before-start"
                return
            }
            guard id == requestID else {
                problem = "request-id-changed"
                return
            }
            guard let delta = json["delta"]?.stringValue, !delta.isEmpty, let soFar = json["text"]?.stringValue else {
                problem = "delta-fields"
                return
            }
            guard soFar == text + delta else {
                problem = "text-not-growing"
                return
            }
            text = soFar
            deltas += 1
            if firstDelta == nil { firstDelta = nanoseconds }
        case "done":
            guard started else {
                problem = "done-before-start"
                return
            }
            guard id == requestID else {
                problem = "request-id-changed"
                return
            }
            guard json["result"]?.stringValue == text else {
                problem = "result-differs"
                return
            }
            guard deltas == expectedDeltas else {
                problem = "deltas-\(deltas)"
                return
            }
            done = true
        case "error":
            problem = "error-event-\(json["code"]?.stringValue ?? "?")"
        default:
            problem = "unexpected-event-\(event.event ?? "message")"
        }
    }

    var verdict: String { problem ?? (done ? "passed" : started ? "no-done" : "no-start") }

    mutating func feed(_ bytes: [UInt8], at nanoseconds: UInt64) throws {
        for event in try reader.feed(bytes) { take(event, at: nanoseconds) }
    }

    mutating func finish(at nanoseconds: UInt64) {
        for event in reader.finish() { take(event, at: nanoseconds) }
    }

    static func outcome(of error: any Error) -> String { "bad-event-stream" }
}

/// Checks one chat-completions event stream, what the references (the mock direct, and
/// through nginx) answer: every event a chunk, exactly `expectedDeltas` chunks with a
/// non-empty `delta.content`, a `finish_reason` after the last of them, then `[DONE]`.
struct ChatStreamCheck: StreamCheck {
    let expectedDeltas: Int
    private var decoder = ChatStreamDecoder()
    var deltas = 0
    var finished = false
    var done = false
    var problem: String?
    var firstDelta: UInt64?

    init(expectedDeltas: Int) { self.expectedDeltas = expectedDeltas }

    mutating func take(_ event: ChatStreamEvent, at nanoseconds: UInt64) {
        guard problem == nil else { return }
        switch event {
        case .chunk(let chunk):
            for choice in chunk.choices {
                if let content = choice.delta.content, !content.isEmpty {
                    guard !finished else {
                        problem = "delta-after-finish"
                        return
                    }
                    deltas += 1
                    if firstDelta == nil { firstDelta = nanoseconds }
                }
                if choice.finishReason != nil { finished = true }
            }
        case .done:
            guard finished else {
                problem = "done-before-finish"
                return
            }
            guard deltas == expectedDeltas else {
                problem = "deltas-\(deltas)"
                return
            }
            done = true
        }
    }

    var verdict: String { problem ?? (done ? "passed" : finished ? "no-done" : "no-finish") }

    mutating func feed(_ bytes: [UInt8], at nanoseconds: UInt64) throws {
        for event in try decoder.feed(bytes) { take(event, at: nanoseconds) }
    }

    mutating func finish(at nanoseconds: UInt64) throws {
        for event in try decoder.finish() { take(event, at: nanoseconds) }
    }

    static func outcome(of error: any Error) -> String {
        switch error as? ChatStreamError {
        case .truncated?: "no-done"
        case .malformedChunk?: "bad-chunk"
        case .upstreamError?: "upstream-error"
        case .eventStream?: "bad-event-stream"
        case nil: "stream-error"
        }
    }
}

/// Reads one streamed answer through a `Check`; returns its verdict and when the first delta
/// came, in nanoseconds after `began`.
func checkStream<Check: StreamCheck>(
    _ body: HTTPClientBodyStream, as _: Check.Type, expected: Int, began: MonotonicInstant
) async -> (String, UInt64?) {
    var check = Check(expectedDeltas: expected)
    do {
        for try await chunk in body { try check.feed(chunk, at: began.nanoseconds(until: .now())) }
        try check.finish(at: began.nanoseconds(until: .now()))
    } catch let error as HTTPClientError {
        check.problem = check.problem ?? error.kind.rawValue
    } catch {
        check.problem = check.problem ?? Check.outcome(of: error)
    }
    return (check.verdict, check.firstDelta)
}

func streams(arguments: [String]) async {
    guard arguments.count == 5 else { fail("usage: streams URL COUNT BODY_FILE EXPECTED_DELTAS") }
    let url = arguments[1]
    let count = integer(arguments[2], "COUNT")
    let body = readFile(arguments[3])
    let expected = integer(arguments[4], "EXPECTED_DELTAS")
    let client = makeClient(connections: count + 64, timeout: .seconds(300))
    let http = client.http
    let request = post(url, body, stream: true)
    let chat: Bool
    switch getenv("BENCH_STREAM_FORMAT").map({ String(cString: $0) }) ?? "process" {
    case "process": chat = false
    case "chat": chat = true
    case let other: fail("BENCH_STREAM_FORMAT must be process or chat, not '\(other)'")
    }
    let watcher = Watcher()
    let start = MonotonicInstant.now()
    let (tally, durations, firstDeltas) = await withTaskGroup(of: (String, UInt64, UInt64?).self) { group in
        for _ in 0..<count {
            group.addTask {
                let began = MonotonicInstant.now()
                let response: HTTPClientStreamingResponse
                do {
                    response = try await http.stream(request)
                } catch {
                    return (
                        (error as? HTTPClientError)?.kind.rawValue ?? "request-error", began.nanoseconds(until: .now()),
                        nil
                    )
                }
                guard response.status == 200 else {
                    return ("status-\(response.status)", began.nanoseconds(until: .now()), nil)
                }
                let (verdict, firstDelta) =
                    chat
                    ? await checkStream(response.body, as: ChatStreamCheck.self, expected: expected, began: began)
                    : await checkStream(response.body, as: ProcessStreamCheck.self, expected: expected, began: began)
                return (verdict, began.nanoseconds(until: .now()), firstDelta)
            }
        }
        var tally = Tally()
        var durations: [UInt64] = []
        var firstDeltas: [UInt64] = []
        for await (verdict, duration, firstDelta) in group {
            tally.add(verdict)
            durations.append(duration)
            if let firstDelta { firstDeltas.append(firstDelta) }
        }
        return (tally, durations, firstDeltas)
    }
    let wall = Double(start.nanoseconds(until: .now())) / 1e9
    watcher.report()
    await client.stop()
    let passed = tally.counts["passed"] ?? 0
    let total = Percentiles(durations)
    let first = Percentiles(firstDeltas)
    say(
        "streams: \(count) streams at once, \(expected) deltas each: \(passed) passed,"
            + " \(count - passed) failed (\(tally.text)) in \(format(wall, 3)) s"
    )
    say(
        "  stream duration p50 \(format(total.ms(0.5))) ms, p99 \(format(total.ms(0.99))) ms,"
            + " max \(format(total.max)) ms; first delta p50 \(format(first.ms(0.5))) ms,"
            + " p99 \(format(first.ms(0.99))) ms"
    )
    say(
        "streams count=\(count) passed=\(passed) failed=\(count - passed) outcomes=\(tally.text) "
            + "wall_s=\(format(wall, 3)) p50_ms=\(format(total.ms(0.5))) p99_ms=\(format(total.ms(0.99))) "
            + "max_ms=\(format(total.max)) first_delta_p50_ms=\(format(first.ms(0.5))) "
            + "first_delta_p99_ms=\(format(first.ms(0.99))) client_cpu_s=\(format(ownCPUSeconds(), 2))"
    )
}

// MARK: - steady

final class SteadyCounters: Sendable {
    let completed = Atomic<Int>(0)
    let failed = Atomic<Int>(0)
}

func steady(arguments: [String]) async {
    guard arguments.count == 5 else { fail("usage: steady URL CONCURRENCY SECONDS BODY_FILE") }
    let url = arguments[1]
    let concurrency = integer(arguments[2], "CONCURRENCY")
    let seconds = integer(arguments[3], "SECONDS")
    let body = readFile(arguments[4])
    let client = makeClient(connections: concurrency + 64, timeout: .seconds(30))
    let http = client.http
    let request = post(url, body)
    let counters = SteadyCounters()
    let start = MonotonicInstant.now()
    let deadline = start.advanced(by: .seconds(seconds))
    let reporter = Task {
        var previous = 0
        var tick = 0
        while !Task.isCancelled {
            tick += 1
            let next = start.advanced(by: .seconds(10 * tick))
            let wait = MonotonicInstant.now().nanoseconds(until: next)
            do { try await Task.sleep(for: .nanoseconds(Int(wait))) } catch { return }
            let done = counters.completed.load(ordering: .relaxed)
            say(
                "steady-interval t_s=\(10 * tick) requests=\(done - previous) rps=\((done - previous) / 10) "
                    + "errors_total=\(counters.failed.load(ordering: .relaxed))"
            )
            previous = done
        }
    }
    let (tally, latencies) = await withTaskGroup(of: (Tally, [UInt64]).self) { group in
        for _ in 0..<concurrency {
            group.addTask {
                var tally = Tally()
                var samples: [UInt64] = []
                while MonotonicInstant.now() < deadline {
                    let began = MonotonicInstant.now()
                    var outcome: String
                    do {
                        let response = try await http.send(request)
                        outcome = String(response.status)
                        if response.status == 200 && !contains(response.body, expectedText) {
                            outcome = "200-unexpected-body"
                        }
                    } catch let error as HTTPClientError {
                        outcome = error.kind.rawValue
                    } catch {
                        outcome = "error"
                    }
                    samples.append(began.nanoseconds(until: .now()))
                    tally.add(outcome)
                    counters.completed.add(1, ordering: .relaxed)
                    if outcome != "200" { counters.failed.add(1, ordering: .relaxed) }
                }
                return (tally, samples)
            }
        }
        var tally = Tally()
        var all: [UInt64] = []
        for await (part, samples) in group {
            tally.merge(part)
            all += samples
        }
        return (tally, all)
    }
    reporter.cancel()
    let elapsed = Double(start.nanoseconds(until: .now())) / 1e9
    await client.stop()
    let total = tally.total
    let errors = total - (tally.counts["200"] ?? 0)
    let percentiles = Percentiles(latencies)
    say(
        "steady: \(concurrency) concurrent for \(seconds) s: \(total) requests "
            + "(\(format(Double(total) / elapsed, 0))/s), \(errors) errors (\(tally.text))"
    )
    say(
        "  latency p50 \(format(percentiles.ms(0.5), 2)) ms, p99 \(format(percentiles.ms(0.99), 2)) ms,"
            + " max \(format(percentiles.max)) ms"
    )
    say(
        "steady requests=\(total) rps=\(format(Double(total) / elapsed, 0)) errors=\(errors) outcomes=\(tally.text) "
            + "p50_ms=\(format(percentiles.ms(0.5), 2)) p99_ms=\(format(percentiles.ms(0.99), 2)) "
            + "max_ms=\(format(percentiles.max))"
    )
}

// MARK: - main

let arguments = Array(CommandLine.arguments.dropFirst())
let usage =
    "usage: bench-client throughput BASE_URL [concurrency] [seconds] | inflight BASE_URL [count] | startup RUNS "
    + "SETTLE_MS -- PROGRAM ARGS... | burst URL COUNT BODY_FILE | streams URL COUNT BODY_FILE EXPECTED_DELTAS | "
    + "steady URL CONCURRENCY SECONDS BODY_FILE"
guard arguments.count >= 2 else {
    say(usage)
    exit(2)
}
Socket.raiseOpenFileLimit()
switch arguments[0] {
case "throughput", "inflight": try await chatModes(mode: arguments[0], arguments: arguments)
case "startup": startup(arguments: arguments)
case "burst": await burst(arguments: arguments)
case "streams": await streams(arguments: arguments)
case "steady": await steady(arguments: arguments)
default:
    say("unknown mode \(arguments[0])\n\(usage)")
    exit(2)
}
