import EventLoop

/// One connection to the server, confined to one ``EventLoop`` and never blocking it.
///
/// libpq runs in non-blocking mode with its socket in the loop's epoll: connecting is
/// `PQconnectPoll` driven by readiness, a query is `PQsendQueryParams` then `PQflush` until
/// it returns 0 (watching for writability meanwhile), and results are read with
/// `PQconsumeInput` and taken with `PQgetResult` only once `PQisBusy` says it will not wait.
///
/// Jobs (a query, or the queries of a transaction) wait in a FIFO and run one at a time. A
/// transaction's queries go out together in libpq's pipeline mode — BEGIN, the queries and
/// COMMIT, then a sync point — so it costs one round trip; when one fails, the rest are
/// skipped by the server and a ROLLBACK follows.
/// Each has a deadline, a loop timer: a job that waits past it fails; a job in flight is
/// cancelled with `PQcancel` on a thread of its own, and if the server does not answer soon
/// after, the connection is closed. A lost connection fails the job in flight with
/// ``PostgresError/Code/connection`` and is made again after a backoff with jitter; jobs
/// still waiting stay queued for the next connection.
final class PostgresConnection: Selectable {
    let loop: EventLoop
    private let configuration: PostgresConfiguration
    private var state: State = .idle
    /// Jobs waiting, oldest first from `pendingHead`: taking one does not shift the array.
    private var pending: [Job] = []
    private var pendingHead = 0
    private var inFlight: Job?
    /// Failed attempts since the last connection that worked: the backoff's exponent.
    private var failures = 0
    /// A `PQcancel` still on its way: the next job waits for it, so the cancel cannot hit it.
    private var cancelInProgress = false
    private var stopCompletions: [() -> Void] = []
    /// Why the last connection attempt failed (libpq's message: host, port and user, never
    /// the password), until one succeeds.
    private var lastConnectError: String?
    private var stopTimer: TimerID?

    private enum State {
        /// Not started yet.
        case idle
        /// Resolving the host name on a thread of its own (`getaddrinfo` blocks).
        case resolving
        /// Waiting to try again after a failure.
        case waiting(TimerID)
        case connecting(LibPQConnection, fd: CInt, timer: TimerID)
        case ready(LibPQConnection, fd: CInt, writing: Bool)
        case closed
    }

    /// A unit of work: its wire queries in order. A transaction's are BEGIN, the caller's, COMMIT.
    final class Job {
        let id: UInt64
        let queries: [PostgresQuery]
        let transactional: Bool
        let completion: (Result<[PostgresResult], PostgresError>) -> Void
        /// The query being run (or next to run).
        var step = 0
        var results: [PostgresResult] = []
        /// This step's outcome so far: results come until `PQgetResult` returns NULL.
        var stepResult: Result<PostgresResult, PostgresError>?
        /// Set once a transaction's query failed: ROLLBACK is in flight, then the job fails with it.
        var failure: PostgresError?
        var deadlineTimer: TimerID?
        /// Why the job is being cancelled (timeout or the caller's), once it is.
        var cancelReason: PostgresError.Code?
        var sent = false
        /// A transaction's queries are in a pipeline whose results are still coming.
        var inPipeline = false
        /// The first error of the pipeline, reported once its sync point arrives.
        var pipelineError: PostgresError?

        init(
            id: UInt64, queries: [PostgresQuery], transactional: Bool,
            completion: @escaping (Result<[PostgresResult], PostgresError>) -> Void
        ) {
            self.id = id
            self.queries = transactional ? [PostgresQuery("BEGIN")] + queries + [PostgresQuery("COMMIT")] : queries
            self.transactional = transactional
            self.completion = completion
        }

        /// The SQL an error names when no statement of the job ran: the caller's first.
        var summarySQL: String? {
            transactional ? queries.dropFirst().first?.sql : queries.first?.sql
        }

        var current: PostgresQuery {
            failure == nil ? queries[min(step, queries.count - 1)] : PostgresQuery("ROLLBACK")
        }
    }

    init(loop: EventLoop, configuration: PostgresConfiguration) {
        self.loop = loop
        self.configuration = configuration
    }

    /// Whether a connection is up now (for tests and metrics).
    var isConnected: Bool {
        if case .ready = state { return true }
        return false
    }

    /// Jobs queued or in flight (for picking the least busy connection).
    var load: Int { pending.count - pendingHead + (inFlight == nil ? 0 : 1) }

    // MARK: - Starting and stopping

