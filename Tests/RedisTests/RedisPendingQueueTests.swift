import EventLoop
import Testing

@testable import Redis

@Suite("Redis pending queue and its timer")
struct RedisPendingQueueTests {
    private func at(_ milliseconds: UInt64) -> MonotonicInstant {
        MonotonicInstant(nanoseconds: milliseconds * 1_000_000)
    }

    @Test("the first command sets the timer; later deadlines keep it; an earlier one moves it")
    func setsTheTimer() {
        var queue = RedisPendingQueue<String>()
        #expect(queue.append("handshake", deadline: at(1000)) == .set(at(1000)))
        #expect(queue.append("later", deadline: at(1200)) == .keep)
        // A command's deadline sooner than the handshake's must not wait for it.
        #expect(queue.append("sooner", deadline: at(60)) == .set(at(60)))
        #expect(queue.timerAt == at(60))
    }

    @Test("replies come oldest first and leave the timer; an early timer moves to the oldest left")
    func repliesInOrder() {
        var queue = RedisPendingQueue<String>()
        _ = queue.append("a", deadline: at(50))
        _ = queue.append("b", deadline: at(60))
        _ = queue.append("c", deadline: at(70))
        #expect(queue.popOldest() == "a")
        #expect(queue.timerAt == at(50))
        guard case .again(let next) = queue.timerFired(now: at(50)) else {
            Issue.record("expected again")
            return
        }
        #expect(next == at(60))
        #expect(queue.timerAt == at(60))
        #expect(queue.popOldest() == "b")
        #expect(queue.popOldest() == "c")
        #expect(queue.popOldest() == nil)
        guard case .idle = queue.timerFired(now: at(60)) else {
            Issue.record("expected idle")
            return
        }
        #expect(queue.timerAt == nil)
    }

    @Test("a late oldest command times out; the rest are taken in order when the link closes")
    func timesOut() {
        var queue = RedisPendingQueue<String>()
        _ = queue.append("a", deadline: at(50))
        _ = queue.append("b", deadline: at(51))
        _ = queue.append("c", deadline: at(52))
        guard case .timedOut(let late) = queue.timerFired(now: at(50)) else {
            Issue.record("expected a timeout")
            return
        }
        #expect(late == "a")
        #expect(queue.removeAll() == ["b", "c"])
        #expect(queue.isEmpty && queue.timerAt == nil)
        #expect(queue.append("d", deadline: at(100)) == .set(at(100)))
    }

    @Test("thousands of replies keep their order across compactions")
    func keepsOrder() {
        var queue = RedisPendingQueue<Int>()
        var next = 0
        var expected = 0
        for round in 0..<50 {
            for _ in 0..<(100 + round) {
                _ = queue.append(next, deadline: at(UInt64(next)))
                next += 1
            }
            for _ in 0..<90 {
                #expect(queue.popOldest() == expected)
                expected += 1
            }
        }
        #expect(queue.count == next - expected)
        #expect(queue.removeAll() == Array(expected..<next))
    }
}
