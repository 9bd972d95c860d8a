import Crypto
import EventLoop
import Store
import Synchronization
import Telemetry

/// What a request with an `Idempotency-Key` is to the gateway (docs/api.md, "Retries"):
/// the first with its key, a retry answered from the kept answer, or a retry that joined
/// the first while it ran.
enum IdempotencyRole: String, Sendable {
    case original
    case replayed
    case joined
}

/// Idempotent requests: the records every instance shares (the store's table, or this
/// instance's memory without a store), the answers running on this instance that a retry
/// can join, and the counts.
final class IdempotencyService: Sendable {
    struct Settings: Sendable {
        /// How long a running key is held before another instance may take it over: longer
        /// than any answer may take, so only a dead instance's keys are taken.
        var lease: Duration
    }

    /// One key's record and request, as the middleware and the records know it.
    struct Ticket: Sendable {
        let scope: String
        let key: String
        let fingerprint: [UInt8]
        /// How long its answer is kept: its route's (``IdempotencyMiddleware/timeToLive``).
        let timeToLive: Duration
        /// Scope and key together: the flight's and the kept-key filter's name for it.
        let flightKey: String

        init(scope: String, key: String, fingerprint: [UInt8], timeToLive: Duration) {
            self.scope = scope
            self.key = key
            self.fingerprint = fingerprint
            self.timeToLive = timeToLive
            flightKey = scope + "\u{1F}" + key
        }
    }

    /// Whose keys these are and where: `caller` is `user:<id>` or `address:<address>`.
    static func scope(caller: String, path: String) -> String {
        caller + " " + path
    }

    /// The first request with a key, running on this instance.
    final class Flight: Sendable {
        enum Decision: Sendable {
            /// The records let this instance answer it.
            case run
            /// The records hold the key already (kept, running elsewhere, or another request's).
            case refer(Referral)
            case failed(GatewayError)
        }

        /// What the records say of a key this instance may not run.
        enum Referral: Sendable {
            /// Another request with the key runs, under a live lease.
            case inProgress
            /// The key's answer, kept and unexpired.
            case completed(requestID: String, answer: StoredAnswer)
            /// The key is held for another request (another fingerprint).
            case mismatch

            /// What `begun` refers a request to; nil when it lets the request run.
            init?(_ begun: IdempotencyBegin) {
                switch begun {
                case .started: return nil
                case .inProgress: self = .inProgress
                case .completed(let requestID, let answer): self = .completed(requestID: requestID, answer: answer)
                case .mismatch: self = .mismatch
                }
            }
        }

        enum Answer: Sendable {
            case stream(StreamTee, upstream: String?)
            case whole(Result<StoredAnswer, GatewayError>)
        }

        let fingerprint: [UInt8]
        let requestID: String
        let decision = OneShot<Decision>()
        let answer = OneShot<Answer>()

        init(fingerprint: [UInt8], requestID: String) {
            self.fingerprint = fingerprint
            self.requestID = requestID
        }
    }

    enum Admission: Sendable {
        case lead(Flight)
        case join(Flight)
        case mismatch
    }

    let records: any IdempotencyRepository
    /// This instance's name in the records: random per start, so a restarted instance never
    /// takes its predecessor's running keys for its own.
    let owner: String
    let settings: Settings
    let metrics: IdempotencyMetrics
    private let clock: @Sendable () -> Instant
    private let faults: StoreFaults?
    private let logger: Logger
    private let flights = Mutex<[String: Flight]>([:])
    /// Set for records one gateway process owns (SQLite): its running keys are the flights in
    /// its memory, so a key costs a look before it runs and one write of its answer, and the
    /// writes of requests at once share a commit.
    private let batcher: IdempotencyBatcher?
    /// With the same store: the keys it keeps, so that a new key needs no look in it.
    private let kept: KeptKeyFilter?
    private let keptKeys: KeptKeys?

    /// Reports every key a store this process owns keeps, as `(scope, key)`.
    typealias KeptKeys =
        @Sendable (_ nowMilliseconds: Int64, _ add: @escaping @Sendable (String, String) -> Void)
        async throws(StoreError) -> Void

