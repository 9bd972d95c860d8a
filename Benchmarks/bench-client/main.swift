// Load generator for the upstream client (`make bench-client`): drives ChatClient against a
// running mock-upstream and prints requests/s and latency, or the memory of many calls in
// flight at once.
//
//   bench-client throughput BASE_URL [concurrency=64] [seconds=10]
//   bench-client inflight   BASE_URL [count=5000]
#if canImport(Glibc)
import Glibc
#endif
import ChatAPI
import EventLoop
import HTTPClient
import Synchronization

func say(_ text: String) {
    let bytes = Array((text + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
}

func memoryKiB(_ field: String) -> Int {
    guard let file = fopen("/proc/self/status", "r") else { return 0 }
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

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 2 else {
    say("usage: bench-client throughput BASE_URL [concurrency] [seconds] | inflight BASE_URL [count]")
    exit(2)
}
Socket.raiseOpenFileLimit()
let mode = arguments[0]
let base = arguments[1]
var configuration = HTTPClientConfiguration()
configuration.timeout = .seconds(30)
let http = try HTTPClient(configuration: configuration)
let client = ChatClient(httpClient: http, baseURL: base, apiKey: "bench-key")
let request = ChatCompletionRequest(
    model: "mock-model",
    messages: [ChatMessage(role: .system, content: "system"), ChatMessage(role: .user, content: "a short text to process")],
    temperature: 0.2, maxTokens: 64
)

switch mode {
case "throughput":
    let concurrency = arguments.count > 2 ? Int(arguments[2]) ?? 64 : 64
    let seconds = arguments.count > 3 ? Int(arguments[3]) ?? 10 : 10
    _ = try? await client.complete(request)  // warm the pool
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
        return (all.sorted(), errors)
    }
    let elapsed = Double(start.nanoseconds(until: .now())) / 1e9
    let sorted = latencies.0
    func percentile(_ p: Double) -> Double {
        sorted.isEmpty ? 0 : Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) / 1e6
    }
    say("throughput: \(concurrency) concurrent for \(seconds)s: \(sorted.count) calls, \(latencies.1) errors")
    say("  requests/s \(Int(Double(sorted.count) / elapsed)), p50 \(percentile(0.5)) ms, p99 \(percentile(0.99)) ms")
case "inflight":
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
    say("  RSS before \(rssBefore / 1024) MiB, peak \(peak.load(ordering: .relaxed) / 1024) MiB, high-water \(memoryKiB("VmHWM") / 1024) MiB")
default:
    say("unknown mode \(mode)")
    exit(2)
}
await http.shutdown()
