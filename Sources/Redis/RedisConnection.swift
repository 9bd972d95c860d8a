import CRedis
import EventLoop

#if canImport(Glibc)
    import Glibc
#endif

/// One connection to Redis, confined to one ``EventLoop``: hiredis's async context with its
/// socket in the loop's epoll, commands pipelined in a FIFO of pending replies, and one loop
/// timer on the oldest pending command (hiredis 0.14 has no timers of its own).
///
/// A timeout means a dead link, as in hiredis: the timed-out command fails with `.timeout`,
/// the connection closes, every other pending command fails with `.connectionClosed`, and
/// the connection is made again after a backoff with jitter. While it is not up, commands
/// fail at once (nothing queues without bound). Every hiredis call happens on the loop, and
/// none from inside a hiredis hook.
final class RedisConnection: Selectable {
    typealias Completion = (Result<RedisValue, RedisError>) -> Void

    enum State: Equatable {
        case idle
        /// Connecting, then AUTH / SELECT / SCRIPT LOAD (the handshake).
        case connecting
        case ready
        case waitingToReconnect
        /// Stop asked: no new commands, the pending ones finish or the deadline closes them.
        case stopping
        case stopped
    }

    let loop: EventLoop
    private let configuration: RedisConfiguration
    private let scripts: [RedisScript]
    private let status: RedisStatus
    private(set) var state: State = .idle
    private var context: UnsafeMutablePointer<redisAsyncContext>?
    /// The context's socket while registered with the loop.
    private var fd: CInt?
    private var interest: SelectorInterest = []
    /// hiredis has bytes to write (between its addWrite and delWrite hooks).
    private var wantsWrite = false
    private var flushScheduled = false
    /// Pending replies, oldest first, and when the timer on the oldest fires.
    private var pending = RedisPendingQueue<Completion>()
    /// The loop timer serving `pending`.
    private var timer: TimerID?
    private var reconnectTimer: TimerID?
    private var stopTimer: TimerID?
    private var stopped: (() -> Void)?
    private var backoff: RedisBackoff
    /// The SHA the server gave for each script's source on this connection.
    private var shas: [String: String] = [:]
    private var firstAttemptEnded: (() -> Void)?
    /// Why the last attempt or connection ended (for logs and tests); never holds a secret.
    private(set) var lastError: RedisError?

    init(loop: EventLoop, configuration: RedisConfiguration, scripts: [RedisScript], status: RedisStatus) {
        self.loop = loop
        self.configuration = configuration
        self.scripts = scripts
        self.status = status
        backoff = RedisBackoff(configuration.reconnectBackoff)
    }

    deinit {
        assert(context == nil, "RedisConnection dropped while connected: stop it first")
    }

    var pendingCount: Int { pending.count }

    // MARK: - Starting and stopping

    /// Starts connecting; `attemptEnded` runs once the first attempt succeeded or failed.
    func start(attemptEnded: @escaping () -> Void) {
        guard state == .idle else { return attemptEnded() }
        firstAttemptEnded = attemptEnded
        connect()
    }

    /// Takes no more commands, lets the pending ones finish until `deadline`, then closes.
    func stop(deadline: MonotonicInstant, done: @escaping () -> Void) {
        if let reconnectTimer { loop.cancelTimer(reconnectTimer) }
        reconnectTimer = nil
        switch state {
        case .stopped:
            return done()
        case .stopping:
            let earlier = stopped
            stopped = {
                earlier?()
                done()
            }
        case .ready where pendingCount > 0:
            status.disconnected()
            state = .stopping
            stopped = done
            stopTimer = loop.scheduleTimer(at: deadline) { [unowned self] in
                self.stopTimer = nil
                self.finishStopping()
            }
        default:
            if state == .ready { status.disconnected() }
            state = .stopping
            stopped = done
            finishStopping()
        }
    }

    private func finishStopping() {
        guard state == .stopping else { return }
        state = .stopped
        if let stopTimer { loop.cancelTimer(stopTimer) }
        stopTimer = nil
        closeContext(failingWith: RedisError(.shutdown))
        endFirstAttempt()
        stopped?()
        stopped = nil
    }

    // MARK: - Commands

    /// Sends a command when the connection is up; otherwise fails it at once.
    func send(_ arguments: [RedisArgument], call: RedisCall) {
        guard !call.isCancelled else { return call.finish(.failure(RedisError(.cancelled))) }
        guard state == .ready else { return call.finish(.failure(notUpError)) }
        enqueue(arguments, deadline: MonotonicInstant.now().advanced(by: configuration.timeout)) { call.finish($0) }
    }