    /// Starts connecting; a failure is retried after a backoff, for as long as the connection lives.
    func start() {
        guard case .idle = state else { return }
        connect()
    }

    /// Stops taking jobs, lets those queued or in flight finish until `deadline` (while
    /// connected), then fails the rest with ``PostgresError/Code/closed`` and closes.
    func stop(deadline: MonotonicInstant, completion: @escaping () -> Void) {
        if case .closed = state {
            completion()
            return
        }
        stopCompletions.append(completion)
        guard stopTimer == nil else { return }
        if case .ready = state, load > 0 {
            stopTimer = loop.scheduleTimer(at: deadline) { [weak self] in
                guard let self else { return }
                self.stopTimer = nil
                self.close()
            }
        } else {
            close()
        }
    }

    private var isStopping: Bool { !stopCompletions.isEmpty }

    private func close() {
        if let stopTimer { loop.cancelTimer(stopTimer) }
        stopTimer = nil
        dropConnection()
        state = .closed
        let error = PostgresError(.closed, message: "the client is stopped")
        if let job = inFlight {
            inFlight = nil
            finish(job, .failure(error))
        }
        let waiting = pending[pendingHead...]
        pending = []
        pendingHead = 0
        for job in waiting { finish(job, .failure(error)) }
        let completions = stopCompletions
        stopCompletions = []
        for completion in completions { completion() }
    }

    /// Closes libpq's connection and forgets its socket and timers, whatever the state.
    private func dropConnection() {
        switch state {
        case .connecting(let connection, let fd, let timer):
            loop.cancelTimer(timer)
            loop.deregister(fd)
            connection.finish()
        case .ready(let connection, let fd, _):
            loop.deregister(fd)
            connection.finish()
        case .waiting(let timer):
            loop.cancelTimer(timer)
        case .idle, .resolving, .closed:
            break
        }
    }

    // MARK: - Jobs

    /// Queues `queries` (as one transaction when `transactional`) with a deadline;
    /// `completion` runs on the loop, once.
    func submit(
        id: UInt64, _ queries: [PostgresQuery], transactional: Bool, timeout: Duration,
        completion: @escaping (Result<[PostgresResult], PostgresError>) -> Void
    ) {
        if case .closed = state {
            completion(.failure(PostgresError(.closed, message: "the client is stopped")))
            return
        }
        if isStopping {
            completion(.failure(PostgresError(.closed, message: "the client is stopping")))
            return
        }
        for query in queries {
            if let problem = Self.problem(with: query) {
                completion(.failure(problem))
                return
            }
        }
        let job = Job(id: id, queries: queries, transactional: transactional, completion: completion)
        job.deadlineTimer = loop.scheduleTimer(at: MonotonicInstant.now().advanced(by: timeout)) {
            [weak self, weak job] in
            guard let self, let job else { return }
            job.deadlineTimer = nil
            self.abandon(job, reason: .timeout)
        }
        if queries.isEmpty {
            finish(job, .success([]))
            return
        }
        pending.append(job)
        startNext()
    }

    /// Cancels job `id` for its caller (a cancelled task); a job already done is left alone.
    func cancel(id: UInt64) {
        if let job = inFlight, job.id == id {
            abandon(job, reason: .cancelled)
        } else if let job = pending[pendingHead...].first(where: { $0.id == id }) {
            abandon(job, reason: .cancelled)
        }
    }

    private static func problem(with query: PostgresQuery) -> PostgresError? {
        if query.parameters.count > PostgresQuery.maxParameters {
            return PostgresError(
                .invalidQuery, message: "more than \(PostgresQuery.maxParameters) parameters", query: query.sql)
        }
        if query.sql.utf8.contains(0) {
            return PostgresError(.invalidQuery, message: "the SQL text contains a NUL byte", query: query.sql)
        }
        for case .text(let text) in query.parameters where text.utf8.contains(0) {
            return PostgresError(.invalidQuery, message: "a text parameter contains a NUL byte", query: query.sql)
        }
        return nil
    }

