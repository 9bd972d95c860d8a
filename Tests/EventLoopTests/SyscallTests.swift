import EventLoop
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("The public syscall helper")
struct SyscallTests {
    @Test("calls again after EINTR and returns the first other result")
    func retriesInterrupts() {
        var calls = 0
        let result = Syscall.retryingInterrupts { () -> Int32 in
            calls += 1
            if calls < 4 {
                errno = EINTR
                return -1
            }
            return 7
        }
        #expect(result == 7)
        #expect(calls == 4)
    }

    @Test("returns another failure at once and leaves its errno")
    func keepsOtherErrors() {
        var calls = 0
        let result = Syscall.retryingInterrupts { () -> Int in
            calls += 1
            errno = EBADF
            return -1
        }
        let code = errno
        #expect(result == -1)
        #expect(code == EBADF)
        #expect(calls == 1)
    }

    @Test("the throwing form names the failing call and its errno")
    func throwsIOError() {
        #expect(throws: IOError(errnoCode: EBADF, reason: "read")) {
            var byte: UInt8 = 0
            _ = try Syscall.call("read") { read(-1, &byte, 1) }
        }
        #expect((try? Syscall.call("getpid") { getpid() }) == getpid())
    }
}