    /// EVALSHA with the SHA this connection loaded; on `NOSCRIPT` (a `SCRIPT FLUSH`, a
    /// restarted server) the script is loaded again and run once more.
    func evalSHA(_ script: RedisScript, keys: [RedisArgument], arguments: [RedisArgument], call: RedisCall) {
        guard !call.isCancelled else { return call.finish(.failure(RedisError(.cancelled))) }
        guard state == .ready else { return call.finish(.failure(notUpError)) }
        let rest = [RedisArgument(keys.count)] + keys + arguments
        if let sha = shas[script.source] {
            runScript(script, sha: sha, rest, retryOnNoScript: true, call)
        } else {
            loadThenRun(script, rest, call)
        }
    }

    private func loadThenRun(_ script: RedisScript, _ rest: [RedisArgument], _ call: RedisCall) {
        loadScript(script) { [unowned self] result in
            switch result {
            case .success(let sha): self.runScript(script, sha: sha, rest, retryOnNoScript: false, call)
            case .failure(let error): call.finish(.failure(error))
            }
        }
    }

    private func runScript(
        _ script: RedisScript, sha: String, _ rest: [RedisArgument], retryOnNoScript: Bool, _ call: RedisCall
    ) {
        // Each command has a timeout of its own: after a NOSCRIPT (EVALSHA, SCRIPT LOAD, EVALSHA)
        // a call can wait up to three timeouts; otherwise one.
        enqueue(
            ["EVALSHA", RedisArgument(sha)] + rest, deadline: MonotonicInstant.now().advanced(by: configuration.timeout)
        ) {
            [unowned self] result in
            if retryOnNoScript, case .failure(let error) = result, error.serverErrorPrefix == "NOSCRIPT",
                self.state == .ready
            {
                self.shas[script.source] = nil
                self.loadThenRun(script, rest, call)
            } else {
                call.finish(result)
            }
        }
    }

    private func loadScript(
        _ script: RedisScript, deadline: MonotonicInstant? = nil,
        _ completion: @escaping (Result<String, RedisError>) -> Void
    ) {
        let deadline = deadline ?? MonotonicInstant.now().advanced(by: configuration.timeout)
        enqueue(["SCRIPT", "LOAD", RedisArgument(script.source)], deadline: deadline) { [unowned self] result in
            switch result {
            case .success(let value):
                guard let sha = value.string else {
                    return completion(.failure(RedisError(.protocol, "SCRIPT LOAD gave no SHA")))
                }
                self.shas[script.source] = sha
                completion(.success(sha))
            case .failure(let error):
                completion(.failure(error))
            }
        }
    }

    private var notUpError: RedisError {
        switch state {
        case .stopping, .stopped: return RedisError(.shutdown)
        default: return RedisError(.connectionFailed, "not connected")
        }
    }

    /// Hands a command to hiredis and waits for its reply in the FIFO.
    private func enqueue(_ arguments: [RedisArgument], deadline: MonotonicInstant, _ completion: @escaping Completion) {
        guard let context else { return completion(.failure(RedisError(.connectionClosed))) }
        let queued = Self.withArgv(arguments) { count, argv, lengths in
            CRedis_command(context, redisReplyCallback, Unmanaged.passUnretained(self).toOpaque(), count, argv, lengths)
        }
        guard queued == CRedis_OK else {
            return completion(.failure(RedisError(.connectionClosed, "the command was not queued")))
        }
        if case .set(let at) = pending.append(completion, deadline: deadline) { arm(at: at) }
        if wantsWrite && state != .connecting && !flushScheduled {
            // Written once the loop has run what else is ready now: commands of one turn go in one write.
            flushScheduled = true
            let bound = LoopBound(self, loop: loop)
            loop.execute { bound.value.flush() }
        }
    }

    /// Writes the commands queued so far now, instead of after the loop's turn: for a command
    /// that must reach the server before whatever the caller does next.
    func writeNow() {
        guard flushScheduled else { return }
        flush()
    }

    private func flush() {
        flushScheduled = false
        guard let context, wantsWrite else { return }
        redisAsyncHandleWrite(context)
        // What the socket did not take waits for it to be writable.
        if self.context != nil && wantsWrite { watch(.write, true) }
    }

    /// A reply (or, from a context being torn down, nil) for the oldest pending command.
    fileprivate func received(
        _ reply: UnsafeMutableRawPointer?, from replying: UnsafeMutablePointer<redisAsyncContext>?
    ) {
        // Replies of a context already given up were failed when it was: drop them.
        guard let replying, replying == context else { return }
        guard let reply else {
            return lost(RedisError(.connectionClosed, errorText(of: replying) ?? "connection closed"))
        }
        guard let completion = pending.popOldest() else { return }
        let result: Result<RedisValue, RedisError>
        do {
            let value = try RedisValue(reply: UnsafePointer(reply.assumingMemoryBound(to: redisReply.self)))
            if case .error(let message) = value {
                result = .failure(RedisError(.server, message))
            } else {
                result = .success(value)
            }
        } catch {
            result = .failure(error)
        }
        completion(result)
        if state == .stopping && pendingCount == 0 { finishStopping() }
    }

