/// Idempotency-Key: one answer kept per (scope, key), so that a client's retry of a request
/// whose answer it lost is answered from the store rather than run (and billed) again.
///
/// A row is `running` while one gateway works on the request, under a lease that lets another
/// take the key over when that gateway dies, then `completed` with the answer until it
/// expires. The primary key on (scope, key) is what makes gateways sharing one store agree on
/// who runs a request. Every time is milliseconds since the Unix epoch, passed in by the
/// caller (tests drive it).
package protocol IdempotencyRepository: Sendable {
    /// In one transaction, for (start.scope, start.key):
    /// - no row, or a completed row expired at nowMilliseconds (expires_at <= now), or a running
    ///   row whose lease_until <= now (its owner died): (re)write it as running with start's
    ///   fingerprint, requestID, owner, leaseUntil, created_at = now, replays 0, answer columns
    ///   null → .started
    /// - a row (running with live lease, or completed unexpired) whose fingerprint differs from
    ///   start.fingerprint → .mismatch
    /// - running with live lease, same fingerprint → .inProgress(requestID:owner:)
    /// - completed unexpired, same fingerprint → .completed(requestID:answer:) (answer.replays =
    ///   the count stored before this call)
    ///
    /// Of several calls at once with one scope and key (any number of stores on one database),
    /// exactly one gets .started.
    func beginIdempotent(_ start: IdempotencyStart, nowMilliseconds: Int64) async throws(StoreError) -> IdempotencyBegin

    /// Stores the answer and marks the row completed until expiresAtMilliseconds, only when the
    /// row is running and owned by `owner`; false otherwise (taken over or released).
    func completeIdempotent(
        scope: String, key: String, owner: String, answer: StoredAnswer, expiresAtMilliseconds: Int64
    ) async throws(StoreError) -> Bool

    /// Deletes the row when it is running and owned by `owner` (a failed answer frees the key for
    /// a retry); nothing otherwise.
    func releaseIdempotent(scope: String, key: String, owner: String) async throws(StoreError)

    /// Adds one to a completed row's replays (a retry was answered from it).
    func noteIdempotentReplay(scope: String, key: String) async throws(StoreError)

    /// Deletes completed rows expired at nowMilliseconds and running rows whose lease ended at or
    /// before nowMilliseconds, in bounded batches (like purgeExpiredChallengesAndSessions);
    /// returns how many.
    func purgeExpiredIdempotent(nowMilliseconds: Int64) async throws(StoreError) -> Int

    /// Deletes the kept answers (completed rows) in `scopes`: those of `requestID` when given,
    /// else all of them; returns how many. A caller deleting its history takes its answers'
    /// copies with it. Running rows stay: their request still runs, and its key must keep a
    /// retry from running it a second time.
    func deleteKeptIdempotent(scopes: [String], requestID: String?) async throws(StoreError) -> Int

    /// Each write as its own method does it, in order, with one result per write; a store
    /// with one writer (SQLite) does them all in one transaction, so a gateway that gathers
    /// the writes of many requests commits them together. A failure fails them all.
    func applyIdempotent(_ writes: [IdempotencyWrite], nowMilliseconds: Int64) async throws(StoreError)
        -> [IdempotencyWritten]
}

/// One write of ``IdempotencyRepository/applyIdempotent(_:nowMilliseconds:)``.
package enum IdempotencyWrite: Sendable {
    case begin(IdempotencyStart)
    case complete(scope: String, key: String, owner: String, answer: StoredAnswer, expiresAtMilliseconds: Int64)
    case release(scope: String, key: String, owner: String)
    case replay(scope: String, key: String)
    /// For a store one gateway process owns (SQLite), whose running keys live in that
    /// process's memory: what a begin would find, without writing a running row
    /// (``IdempotencyWritten/begun(_:)``, `.started` when the key is free).
    case lookup(IdempotencyStart)
    /// For the same store: the answer written as completed in one statement, replacing a
    /// free row (``IdempotencyWritten/completed(_:)``).
    case keep(IdempotencyStart, answer: StoredAnswer, expiresAtMilliseconds: Int64)
}

/// What one ``IdempotencyWrite`` did.
package enum IdempotencyWritten: Sendable, Equatable {
    case begun(IdempotencyBegin)
    /// Whether the answer was kept
    /// (``IdempotencyRepository/completeIdempotent(scope:key:owner:answer:expiresAtMilliseconds:)``).
    case completed(Bool)
    case done
}