    init(
        records: any IdempotencyRepository, batched: Bool = false, keptKeys: KeptKeys? = nil, settings: Settings,
        metrics: IdempotencyMetrics,
        faults: StoreFaults?, logger: Logger, clock: @escaping @Sendable () -> Instant,
        owner: String = "gw_" + SHA256.hexString(SecureRandom.bytes(8))
    ) {
        self.records = records
        batcher = batched ? IdempotencyBatcher(records: records, clock: clock) : nil
        self.keptKeys = batched ? keptKeys : nil
        kept = batched && keptKeys != nil ? KeptKeyFilter() : nil
        self.settings = settings
        self.metrics = metrics
        self.faults = faults
        self.logger = logger
        self.clock = clock
        self.owner = owner
    }

    private func perform(_ write: IdempotencyWrite, now: Int64) async throws(StoreError) -> IdempotencyWritten {
        if let batcher { return try await batcher.write(write) }
        return try await records.applyIdempotent([write], nowMilliseconds: now).first ?? .done
    }

    /// The flight this request leads, or the one it joins.
    func admit(_ ticket: Ticket, requestID: String) -> Admission {
        flights.withLock { flights in
            if let flight = flights[ticket.flightKey] {
                return flight.fingerprint == ticket.fingerprint ? .join(flight) : .mismatch
            }
            let flight = Flight(fingerprint: ticket.fingerprint, requestID: requestID)
            flights[ticket.flightKey] = flight
            return .lead(flight)
        }
    }

    /// Asks the records whether `flight` may run, and tells those waiting on it. Unless it
    /// runs, the flight is over at once.
    private func start(_ ticket: Ticket, flight: Flight, now: Int64) -> IdempotencyStart {
        IdempotencyStart(
            scope: ticket.scope, key: ticket.key, fingerprint: ticket.fingerprint, requestID: flight.requestID,
            owner: owner,
            leaseUntilMilliseconds: now + Int64(settings.lease / .milliseconds(1))
        )
    }

    func begin(_ ticket: Ticket, flight: Flight) async -> Flight.Decision {
        let now = milliseconds(clock())
        let start = start(ticket, flight: flight, now: now)
        let decision: Flight.Decision
        if let kept, !kept.mightContain(ticket.flightKey) {
            // Never kept, and not running here (the flight is this request's): it runs.
            metrics.count(.started)
            flight.decision.set(.run)
            return .run
        }
        do throws(StoreError) {
            guard case .begun(let begun) = try await perform(batcher == nil ? .begin(start) : .lookup(start), now: now)
            else {
                throw StoreError(.other, message: "idempotency records: a begin without its result")
            }
            decision = Flight.Referral(begun).map(Flight.Decision.refer) ?? .run
        } catch {
            // Unrecorded, a retry could pay again: refuse rather than run unprotected.
            faults?.record(error, operation: .idempotency)
            decision = .failed(.storeUnavailable)
        }
        if case .run = decision { metrics.count(.started) } else { land(ticket) }
        flight.decision.set(decision)
        return decision
    }

    /// Keeps a successful answer for the time to live, then lets joiners have it.
    func complete(_ ticket: Ticket, flight: Flight, answer: StoredAnswer) async {
        let now = milliseconds(clock())
        let expires = now + Int64(ticket.timeToLive / .milliseconds(1))
        if let batcher {
            // A store this process owns: the answer is this process's from now (retries join
            // the flight until its row is written), so the response need not wait for the write.
            flight.answer.set(.whole(.success(answer)))
            keep(
                .keep(start(ticket, flight: flight, now: now), answer: answer, expiresAtMilliseconds: expires),
                ticket: ticket, batcher: batcher)
            return
        }
        let write = IdempotencyWrite.complete(
            scope: ticket.scope, key: ticket.key, owner: owner, answer: answer, expiresAtMilliseconds: expires)
        do throws(StoreError) {
            let written = try await perform(write, now: now)
            // Taken over after the lease ran out: the other instance's answer is the key's.
            if written != .completed(true) {
                logger.warning("idempotency_key_taken_over", [("request_id", .string(flight.requestID))])
            }
        } catch {
            faults?.record(error, operation: .idempotency)
        }
        land(ticket)
        flight.answer.set(.whole(.success(answer)))
    }

