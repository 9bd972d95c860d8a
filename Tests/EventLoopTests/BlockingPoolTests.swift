import Synchronization
import TestSupport
import Testing

@testable import EventLoop

#if canImport(Glibc)
    import Glibc
#endif

private struct WorkFailed: Error, Equatable {}

@Suite("Blocking pool")
struct BlockingPoolTests {
    @Test("returns the work's result and rethrows its error")
    func results() async throws {
        let pool = try BlockingPool(threadCount: 2, name: "test-pool")
        let sum = try await pool.run { (1...100).reduce(0, +) }
        #expect(sum == 5050)
        await #expect(throws: WorkFailed()) { try await pool.run { () throws -> Int in throw WorkFailed() } }
        await pool.shutdown()
    }

    @Test("runs work off the calling thread and off the event loops")
    func offCallerAndLoops() async throws {
        let pool = try BlockingPool(threadCount: 1, name: "test-pool")
        let group = try EventLoopGroup(loopCount: 1)
        let loop = group.loops[0]
        let (callerThread, workThread, workOnLoop) = try await Task(executorPreference: loop) {
            () async throws -> (UInt, UInt, Bool) in
            let caller = UInt(pthread_self())
            let (work, onLoop) = try await pool.run { (UInt(pthread_self()), loop.inEventLoop) }
            return (caller, work, onLoop)
        }.value
        let loopThread = await withCheckedContinuation { continuation in
            loop.execute { continuation.resume(returning: UInt(pthread_self())) }
        }
        #expect(callerThread == loopThread)
        #expect(workThread != loopThread)
        #expect(!workOnLoop)
        await pool.shutdown()
        await group.shutdownGracefully()
    }

    @Test("runs as many blocking jobs at once as it has threads")
    func concurrency() async throws {
        let threads = 4
        let pool = try BlockingPool(threadCount: threads, name: "test-pool")
        let arrived = Locked(0)
        // Each job blocks until all have arrived: they can only all return true when each had
        // a thread of its own at the same time.
        let allMet = try await withThrowingTaskGroup(of: Bool.self) { tasks in
            for _ in 0..<threads {
                tasks.addTask {
                    try await pool.run {
                        arrived.update { $0 += 1 }
                        return blockingUntil { arrived.value == threads }
                    }
                }
            }
            return try await tasks.reduce(true) { $0 && $1 }
        }
        #expect(allMet)
        await pool.shutdown()
    }

    @Test("runs queued work in order and lets it finish on shutdown")
    func shutdownDrains() async throws {
        let pool = try BlockingPool(threadCount: 1, name: "test-pool")
        let running = Locked(false)
        let gate = Locked(false)
        let ran = Locked<[Int]>([])
        let first = Task {
            try await pool.run {
                running.update { $0 = true }
                return blockingUntil { gate.value }
            }
        }
        await eventually("the first job runs") { running.value }
        let answered = Locked(0)
        for index in 1...5 {
            // One at a time, so the queue's order is known.
            Task {
                try await pool.run { ran.update { $0.append(index) } }
                answered.update { $0 += 1 }
            }
            await eventually("\(index) jobs are queued") { pool.queuedCount == index }
        }
        let shutdown = Task { await pool.shutdown() }
        await eventually("the pool stops accepting work") { !pool.isAcceptingWork }
        #expect(pool.queuedCount == 5)
        gate.update { $0 = true }
        await shutdown.value
        #expect(ran.value == [1, 2, 3, 4, 5])
        #expect(try await first.value)
        // Polled rather than awaited: work dropped by a broken pool would never answer.
        await eventually("the 5 queued jobs are answered") { answered.value == 5 }
    }

    @Test("refuses work after shutdown, and a second shutdown does nothing")
    func refusesAfterShutdown() async throws {
        let pool = try BlockingPool(threadCount: 2, name: "test-pool")
        await pool.shutdown()
        await #expect(throws: BlockingPoolError.shutDown) { try await pool.run { 1 } }
        await pool.shutdown()
        await #expect(throws: BlockingPoolError.shutDown) { try await pool.run { 1 } }
    }

    @Test("concurrent shutdowns both return once the threads have ended")
    func concurrentShutdown() async throws {
        let pool = try BlockingPool(threadCount: 3, name: "test-pool")
        let ran = Locked(false)
        let answer = Locked<Bool?>(nil)
        Task {
            let accepted = (try? await pool.run { ran.update { $0 = true } }) != nil
            answer.update { $0 = accepted }
        }
        async let one: Void = pool.shutdown()
        async let two: Void = pool.shutdown()
        _ = await (one, two)
        let ranByShutdown = ran.value
        // Polled rather than awaited: work dropped by a broken pool would never answer.
        await eventually("the work is answered") { answer.value != nil }
        // Work the pool accepted has run by the time either shutdown returns.
        #expect(ranByShutdown == (answer.value == true))
    }
}
