/// One caller's wait for a reply, on the connection's loop: finished once, by the reply, a
/// failure or the caller's cancellation (after which a late reply is read and dropped).
final class RedisCall {
    private var continuation: CheckedContinuation<Result<RedisValue, RedisError>, Never>?
    private(set) var isCancelled = false
    private var isFinished = false

    init() {}

    /// Gives the call its waiter; false when the caller was cancelled meanwhile (and answered).
    func attach(_ continuation: CheckedContinuation<Result<RedisValue, RedisError>, Never>) -> Bool {
        guard !isCancelled else {
            continuation.resume(returning: .failure(RedisError(.cancelled)))
            isFinished = true
            return false
        }
        self.continuation = continuation
        return true
    }

    func finish(_ result: Result<RedisValue, RedisError>) {
        guard !isFinished else { return }
        isFinished = true
        continuation?.resume(returning: result)
        continuation = nil
    }

    /// The caller's task was cancelled: answer it now; the command itself goes on.
    func cancel() {
        isCancelled = true
        guard continuation != nil else { return }
        finish(.failure(RedisError(.cancelled)))
    }
}

@available(*, unavailable)
extension RedisCall: Sendable {}
