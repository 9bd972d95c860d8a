public import Foundation

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// A client of a TextGateway server: text tasks, streamed or not, the caller's usage and
/// history, and long texts as jobs.
///
/// ```swift
/// let client = TextGatewayClient(baseURL: URL(string: "https://gateway.example.com")!, token: "tgk_…")
/// let summary = try await client.process(.summarize, text: article)
/// for try await event in client.stream(.rewrite, text: draft, tone: .formal) { … }
/// ```
///
/// An app without sign-in proves it is genuine with App Attest instead of a token:
///
/// ```swift
/// let client = TextGatewayClient(baseURL: gatewayURL, deviceAttestor: AppAttestDeviceAttestor())
/// ```
///
/// Failures the gateway answered are thrown as ``TextGatewayError``; transport failures
/// (offline, timeout, cancellation) as `URLError`.
public struct TextGatewayClient: Sendable {
    /// The gateway's root, such as `https://gateway.example.com`; routes are under `/api`.
    public let baseURL: URL
    /// The caller's token, sent as `Authorization: Bearer`.
    public let token: String?
    /// The session non-streaming calls use; each stream gets a session of its own with the
    /// same configuration.
    public let session: URLSession
    /// Whether busy answers of non-streaming calls are retried.
    public let retry: RetryPolicy
    /// The App Attest session whose token every call sends as its bearer, when the client
    /// was made with one (``token`` is then `nil`).
    public let deviceSession: DeviceSession?

    /// A client of the gateway at `baseURL`.
    /// - Parameters:
    ///   - baseURL: The gateway's root URL.
    ///   - token: A caller token (`tgk_…`) or sign-in JWT, sent as a bearer token.
    ///   - session: The session for non-streaming calls (and whose configuration streams copy).
    ///   - retry: ``RetryPolicy/none`` (the default) or ``RetryPolicy/retryingBusy(maxAttempts:maxDelay:)``.
    public init(baseURL: URL, token: String? = nil, session: URLSession = .shared, retry: RetryPolicy = .none) {
        self.baseURL = baseURL
        self.token = token
        self.session = session
        self.retry = retry
        self.deviceSession = nil
    }

    /// A client that proves each call comes from a genuine copy of the app on a real device
    /// (App Attest), for apps without sign-in: it registers the device once, then sends a
    /// short-lived device session token as its bearer, renewed before it expires.
    ///
    /// A call answered `401 invalid_token` (the session ended early, the device was revoked)
    /// renews the session and is sent once more; a second refusal is thrown.
    /// - Parameters:
    ///   - baseURL: The gateway's root URL.
    ///   - deviceAttestor: The device's key: ``AppAttestDeviceAttestor`` on iOS.
    ///   - session: The session for the calls, the attest calls included.
    ///   - retry: ``RetryPolicy/none`` (the default) or ``RetryPolicy/retryingBusy(maxAttempts:maxDelay:)``.
    public init(
        baseURL: URL, deviceAttestor: any DeviceAttestor, session: URLSession = .shared, retry: RetryPolicy = .none
    ) {
        self.init(
            baseURL: baseURL,
            deviceSession: DeviceSession(baseURL: baseURL, attestor: deviceAttestor, session: session),
            session: session, retry: retry)
    }

    /// A client whose calls carry `deviceSession`'s token, as
    /// ``init(baseURL:deviceAttestor:session:retry:)`` does; for a session shared between
    /// clients or made with its own clock.
    public init(baseURL: URL, deviceSession: DeviceSession, session: URLSession = .shared, retry: RetryPolicy = .none) {
        self.baseURL = baseURL
        self.token = nil
        self.session = session
        self.retry = retry
        self.deviceSession = deviceSession
    }

    // MARK: Text tasks

    /// Runs one task on `text` (`POST /api/process`).
    /// - Parameters:
    ///   - task: What to do with the text.
    ///   - text: 20 to 12,000 characters once trimmed.
    ///   - tone: The register of the answer, if any.
    ///   - format: ``OutputFormat/json`` adds typed ``ProcessResult/data``.
    ///   - idempotencyKey: The call's `Idempotency-Key`: a new UUID by default, sent again by
    ///     this call's retries, so the gateway answers a retry with the answer it kept and
    ///     charges it once. Pass a key kept with a pending call to resume it after the app was
    ///     backgrounded; `nil` sends none.
    /// - Returns: The answer, its request id and its token usage.
    /// - Throws: ``TextGatewayError`` for the gateway's errors, `URLError` for transport failures.
    public func process(
        _ task: TextTask, text: String, tone: Tone? = nil, format: OutputFormat = .text,
        idempotencyKey: String? = UUID().uuidString
    ) async throws -> ProcessResult {
        let body = ProcessBody(task: task, text: text, tone: tone, format: format, stream: nil)
        let (data, _) = try await send(request("POST", "api/process", body: body, idempotencyKey: idempotencyKey))
        let wire = try Self.decode(ProcessResultWire.self, from: data)
        return wire.value(for: task)
    }

