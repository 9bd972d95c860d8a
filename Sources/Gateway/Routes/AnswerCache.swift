/// What `/api/process` asks for an answer: the in-process ``ResponseCache`` or the
/// ``SharedResponseCache`` in Redis, used the same way.
protocol AnswerCache: Sendable {
    /// The cached answer for `key`, or the answer of a call in flight for it, or of a new call
    /// of `compute`. `hit` is true when this request made no upstream call of its own. A
    /// failure is not cached; a cancelled request stops waiting at once.
    func answer(
        for key: ResponseCache.Key, compute: @escaping @Sendable () async throws(GatewayError) -> ResponseCache.Answer
    ) async throws(GatewayError) -> (answer: ResponseCache.Answer, hit: Bool)
}