    // MARK: - The timer on the oldest command

    private func arm(at deadline: MonotonicInstant) {
        if let timer { loop.cancelTimer(timer) }
        timer = loop.scheduleTimer(at: deadline) { [unowned self] in
            self.timer = nil
            self.timerFired()
        }
    }

    private func timerFired() {
        guard context != nil else { return }
        switch pending.timerFired(now: .now()) {
        case .idle:
            break
        case .again(let deadline):
            arm(at: deadline)
        case .timedOut(let completion):
            completion(.failure(RedisError(.timeout)))
            closeContext(failingWith: RedisError(.connectionClosed, "closed after a timeout"))
        }
    }

    // MARK: - Connecting

    private func connect() {
        reconnectTimer = nil
        guard state == .idle || state == .waitingToReconnect else { return }
        // A host name is resolved here, blocking the loop: configure a numeric address for
        // a Redis whose name may resolve slowly.
        guard let created = redisAsyncConnect(configuration.host, Int32(configuration.port)) else {
            return attemptFailed(RedisError(.connectionFailed, "out of memory"))
        }
        if CRedis_err(created) != 0 {
            let text = errorText(of: created) ?? "connect failed"
            redisAsyncFree(created)
            return attemptFailed(RedisError(.connectionFailed, text))
        }
        let socket = CRedis_fd(created)
        context = created
        state = .connecting
        CRedis_attach(
            created, Unmanaged.passUnretained(self).toOpaque(), hookAddRead, hookDelRead, hookAddWrite, hookDelWrite,
            hookCleanup)
        do {
            try loop.register(socket, interest: interest, handler: self)
            fd = socket
        } catch {
            return closeContext(failingWith: RedisError(.connectionFailed, "epoll: \(error)"))
        }
        handshake()
    }

    /// AUTH, SELECT and the scripts, pipelined, under the connect timeout; up after the last reply.
    private func handshake() {
        let deadline = MonotonicInstant.now().advanced(by: configuration.connectTimeout)
        var steps: [(arguments: [RedisArgument], what: String)] = []
        if let password = configuration.password {
            let user = configuration.username.map { [RedisArgument($0)] } ?? []
            steps.append((["AUTH"] + user + [RedisArgument(password)], "AUTH"))
        }
        if configuration.database != 0 { steps.append((["SELECT", RedisArgument(configuration.database)], "SELECT")) }
        if steps.isEmpty && scripts.isEmpty { steps.append((["PING"], "PING")) }
        var remaining = steps.count + scripts.count
        let stepDone: (Result<Void, RedisError>, String) -> Void = { [unowned self] result, what in
            guard self.state == .connecting else { return }
            switch result {
            case .success:
                remaining -= 1
                if remaining == 0 { self.becameReady() }
            case .failure(let error):
                // The attempt failed; a server error here (WRONGPASS, a bad db) carries no secret.
                let reason = RedisError(
                    .connectionFailed, "\(what): \(error.message.isEmpty ? "\(error.code)" : error.message)")
                self.lastError = reason
                self.closeContext(failingWith: reason)
            }
        }
        for step in steps {
            enqueue(step.arguments, deadline: deadline) { result in stepDone(result.map { _ in () }, step.what) }
        }
        for script in scripts {
            loadScript(script, deadline: deadline) { result in stepDone(result.map { _ in () }, "SCRIPT LOAD") }
        }
    }

    private func becameReady() {
        state = .ready
        backoff.reset()
        status.connected()
        endFirstAttempt()
    }

    private func attemptFailed(_ error: RedisError) {
        lastError = error
        state = .waitingToReconnect
        scheduleReconnect()
        endFirstAttempt()
    }

    private func endFirstAttempt() {
        let ended = firstAttemptEnded
        firstAttemptEnded = nil
        ended?()
    }

    private func scheduleReconnect() {
        guard reconnectTimer == nil, state == .waitingToReconnect else { return }
        let delay = backoff.next()
        reconnectTimer = loop.scheduleTimer(at: MonotonicInstant.now().advanced(by: delay)) { [unowned self] in
            self.connect()
        }
    }

    // MARK: - Losing the connection