    /// Runs one task on `text` and streams the answer as it is written (server-sent events).
    ///
    /// Events come in order: ``StreamEvent/start(requestId:)``, any number of
    /// ``StreamEvent/delta(_:text:)``, then one ``StreamEvent/done(_:)``. An error before the
    /// stream starts, or a terminal `error` event, is thrown as ``TextGatewayError``.
    /// Cancelling the task that iterates the stream (or dropping the stream) cancels the
    /// transfer; without an `idempotencyKey` the gateway then aborts its upstream call, with
    /// one it completes and keeps the answer. Streams are never retried by the client: call
    /// again with the same key to resume one (the text so far comes in one `delta`, or the
    /// whole kept answer once it has ended).
    public func stream(
        _ task: TextTask, text: String, tone: Tone? = nil, format: OutputFormat = .text,
        idempotencyKey: String? = UUID().uuidString
    ) -> AsyncThrowingStream<StreamEvent, any Error> {
        let body = ProcessBody(task: task, text: text, tone: tone, format: format, stream: true)
        return events(of: { try request("POST", "api/process", body: body, idempotencyKey: idempotencyKey) }) { event in
            switch event.name {
            case "start":
                let start = try Self.decode(StartWire.self, from: Data(event.data.utf8))
                return (.start(requestId: start.requestId), .more)
            case "delta":
                let delta = try Self.decode(DeltaWire.self, from: Data(event.data.utf8))
                return (.delta(delta.delta, text: delta.text), .more)
            case "done":
                let done = try Self.decode(ProcessResultWire.self, from: Data(event.data.utf8))
                return (.done(done.value(for: task)), .last)
            case "error":
                throw Self.eventError(event.data)
            default:
                return nil
            }
        }
    }

    // MARK: Usage and history

    /// The caller's usage today and over the last 30 days, and its plan's limits (`GET /api/usage`).
    public func usage() async throws -> UsageReport {
        try Self.decode(UsageReport.self, from: try await send(request("GET", "api/usage")).0)
    }

    /// One page of the caller's history, newest first (`GET /api/history`).
    /// - Parameters:
    ///   - limit: Items per page, 1–100.
    ///   - before: The ``HistoryPage/nextCursor`` of the previous page, `nil` for the first.
    public func history(limit: Int = 20, before: String? = nil) async throws -> HistoryPage {
        var query = [URLQueryItem(name: "limit", value: String(limit))]
        if let before { query.append(URLQueryItem(name: "before", value: before)) }
        return try Self.decode(HistoryPage.self, from: try await send(request("GET", "api/history", query: query)).0)
    }

    /// Deletes one request of the caller's history (`DELETE /api/history/{id}`).
    public func deleteHistory(id: String) async throws {
        _ = try await send(request("DELETE", "api/history/" + Self.pathComponent(id)))
    }

    /// Deletes all of the caller's history (`DELETE /api/history`).
    public func deleteAllHistory() async throws {
        _ = try await send(request("DELETE", "api/history"))
    }

    // MARK: Jobs

    /// Submits a long text (up to the gateway's job limit, 200,000 characters by default) as a
    /// job (`POST /api/jobs`); follow it with ``jobEvents(id:)`` or ``job(id:)``.
    /// The same `idempotencyKey` (a new UUID per call by default) gives the same job.
    public func submitJob(
        _ task: TextTask, text: String, tone: Tone? = nil, format: OutputFormat = .text,
        idempotencyKey: String? = UUID().uuidString
    ) async throws -> JobSubmission {
        let body = ProcessBody(task: task, text: text, tone: tone, format: format, stream: nil)
        return try Self.decode(
            JobSubmission.self,
            from: try await send(request("POST", "api/jobs", body: body, idempotencyKey: idempotencyKey)).0)
    }

    /// A job as it is now (`GET /api/jobs/{id}`).
    public func job(id: String) async throws -> Job {
        try Self.decode(Job.self, from: try await send(request("GET", "api/jobs/" + Self.pathComponent(id))).0)
    }

    /// Cancels a job (`DELETE /api/jobs/{id}`); the job as the gateway left it.
    @discardableResult
    public func cancelJob(id: String) async throws -> Job {
        try Self.decode(Job.self, from: try await send(request("DELETE", "api/jobs/" + Self.pathComponent(id))).0)
    }

