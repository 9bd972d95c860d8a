import Synchronization

/// What one request's access-log line says, filled in by the handlers as they learn it.
/// Reached through a task-local, so handlers need no extra parameter.
final class AccessRecord: Sendable {
    struct Fields: Sendable {
        var userID: String?
        var task: String?
        var textLength: Int?
        var model: String?
        var inputTokens: Int?
        var outputTokens: Int?
        var upstreamNanoseconds: UInt64 = 0
        var errorCode: String?
        var outcome: String?
    }

    @TaskLocal static var current: AccessRecord?

    private let storage = Mutex(Fields())

    var fields: Fields { storage.withLock { $0 } }

    func update(_ body: (inout Fields) -> Void) {
        storage.withLock { body(&$0) }
    }
}