    /// Writes a kept answer, again after a failed batch (counted each time), up to
    /// ``keepAttempts`` times; the flight serves retries until then.
    private func keep(_ write: IdempotencyWrite, ticket: Ticket, batcher: IdempotencyBatcher, attempt: Int = 1) {
        batcher.submit(write) { [self] result in
            switch result {
            case .success:
                kept?.insert(ticket.flightKey)
            case .failure(let error):
                faults?.record(error, operation: .idempotency)
                if attempt < Self.keepAttempts {
                    keep(write, ticket: ticket, batcher: batcher, attempt: attempt + 1)
                    return
                }
                logger.warning("idempotency_answer_not_kept", [("attempts", .int(attempt))])
            }
            land(ticket)
        }
    }

    static let keepAttempts = 3

    /// Gives the key back after a failure (the retry tries again), then tells joiners.
    func release(_ ticket: Ticket, flight: Flight, error: GatewayError) async {
        // With running keys in memory only, the store has nothing to give back.
        if batcher == nil {
            do throws(StoreError) {
                _ = try await perform(.release(scope: ticket.scope, key: ticket.key, owner: owner), now: 0)
            } catch {
                // The lease ends it: a retry is refused with 409 until then.
                faults?.record(error, operation: .idempotency)
            }
        }
        metrics.count(.released)
        land(ticket)
        flight.answer.set(.whole(.failure(error)))
    }

    /// A retry was answered from a kept answer or joined one: the record counts it.
    func noteReplay(_ ticket: Ticket, role: IdempotencyRole) async {
        metrics.count(role == .joined ? .joined : .replayed)
        do throws(StoreError) {
            _ = try await perform(.replay(scope: ticket.scope, key: ticket.key), now: 0)
        } catch {
            faults?.record(error, operation: .idempotency)
        }
    }

    /// Builds the kept-key filter afresh from the store (at start, then hourly): until it is
    /// built every key is looked up, and a rebuild forgets the keys that expired.
    func rebuildKeptKeys() async {
        guard let kept, let keptKeys else { return }
        let now = milliseconds(clock())
        do {
            try await kept.rebuild { add in
                try await keptKeys(now) { scope, key in add(scope + "\u{1F}" + key) }
            }
        } catch let error as StoreError {
            faults?.record(error, operation: .idempotency)
        } catch {
            logger.warning("idempotency_filter_failed", [("error", .string("\(error)"))])
        }
    }

    /// Deletes the expired records; a periodic service calls it every minute.
    func purge() async {
        do throws(StoreError) {
            _ = try await records.purgeExpiredIdempotent(nowMilliseconds: milliseconds(clock()))
        } catch {
            faults?.record(error, operation: .purge)
        }
    }

    /// Deletes the answers kept for `userID` on `paths` (the routes that take the key): those
    /// of `requestID`, or all of them; how many.
    func deleteKept(userID: String, paths: [String], requestID: String?) async throws(StoreError) -> Int {
        try await records.deleteKeptIdempotent(
            scopes: paths.map { Self.scope(caller: "user:" + userID, path: $0) }, requestID: requestID)
    }

    private func land(_ ticket: Ticket) {
        _ = flights.withLock { $0.removeValue(forKey: ticket.flightKey) }
    }

    private func milliseconds(_ instant: Instant) -> Int64 {
        Int64((instant.secondsSinceEpoch * 1000).rounded(.down))
    }
}

/// `textgateway_idempotency_total{result}`.
struct IdempotencyMetrics: Sendable {
    enum Result: String, CaseIterable, Sendable {
        /// A first request with its key.
        case started
        /// A retry answered from a kept answer.
        case replayed
        /// A retry that joined the first while it ran on the same instance.
        case joined
        /// `409`: the first still runs on another instance.
        case conflict
        /// `422`: the key came with another request.
        case mismatch
        /// A failed first answer gave its key back.
        case released
        /// A first answer completed, kept and charged after its client had gone.
        case completedAfterClientLeft = "completed_after_client_left"
    }

    private let counters: [Result: Counter]

    init(registry: MetricsRegistry) {
        let family = registry.counter(
            "textgateway_idempotency_total", help: "Requests with an Idempotency-Key, by what became of them.",
            labels: ["result"]
        )
        counters = Dictionary(uniqueKeysWithValues: Result.allCases.map { ($0, family.labels($0.rawValue)) })
    }

    func count(_ result: Result) {
        counters[result]?.increment()
    }
}