    /// A job's progress as it happens (`GET /api/jobs/{id}/events`): ``JobEvent/progress(done:total:)``
    /// at each change, then ``JobEvent/done(_:)`` when it succeeded. A failed or cancelled job
    /// ends the stream with a thrown ``TextGatewayError`` (its status `0`, its code the job's).
    public func jobEvents(id: String) -> AsyncThrowingStream<JobEvent, any Error> {
        events(of: { try request("GET", "api/jobs/" + Self.pathComponent(id) + "/events") }) { event in
            switch event.name {
            case "progress":
                let progress = try Self.decode(JobProgress.self, from: Data(event.data.utf8))
                return (.progress(done: progress.done, total: progress.total), .more)
            case "done":
                return (.done(try Self.decode(Job.self, from: Data(event.data.utf8))), .last)
            case "error":
                throw Self.eventError(event.data)
            default:
                return nil
            }
        }
    }
}

// MARK: - Requests

extension TextGatewayClient {
    private struct ProcessBody: Encodable {
        var task: TextTask
        var text: String
        var tone: Tone?
        var format: OutputFormat?
        var stream: Bool?

        init(task: TextTask, text: String, tone: Tone?, format: OutputFormat, stream: Bool?) {
            self.task = task
            self.text = text
            self.tone = tone
            self.format = format == .text ? nil : format
            self.stream = stream
        }
    }

    private struct StartWire: Decodable { var requestId: String }
    private struct DeltaWire: Decodable {
        var delta: String
        var text: String
    }
    private struct NoBody: Encodable {}

    private func request(_ method: String, _ path: String, query: [URLQueryItem] = []) throws -> URLRequest {
        try request(method, path, query: query, body: NoBody?.none)
    }

    private func request(
        _ method: String, _ path: String, query: [URLQueryItem] = [], body: (some Encodable)?,
        idempotencyKey: String? = nil
    ) throws -> URLRequest {
        var url = baseURL.appendingPathComponent(path)
        if !query.isEmpty, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) {
            components.queryItems = query
            url = components.url ?? url
        }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let idempotencyKey { request.setValue(idempotencyKey, forHTTPHeaderField: "Idempotency-Key") }
        if let body {
            // Sorted keys: the same call encodes to the same bytes, as a resumed call's
            // Idempotency-Key needs (the gateway compares the bodies).
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            request.httpBody = try encoder.encode(body)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        return request
    }

