import ChatAPI
import EventLoop
import Synchronization
import Testing

@testable import Gateway

@Suite("Response cache")
struct ResponseCacheTests {
    final class Clock: Sendable {
        private let value = Mutex(MonotonicInstant(nanoseconds: 1_000_000_000))
        var now: MonotonicInstant { value.withLock { $0 } }
        func advance(_ duration: Duration) { value.withLock { $0 = $0.advanced(by: duration) } }
    }

    final class Calls: Sendable {
        private let count = Atomic<Int>(0)
        func add() { count.add(1, ordering: .relaxed) }
        var value: Int { count.load(ordering: .relaxed) }
    }

    static func key(_ text: String) -> ResponseCache.Key {
        ResponseCache.Key(task: "summarize", tone: nil, model: "m", text: text)
    }

    @Test("answers a repeat from the cache until it expires")
    func hitAndExpiry() async throws {
        let clock = Clock()
        let cache = ResponseCache(timeToLive: .seconds(10), capacity: 10)
        let calls = Calls()
        func ask() async throws -> Bool {
            try await cache.answer(for: Self.key("a"), now: { clock.now }) { () throws(GatewayError) in
                calls.add()
                return .init(result: "r", usage: nil)
            }.hit
        }
        #expect(try await ask() == false)
        #expect(try await ask() == true)
        clock.advance(.seconds(9))
        #expect(try await ask() == true)
        clock.advance(.seconds(2))
        #expect(try await ask() == false)
        #expect(calls.value == 2)
    }

    @Test("evicts the least recently used entry when full")
    func eviction() async throws {
        let cache = ResponseCache(timeToLive: .seconds(60), capacity: 2)
        func ask(_ text: String) async throws -> Bool {
            try await cache.answer(for: Self.key(text)) { () throws(GatewayError) in .init(result: text, usage: nil) }
                .hit
        }
        _ = try await ask("a")
        _ = try await ask("b")
        #expect(try await ask("a")) // a is now the most recent
        _ = try await ask("c") // evicts b
        #expect(cache.count == 2)
        #expect(try await ask("a"))
        #expect(try await ask("b") == false)
    }

    @Test("makes one upstream call for 50 identical concurrent misses")
    func singleFlight() async throws {
        let cache = ResponseCache(timeToLive: .seconds(60), capacity: 10)
        let calls = Calls()
        let answers = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    try await cache.answer(for: Self.key("same")) { () throws(GatewayError) in
                        calls.add()
                        // A call long enough for the 50 misses to find it in flight.
                        try? await Task.sleep(for: .milliseconds(100))
                        return .init(result: "once", usage: nil)
                    }.answer.result
                }
            }
            var all: [String] = []
            for try await answer in group { all.append(answer) }
            return all
        }
        #expect(answers.count == 50 && answers.allSatisfy { $0 == "once" })
        #expect(calls.value == 1)
    }

    @Test("shares a failure with the waiters and does not cache it")
    func failure() async throws {
        let cache = ResponseCache(timeToLive: .seconds(60), capacity: 10)
        await #expect(throws: GatewayError.self) {
            _ = try await cache.answer(for: Self.key("x")) { () throws(GatewayError) in
                throw GatewayError.upstreamTimeout
            }
        }
        #expect(cache.count == 0)
        let second = try await cache.answer(for: Self.key("x")) { () throws(GatewayError) in
            .init(result: "ok", usage: nil)
        }
        #expect(second.hit == false && second.answer.result == "ok")
    }
}