    /// A job's deadline passed or its caller went away: a queued job fails at once; one in
    /// flight is cancelled on the server, and fails when the server says so (or the
    /// connection is closed if it does not answer soon).
    private func abandon(_ job: Job, reason: PostgresError.Code) {
        if let index = pending[pendingHead...].firstIndex(where: { $0 === job }) {
            pending.remove(at: index)
            let error: PostgresError
            if reason == .timeout && !isConnected {
                let reason = lastConnectError.map { ": " + $0 } ?? ""
                error = PostgresError(
                    .connection, message: "no connection to the server within the query timeout" + reason,
                    query: job.summarySQL)
            } else if reason == .timeout {
                error = PostgresError(.timeout, message: "the query waited past its timeout", query: job.summarySQL)
            } else {
                error = PostgresError(.cancelled, message: "the caller was cancelled", query: job.summarySQL)
            }
            finish(job, .failure(error))
            return
        }
        guard inFlight === job, job.cancelReason == nil, case .ready(let connection, _, _) = state else { return }
        job.cancelReason = reason
        if let timer = job.deadlineTimer { loop.cancelTimer(timer) }
        if let canceller = connection.canceller() {
            cancelInProgress = true
            let this = LoopBound(self, loop: loop)
            DetachedThread.detach {
                _ = canceller.sendAndFree()
                this.withValue { connection in
                    connection.cancelInProgress = false
                    connection.startNext()
                }
            }
        }
        // The server may be gone without the socket saying so: give the cancel a while, then drop the connection.
        let grace = max(Duration.seconds(1), min(configuration.queryTimeout, .seconds(5)))
        job.deadlineTimer = loop.scheduleTimer(at: MonotonicInstant.now().advanced(by: grace)) {
            [weak self, weak job] in
            guard let self, let job else { return }
            job.deadlineTimer = nil
            guard self.inFlight === job else { return }
            self.lost("the server did not answer a cancel request")
        }
    }

    private func finish(_ job: Job, _ result: Result<[PostgresResult], PostgresError>) {
        if let timer = job.deadlineTimer { loop.cancelTimer(timer) }
        job.deadlineTimer = nil
        job.completion(result)
    }

    /// Sends the next job when connected, idle and no cancel is on its way.
    private func startNext() {
        guard inFlight == nil, !cancelInProgress, case .ready = state else { return }
        guard pendingHead < pending.count else {
            if isStopping { close() }
            return
        }
        let job = pending[pendingHead]
        pendingHead += 1
        if pendingHead == pending.count {
            pending.removeAll(keepingCapacity: true)
            pendingHead = 0
        } else if pendingHead >= 64 && pendingHead * 2 >= pending.count {
            pending.removeFirst(pendingHead)
            pendingHead = 0
        }
        inFlight = job
        send(job)
    }

    private func send(_ job: Job) {
        guard case .ready(let connection, _, _) = state else { return }
        if job.transactional && !job.sent {
            sendPipeline(job, connection)
            return
        }
        job.sent = true
        job.stepResult = nil
        guard connection.send(job.current) else {
            lost(connection.errorMessage)
            return
        }
        flush(connection)
    }

    /// Sends all of a transaction's queries and a sync point without waiting for results.
    private func sendPipeline(_ job: Job, _ connection: LibPQConnection) {
        job.sent = true
        job.inPipeline = true
        job.stepResult = nil
        guard connection.enterPipelineMode() else {
            lost(connection.errorMessage)
            return
        }
        for query in job.queries {
            guard connection.send(query) else {
                lost(connection.errorMessage)
                return
            }
        }
        guard connection.pipelineSync() else {
            lost(connection.errorMessage)
            return
        }
        flush(connection)
    }

    /// One result of a pipeline: each query's results end with nil (`step` moves on), the
    /// sync point ends the pipeline.
    private func pipelineReceived(_ job: Job, _ outcome: LibPQConnection.Outcome?, _ connection: LibPQConnection) {
        switch outcome {
        case nil:
            if case .success(let result)? = job.stepResult, job.step > 0, job.step < job.queries.count - 1 {
                job.results.append(result)
            }
            job.stepResult = nil
            job.step += 1
        case .result(let result)?:
            if job.stepResult == nil { job.stepResult = .success(result) }
        case .error(let error)?:
            if job.pipelineError == nil { job.pipelineError = reported(error, for: job) }
            job.stepResult = .failure(error)
        case .aborted?:
            break
        case .sync?:
            job.inPipeline = false
            guard connection.exitPipelineMode() else {
                lost(connection.errorMessage)
                return
            }
            if let error = job.pipelineError {
                // Whatever ran is undone: an explicit BEGIN leaves the transaction open and failed.
                job.failure = error
                send(job)
                return
            }
            inFlight = nil
            finish(job, .success(job.results))
            startNext()
        }
    }

    private func flush(_ connection: LibPQConnection) {
        guard case .ready(_, let fd, let writing) = state else { return }
        switch connection.flush() {
        case .done:
            if writing { watch(fd, writing: false, connection) }
        case .pending:
            if !writing { watch(fd, writing: true, connection) }
        case .failed:
            lost(connection.errorMessage)
        }
    }