    /// Sends `request`, retrying busy answers as ``retry`` says, and once more with a renewed
    /// device session when its token was refused; the body of a 2xx answer.
    private func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        var attempt = 1
        var renewed = false
        while true {
            var request = request
            // Asked at every attempt: a busy retry's wait may outlast the token.
            let bearer = try await deviceSession?.token()
            if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
            let data: Data
            let response: URLResponse
            do {
                (data, response) = try await session.data(for: request)
            } catch let error as URLError {
                // With a key, a connection lost mid-answer is safe to try again: the gateway
                // finished the answer and kept it, and hands it over without charging again.
                guard request.value(forHTTPHeaderField: "Idempotency-Key") != nil,
                    let delay = retry.delay(afterTransportError: error, attempt: attempt)
                else { throw error }
                try await Task.sleep(for: delay)
                attempt += 1
                continue
            }
            guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
            if (200..<300).contains(http.statusCode) { return (data, http) }
            let error = Self.error(status: http.statusCode, body: Array(data), headers: http)
            if let deviceSession, let bearer, error.isTokenRefused, !renewed {
                renewed = true
                _ = try await deviceSession.renew(replacing: bearer)
                continue
            }
            guard let delay = retry.delay(after: error, attempt: attempt) else { throw error }
            try await Task.sleep(for: delay)
            attempt += 1
        }
    }

    /// A stream of the events `interpret` makes of the server-sent events `request` answers.
    private func events<Event: Sendable>(
        of request: () throws -> URLRequest,
        interpret: @escaping @Sendable (ServerSentEvent) throws -> (Event, EventDisposition)?
    ) -> AsyncThrowingStream<Event, any Error> {
        let (stream, continuation) = AsyncThrowingStream<Event, any Error>.makeStream()
        var urlRequest: URLRequest
        do {
            urlRequest = try request()
        } catch {
            continuation.finish(throwing: error)
            return stream
        }
        urlRequest.setValue("text/event-stream", forHTTPHeaderField: "Accept")
        let onEvent: @Sendable (ServerSentEvent) throws -> EventDisposition = { event in
            guard let (value, disposition) = try interpret(event) else { return .more }
            continuation.yield(value)
            return disposition
        }
        guard let deviceSession else {
            let task = transferTask(
                urlRequest, onEvent: onEvent, onEnd: { error in continuation.finish(throwing: error) })
            continuation.onTermination = { _ in task.cancel() }
            task.resume()
            return stream
        }
        let baseRequest = urlRequest
        let work = Task {
            do {
                var bearer = try await deviceSession.token()
                var renewed = false
                while true {
                    var request = baseRequest
                    request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization")
                    do {
                        try await transfer(request, onEvent: onEvent)
                        break
                    } catch let error as TextGatewayError where error.isTokenRefused && !renewed {
                        // Refused before its first event: nothing was shown, so sending it again is safe.
                        renewed = true
                        bearer = try await deviceSession.renew(replacing: bearer)
                    }
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in work.cancel() }
        return stream
    }

    /// One event stream's transfer on a session of its own, not yet resumed; `onEnd` is called once.
    private func transferTask(
        _ request: URLRequest,
        onEvent: @escaping @Sendable (ServerSentEvent) throws -> EventDisposition,
        onEnd: @escaping EventStreamDelegate.End
    ) -> URLSessionDataTask {
        let delegate = EventStreamDelegate(onEvent: onEvent, onEnd: onEnd)
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let streamSession = URLSession(configuration: session.configuration, delegate: delegate, delegateQueue: queue)
        return streamSession.dataTask(with: request)
    }

    /// One event stream's transfer, returning when its last event came and throwing how it
    /// failed otherwise; cancelling the calling task cancels the transfer.
    private func transfer(
        _ request: URLRequest, onEvent: @escaping @Sendable (ServerSentEvent) throws -> EventDisposition
    ) async throws {
        let handle = TransferHandle()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, any Error>) in
                handle.start(
                    transferTask(request, onEvent: onEvent) { error in
                        if let error { done.resume(throwing: error) } else { done.resume() }
                    })
            }
        } onCancel: {
            handle.cancel()
        }
    }

    /// The ``TextGatewayError`` of a non-2xx answer.
    static func error(status: Int, body: [UInt8], headers: HTTPURLResponse) -> TextGatewayError {
        let wire = try? JSONDecoder().decode(ErrorWire.self, from: Data(body))
        let retryAfter = headers.value(forHTTPHeaderField: "Retry-After").flatMap { retryAfterSeconds($0, now: Date()) }
        return TextGatewayError(
            status: status,
            code: wire?.code ?? "http_\(status)",
            message: wire?.message ?? wire?.reason ?? HTTPURLResponse.localizedString(forStatusCode: status),
            requestId: wire?.requestId ?? headers.value(forHTTPHeaderField: "X-Request-Id"),
            retryAfter: retryAfter,
            isTokenRefused: status == 401 && refusesToken(headers.value(forHTTPHeaderField: "WWW-Authenticate")),
            attestError: wire?.attestError
        )
    }

    /// The seconds a `Retry-After` value asks for: delta-seconds, or an HTTP-date (RFC 9110
    /// §10.2.3, which a proxy in front of the gateway may send) counted from `now`, rounded up.
    static func retryAfterSeconds(_ value: String, now: Date) -> Int? {
        let value = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(value) { return seconds >= 0 ? seconds : nil }
        guard let date = httpDate(value) else { return nil }
        return max(0, Int(date.timeIntervalSince(now).rounded(.up)))
    }

    /// Whether a `WWW-Authenticate` value is the Bearer challenge of RFC 6750 §3.1 saying the
    /// token that came was refused (`Bearer error="invalid_token"`).
    static func refusesToken(_ challenge: String?) -> Bool {
        guard let challenge else { return false }
        let lowered = challenge.lowercased()
        return lowered.hasPrefix("bearer") && lowered.contains("invalid_token")
    }

    /// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form RFC 9110 says senders use.
    static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.date(from: text)
    }

    /// The ``TextGatewayError`` of an `error` event's data.
    static func eventError(_ data: String) -> TextGatewayError {
        let wire = try? JSONDecoder().decode(ErrorWire.self, from: Data(data.utf8))
        return TextGatewayError(
            status: wire?.status ?? 0,
            code: wire?.code ?? "stream_error",
            message: wire?.message ?? wire?.reason ?? data,
            requestId: wire?.requestId
        )
    }

    // Value types, made once: a formatter per date decoded was most of a history page's cost.
    private static let fractionalDates = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    private static let wholeSecondDates = Date.ISO8601FormatStyle()

    static func decode<Value: Decodable>(_ type: Value.Type, from data: Data) throws -> Value {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            if let date = try? Date(text, strategy: Self.fractionalDates) { return date }
            if let date = try? Date(text, strategy: Self.wholeSecondDates) { return date }
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: decoder.codingPath, debugDescription: "not an ISO 8601 date: \(text)")
            )
        }
        return try decoder.decode(type, from: data)
    }

    private static func pathComponent(_ id: String) -> String {
        id.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/")))
            ?? id
    }
}
