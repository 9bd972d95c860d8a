import EventLoop
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

private struct JoinFailed: Error, Equatable {}

@Suite("Blocking work on a detached thread")
struct DetachedThreadTests {
    @Test("returns the body's result, computed on a thread other than the caller's")
    func result() async {
        let caller = UInt(pthread_self())
        let (value, thread) = await DetachedThread.run { (42, UInt(pthread_self())) }
        #expect(value == 42)
        #expect(thread != caller)
    }

    @Test("rethrows the body's typed error")
    func typedError() async {
        await #expect(throws: JoinFailed()) {
            try await DetachedThread.run { () throws(JoinFailed) -> Int in throw JoinFailed() }
        }
    }

    @Test("a group shut down gracefully runs the work queued on its loops first")
    func groupShutdown() async throws {
        let group = try EventLoopGroup(loopCount: 2)
        let ran = Atomic<Int>(0)
        for index in 0..<200 {
            group.loops[index % 2].execute { ran.add(1, ordering: .relaxed) }
        }
        await group.shutdownGracefully()
        #expect(ran.load(ordering: .relaxed) == 200)
    }

    @Test("concurrent and repeated group shutdowns all return")
    func repeatedShutdown() async throws {
        let group = try EventLoopGroup(loopCount: 2)
        async let one: Void = group.shutdownGracefully()
        async let two: Void = group.shutdownGracefully()
        _ = await (one, two)
        group.shutdown()
        await group.shutdownGracefully()
    }
}