extension IdempotencyRepository {
    /// One write at a time, in order: for a store whose writes run side by side on a pool of
    /// connections (Postgres), where one transaction for all would serialize them.
    package func applyIdempotent(_ writes: [IdempotencyWrite], nowMilliseconds: Int64) async throws(StoreError)
        -> [IdempotencyWritten]
    {
        var results: [IdempotencyWritten] = []
        results.reserveCapacity(writes.count)
        for write in writes {
            switch write {
            case .begin(let start):
                results.append(.begun(try await beginIdempotent(start, nowMilliseconds: nowMilliseconds)))
            case .complete(let scope, let key, let owner, let answer, let expires):
                results.append(
                    .completed(
                        try await completeIdempotent(
                            scope: scope, key: key, owner: owner, answer: answer, expiresAtMilliseconds: expires)))
            case .release(let scope, let key, let owner):
                try await releaseIdempotent(scope: scope, key: key, owner: owner)
                results.append(.done)
            case .replay(let scope, let key):
                try await noteIdempotentReplay(scope: scope, key: key)
                results.append(.done)
            case .lookup, .keep:
                // Running keys in one process's memory only make sense for a store it owns.
                throw StoreError(
                    .other, message: "idempotency records: lookup and keep are for a store one process owns")
            }
        }
        return results
    }
}

/// What ``IdempotencyRepository/beginIdempotent(_:nowMilliseconds:)`` writes when the key is
/// free.
package struct IdempotencyStart: Sendable, Equatable {
    /// Whose keys these are and where they apply, e.g. `user:alice /api/process`: one client's
    /// key never answers another's request.
    package var scope: String
    /// The client's Idempotency-Key: 1–255 printable ASCII characters.
    package var key: String
    /// The 32-byte digest of the request, so that a key sent again with another request is
    /// refused rather than answered with the first one's answer.
    package var fingerprint: [UInt8]
    package var requestID: String
    /// The gateway instance's id: only it completes or releases the row.
    package var owner: String
    /// Until when the row is the owner's; after, another gateway may take the key over.
    package var leaseUntilMilliseconds: Int64

    package init(
        scope: String, key: String, fingerprint: [UInt8], requestID: String, owner: String,
        leaseUntilMilliseconds: Int64
    ) {
        self.scope = scope
        self.key = key
        self.fingerprint = fingerprint
        self.requestID = requestID
        self.owner = owner
        self.leaseUntilMilliseconds = leaseUntilMilliseconds
    }
}

/// What ``IdempotencyRepository/beginIdempotent(_:nowMilliseconds:)`` found.
package enum IdempotencyBegin: Sendable, Equatable {
    /// The key is the caller's: run the request, then complete or release it.
    case started
    /// Another request with the key runs, under a live lease.
    case inProgress(requestID: String, owner: String)
    /// The key's answer, kept and unexpired.
    case completed(requestID: String, answer: StoredAnswer)
    /// The key is held for another request (another fingerprint).
    case mismatch
}

/// A kept answer. Never printed with its body or text (CustomStringConvertible shows status, content type, sizes only).
package struct StoredAnswer: Sendable, Equatable, CustomStringConvertible {
    package var status: Int
    package var contentType: String
    /// The upstream that answered, when one did.
    package var upstream: String?
    package var body: [UInt8]
    /// For a streamed answer, the whole text its deltas carried.
    package var text: String?
    package var streamed: Bool
    /// How many retries were answered from it.
    package var replays: Int

    package init(
        status: Int, contentType: String, upstream: String?, body: [UInt8], text: String?, streamed: Bool,
        replays: Int = 0
    ) {
        self.status = status
        self.contentType = contentType
        self.upstream = upstream
        self.body = body
        self.text = text
        self.streamed = streamed
        self.replays = replays
    }

    /// Sizes only: the body and text are a user's.
    package var description: String {
        "StoredAnswer(status: \(status), contentType: \(contentType), body: \(body.count) bytes"
            + (text.map { ", text: \($0.utf8.count) bytes" } ?? "") + (streamed ? ", streamed" : "")
            + ", replays: \(replays))"
    }
}

/// A row of `idempotency_keys` as both backends read it, and the decision
/// ``IdempotencyRepository/beginIdempotent(_:nowMilliseconds:)`` makes from it.
struct IdempotencyRow {
    var fingerprint: [UInt8]
    var requestID: String
    var owner: String
    var completed: Bool
    var leaseUntilMilliseconds: Int64
    var expiresAtMilliseconds: Int64?
    /// Nil for a running row.
    var answer: StoredAnswer?

    /// The columns ``IdempotencyRow`` is read from, in this order.
    static let columns =
        "fingerprint, request_id, owner, state, lease_until, expires_at, "
        + "status, content_type, upstream, body, text, streamed, replays"

    /// Whether the row is dead at `now` (an expired answer, or a lease its owner let end), so
    /// that a begin may write over it.
    func isFree(at now: Int64) -> Bool {
        completed ? (expiresAtMilliseconds ?? Int64.min) <= now : leaseUntilMilliseconds <= now
    }

    /// What a begin with `start` gets from a live row.
    func outcome(for start: IdempotencyStart) -> IdempotencyBegin {
        guard fingerprint == start.fingerprint else { return .mismatch }
        if completed, let answer { return .completed(requestID: requestID, answer: answer) }
        return .inProgress(requestID: requestID, owner: owner)
    }
}

extension StoreError {
    /// A begin that kept finding its key's row deleted between its insert and its read.
    static func idempotencyKeyChurn(store: String) -> StoreError {
        StoreError(
            .busy, message: "\(store): an idempotency key's row kept vanishing while it was being taken; try again")
    }
}