    private func watch(_ fd: CInt, writing: Bool, _ connection: LibPQConnection) {
        do {
            try loop.reregister(fd, interest: writing ? [.read, .write] : [.read])
            state = .ready(connection, fd: fd, writing: writing)
        } catch {
            lost("epoll: \(error)")
        }
    }

    /// Takes every result libpq has without waiting; ends the step when the query is complete.
    private func readResults(_ connection: LibPQConnection) {
        // A step's end may send the next query, or lose the connection: check both each time.
        while isConnected, let job = inFlight, job.sent, !connection.isBusy {
            let outcome = connection.nextResult(query: job.current.sql)
            if job.inPipeline {
                pipelineReceived(job, outcome, connection)
                continue
            }
            switch outcome {
            case nil:
                stepEnded(job)
            case .result(let result)?:
                // The first error wins; a later result of the same query does not hide it.
                if case .failure = job.stepResult { continue }
                job.stepResult = .success(result)
            case .error(let error)?:
                if case .failure = job.stepResult { continue }
                job.stepResult = .failure(error)
            case .aborted?, .sync?:
                break // only in pipeline mode
            }
        }
    }

    /// A query outside a pipeline is complete (a transaction's closing ROLLBACK included).
    private func stepEnded(_ job: Job) {
        let outcome =
            job.stepResult ?? .success(PostgresResult(columns: [], columnTypes: [], rows: [], affectedRows: 0))
        job.stepResult = nil
        inFlight = nil
        if let failure = job.failure {
            finish(job, .failure(failure))
        } else {
            finish(job, outcome.map { [$0] }.mapError { self.reported($0, for: job) })
        }
        startNext()
    }

    /// A server error as the caller sees it: a cancel we asked for is our timeout or the
    /// caller's cancellation, not the server's 57014; the end of the session is a lost connection.
    private func reported(_ error: PostgresError, for job: Job) -> PostgresError {
        // A server that ends the session (shutdown, pg_terminate_backend) loses the connection.
        if error.code == .server, error.condition == .serverUnavailable || error.condition == .connectionException {
            return PostgresError(.connection, sqlState: error.sqlState, message: error.message, query: error.query)
        }
        guard let reason = job.cancelReason, error.condition == .queryCanceled else { return error }
        let message =
            reason == .timeout ? "the query ran past its timeout and was cancelled" : "the caller was cancelled"
        return PostgresError(reason, sqlState: error.sqlState, message: message, query: error.query)
    }

    // MARK: - Connecting

    private func connect() {
        if Self.needsResolution(configuration.host) {
            state = .resolving
            let host = configuration.host
            let port = configuration.port
            let this = LoopBound(self, loop: loop)
            DetachedThread.detach {
                let addresses = HostResolver.addresses(of: host, port: port)
                this.withValue { connection in
                    guard case .resolving = connection.state else { return }
                    guard !addresses.isEmpty else {
                        connection.state = .idle
                        connection.connectFailed("cannot resolve the host name \(host)")
                        return
                    }
                    connection.connect(hostAddresses: addresses)
                }
            }
        } else {
            connect(hostAddresses: [])
        }
    }

    /// Whether `host` is a name to look up: not a numeric address, not a socket directory.
    private static func needsResolution(_ host: String) -> Bool {
        !(host.hasPrefix("/") || host.hasPrefix("@") || NumericAddress.bytes(of: host) != nil)
    }

    private func connect(hostAddresses: [String]) {
        var parameters = configuration.libpqParameters
        if !hostAddresses.isEmpty {
            // With `hostaddr`, libpq looks nothing up; `host` stays for TLS's name check. Given
            // as lists of the same length, libpq tries each address in turn (IPv6, then IPv4).
            let names = Array(repeating: configuration.host, count: hostAddresses.count).joined(separator: ",")
            parameters = parameters.map { $0.0 == "host" ? ("host", names) : $0 }
            parameters.append(("hostaddr", hostAddresses.joined(separator: ",")))
        }
        let connection: LibPQConnection
        switch LibPQConnection.start(parameters) {
        case .failure(let error):
            connectFailed(error.message)
            return
        case .success(let started):
            connection = started
        }
        let fd = connection.socket
        guard fd >= 0 else {
            let message = connection.errorMessage
            connection.finish()
            connectFailed(message)
            return
        }
        do {
            // libpq's first step after starting is a write (the socket is connecting).
            try loop.register(fd, interest: .write, handler: self)
        } catch {
            connection.finish()
            connectFailed("epoll: \(error)")
            return
        }
        let timer = loop.scheduleTimer(at: MonotonicInstant.now().advanced(by: configuration.connectTimeout)) {
            [weak self] in
            guard let self else { return }
            guard case .connecting(let connection, let fd, _) = self.state else { return }
            self.loop.deregister(fd)
            connection.finish()
            self.state = .idle
            self.connectFailed("the connection attempt timed out")
        }
        state = .connecting(connection, fd: fd, timer: timer)
    }