    /// Gives up the current context: stops watching its socket, fails every pending command
    /// with `reason`, and (unless stopping) reconnects later. Does not free the context.
    private func lost(_ reason: RedisError) {
        guard context != nil else { return }
        context = nil
        if let fd { loop.deregister(fd) }
        fd = nil
        interest = []
        wantsWrite = false
        if let timer { loop.cancelTimer(timer) }
        timer = nil
        shas = [:]
        let failed = pending.removeAll()
        switch state {
        case .ready:
            status.disconnected()
            state = .waitingToReconnect
        case .connecting:
            state = .waitingToReconnect
        default:
            break
        }
        if lastError == nil || reason.code != .shutdown { lastError = reason }
        for completion in failed { completion(.failure(reason)) }
        if state == .waitingToReconnect {
            scheduleReconnect()
            endFirstAttempt()
        }
        if state == .stopping { finishStopping() }
    }

    /// Closes the current context ourselves (timeout, failed handshake, stop).
    private func closeContext(failingWith reason: RedisError) {
        guard let closing = context else { return }
        lost(reason)
        // Its callbacks find the context given up and its cleanup hook finds nothing to do.
        // Called from a reply callback, hiredis frees it once that callback returns.
        redisAsyncFree(closing)
    }

    private func errorText(of context: UnsafePointer<redisAsyncContext>) -> String? {
        guard CRedis_err(context) != 0, let text = CRedis_errstr(context) else { return nil }
        return String(cString: text)
    }

    private func errorText(of context: UnsafeMutablePointer<redisAsyncContext>) -> String? {
        errorText(of: UnsafePointer(context))
    }

    // MARK: - The socket

    func selectorEvents(_ events: SelectorEvents) {
        guard let current = context else { return }
        if events.contains(.readable) || events.contains(.hangup) || events.contains(.error) {
            redisAsyncHandleRead(current)
        }
        if events.contains(.writable), let current = context {
            redisAsyncHandleWrite(current)
        }
    }

    fileprivate func hook(_ flag: SelectorInterest, _ on: Bool) {
        if flag == .write {
            wantsWrite = on
            // Once up, a write is tried right after the commands of this turn (``flush``);
            // while connecting, writability is what tells that the connect finished.
            if on && state != .connecting && !interest.contains(.write) { return }
        }
        watch(flag, on)
    }

    private func watch(_ flag: SelectorInterest, _ on: Bool) {
        var wanted = interest
        if on { wanted.insert(flag) } else { wanted.remove(flag) }
        guard wanted != interest else { return }
        interest = wanted
        if let fd { try? loop.reregister(fd, interest: wanted) } // a failure shows as a timeout
    }

    fileprivate func cleanupHook() {
        // hiredis is about to close the socket (an error, EOF, a failed connect, or our free).
        guard let dying = context else { return }
        lost(
            RedisError(
                state == .connecting ? .connectionFailed : .connectionClosed,
                errorText(of: dying) ?? "connection closed"))
    }

    // MARK: - C arguments

    /// Runs `body` with argc, argv and the lengths of `arguments` (binary-safe).
    static func withArgv<R>(
        _ arguments: [RedisArgument],
        _ body: (Int32, UnsafeMutablePointer<UnsafePointer<CChar>?>, UnsafePointer<Int>) -> R
    ) -> R {
        var flat: [UInt8] = []
        var lengths: [Int] = []
        lengths.reserveCapacity(arguments.count)
        for argument in arguments {
            flat += argument.bytes
            lengths.append(argument.bytes.count)
        }
        flat.append(0) // never empty, so the base address exists
        return flat.withUnsafeBufferPointer { bytes in
            let base = UnsafeRawPointer(bytes.baseAddress!).assumingMemoryBound(to: CChar.self)
            var pointers: [UnsafePointer<CChar>?] = []
            pointers.reserveCapacity(arguments.count)
            var offset = 0
            for length in lengths {
                pointers.append(base + offset)
                offset += length
            }
            return pointers.withUnsafeMutableBufferPointer { argv in
                lengths.withUnsafeBufferPointer { lengthsBuffer in
                    body(Int32(arguments.count), argv.baseAddress!, lengthsBuffer.baseAddress!)
                }
            }
        }
    }
}

@available(*, unavailable)
extension RedisConnection: Sendable {}

private func connection(_ data: UnsafeMutableRawPointer?) -> RedisConnection? {
    data.map { Unmanaged<RedisConnection>.fromOpaque($0).takeUnretainedValue() }
}

private let redisReplyCallback: CRedisReplyCallback = { context, reply, privdata in
    connection(privdata)?.received(reply, from: context)
}

private let hookAddRead: CRedisEventHook = { connection($0)?.hook(.read, true) }
private let hookDelRead: CRedisEventHook = { connection($0)?.hook(.read, false) }
private let hookAddWrite: CRedisEventHook = { connection($0)?.hook(.write, true) }
private let hookDelWrite: CRedisEventHook = { connection($0)?.hook(.write, false) }
private let hookCleanup: CRedisEventHook = { connection($0)?.cleanupHook() }
