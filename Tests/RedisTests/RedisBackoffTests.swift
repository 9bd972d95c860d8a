import Testing

@testable import Redis

@Suite("Redis reconnect backoff")
struct RedisBackoffTests {
    @Test("full jitter under a cap that doubles to the maximum and starts over after a success")
    func doublesWithJitter() {
        var backoff = RedisBackoff(.milliseconds(50)...(.seconds(5)))
        var caps: [Duration] = []
        var cap = Duration.milliseconds(50)
        for _ in 0..<10 {
            caps.append(cap)
            cap = min(cap * 2, .seconds(5))
        }
        for cap in caps {
            let delay = backoff.next()
            #expect(delay >= .zero && delay <= cap)
        }
        backoff.reset()
        for _ in 0..<20 {
            var fresh = backoff
            #expect(fresh.next() <= .milliseconds(50))
        }
    }
}