    private func continueConnecting(_ connection: LibPQConnection, fd: CInt, timer: TimerID) {
        let status = connection.poll()
        let interest: SelectorInterest
        switch status {
        case .reading: interest = .read
        case .writing: interest = .write
        case .ok: interest = .read
        case .failed:
            let message = connection.errorMessage
            loop.cancelTimer(timer)
            loop.deregister(fd)
            connection.finish()
            state = .idle
            connectFailed(message)
            return
        }
        // The socket may be a new one (libpq tried the next address): watch whatever it is now.
        let current = connection.socket
        loop.deregister(fd)
        do {
            try loop.register(current, interest: interest, handler: self)
        } catch {
            loop.cancelTimer(timer)
            connection.finish()
            state = .idle
            connectFailed("epoll: \(error)")
            return
        }
        if status == .ok {
            loop.cancelTimer(timer)
            failures = 0
            lastConnectError = nil
            state = .ready(connection, fd: current, writing: false)
            startNext()
        } else {
            state = .connecting(connection, fd: current, timer: timer)
        }
    }

    /// An attempt failed: `message` is kept for the errors of calls that wait past their
    /// deadline meanwhile, and the next attempt comes after a backoff.
    private func connectFailed(_ message: String) {
        lastConnectError = message
        scheduleReconnect()
    }

    /// The connection broke: the job in flight fails (it may or may not have run), and a new
    /// connection is made after a backoff.
    private func lost(_ message: String) {
        dropConnection()
        state = .idle
        cancelInProgress = false
        if let job = inFlight {
            inFlight = nil
            let error: PostgresError
            if job.cancelReason == .timeout {
                error = PostgresError(
                    .timeout, message: "the query ran past its timeout; the connection was closed",
                    query: job.current.sql)
            } else {
                error = PostgresError(.connection, message: "connection lost: " + message, query: job.current.sql)
            }
            finish(job, .failure(error))
        }
        if isStopping {
            close()
            return
        }
        lastConnectError = "connection lost: " + message
        scheduleReconnect()
    }

    private func scheduleReconnect() {
        if isStopping {
            close()
            return
        }
        let delay = Self.backoff(
            failures: failures, min: configuration.minReconnectDelay, max: configuration.maxReconnectDelay)
        failures += 1
        let timer = loop.scheduleTimer(at: MonotonicInstant.now().advanced(by: delay)) { [weak self] in
            guard let self else { return }
            guard case .waiting = self.state else { return }
            self.state = .idle
            self.connect()
        }
        state = .waiting(timer)
    }

    /// The wait before attempt `failures + 1`: `min` doubled per failure up to `max`, then a
    /// random share between half and all of it, so instances that lost the same server do
    /// not all come back at the same instant.
    static func backoff(failures: Int, min minimum: Duration, max maximum: Duration) -> Duration {
        let base = minimum.nanosecondsClamped
        let cap = Swift.max(base, maximum.nanosecondsClamped)
        let shifted = failures >= 40 ? cap : Swift.min(cap, base << UInt64(failures))
        let low = shifted / 2
        let nanoseconds = low + UInt64.random(in: 0...(shifted - low))
        return .nanoseconds(Int64(clamping: nanoseconds))
    }

    // MARK: - Readiness

    func selectorEvents(_ events: SelectorEvents) {
        switch state {
        case .connecting(let connection, let fd, let timer):
            continueConnecting(connection, fd: fd, timer: timer)
        case .ready(let connection, _, let writing):
            if events.contains(.readable) || events.contains(.hangup) || events.contains(.error)
                || events.contains(.readHangup)
            {
                guard connection.consumeInput() else {
                    lost(connection.errorMessage)
                    return
                }
                if connection.isBad {
                    lost(connection.errorMessage)
                    return
                }
            }
            if writing {
                flush(connection)
                guard case .ready = state else { return }
            }
            readResults(connection)
        case .idle, .resolving, .waiting, .closed:
            break
        }
    }
}

@available(*, unavailable)
extension PostgresConnection: Sendable {}
