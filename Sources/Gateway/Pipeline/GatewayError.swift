import Access
package import HTTP1
import Upstream

/// An error the gateway answers with: a status, a stable machine-readable code and a human
/// message in Persian (default) and English. The one place errors become HTTP is
/// ``ErrorRenderer``.
package struct GatewayError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What the error says, behind one reference. Every function on a request's path throws
    /// this type, and a typed throw's error travels through storage its caller keeps in its
    /// async frame: boxed, each of those frames keeps a word for it, not the fields' 200-odd
    /// bytes, and a request in flight holds those frames. Errors are the uncommon path, so a
    /// change makes a new box.
    private struct Fields: Sendable {
        let status: HTTPStatus
        let code: Code
        let persian: String
        let english: String
        var headers = HTTPHeaders()
        var openAI: OpenAIForm?
        var upstreamKind: UpstreamFailureKind?
        var refusal: RefusalReason?
        var budgetScope: BudgetScope?
        var upstreamElapsed: UInt64 = 0
        var attestError: String?
        var authFailure: String?
    }

    private final class Box: Sendable {
        let fields: Fields
        init(_ fields: Fields) { self.fields = fields }
    }

    private var box: Box
    private var fields: Fields {
        get { box.fields }
        set { box = Box(newValue) }
    }

    package var status: HTTPStatus { box.fields.status }
    package var code: Code { box.fields.code }
    var persian: String { box.fields.persian }
    var english: String { box.fields.english }
    /// Extra response fields (`Allow`, `Retry-After`).
    package var headers: HTTPHeaders {
        get { box.fields.headers }
        set { fields.headers = newValue }
    }
    /// How OpenAI's API says the same thing, where it differs: `/v1` clients get this status,
    /// code and `param` (their SDKs branch on them).
    var openAI: OpenAIForm? {
        get { box.fields.openAI }
        set { fields.openAI = newValue }
    }
    /// The kind of upstream failure this error answers, when it is one.
    var upstreamKind: UpstreamFailureKind? {
        get { box.fields.upstreamKind }
        set { fields.upstreamKind = newValue }
    }
    /// Why a rate limit or quota refused the request, when this error answers a refusal.
    var refusal: RefusalReason? {
        get { box.fields.refusal }
        set { fields.refusal = newValue }
    }
    /// The budget that refused the request (`caller`, `guests`, `devices`, `gateway`), sent as
    /// `scope`.
    var budgetScope: BudgetScope? {
        get { box.fields.budgetScope }
        set { fields.budgetScope = newValue }
    }
    /// How long the failed upstream call took, in nanoseconds (0 when none was made).
    var upstreamElapsed: UInt64 {
        get { box.fields.upstreamElapsed }
        set { fields.upstreamElapsed = newValue }
    }
    /// Why a device's registration or session was refused (the log's `attest_error`), sent
    /// as `attestError` so an app knows what to do: fetch a new challenge, register again, give up.
    var attestError: String? {
        get { box.fields.attestError }
        set { fields.attestError = newValue }
    }
    /// Why a presented credential was refused (a JWT's ``JWTFailure/reason``, an unknown
    /// token's kind), for the log's `auth_error` only: never sent.
    var authFailure: String? {
        get { box.fields.authFailure }
        set { fields.authFailure = newValue }
    }

    struct OpenAIForm: Sendable, Equatable {
        var status: HTTPStatus
        // One of the gateway's codes too: docs/openapi.yaml's OpenAI error shape takes its
        // `code` from `ErrorCode`, and every other `/v1` error sends the gateway's own code.
        var code: Code
        var param: String?
    }

    /// Every code the gateway answers with, in either shape (OpenAI's form's codes included):
    /// docs/openapi.yaml's `ErrorCode` lists them but for ``clientClosedRequest``, which no
    /// answer carries. The raw values are what the wire, the log and the ledger carry; they
    /// are spelled out so that renaming a case never changes one.
    package enum Code: String, Sendable, CaseIterable, CustomStringConvertible {
        case invalidJSON = "invalid_json"
        case invalidTask = "invalid_task"
        case invalidTone = "invalid_tone"
        case invalidFormat = "invalid_format"
        case textTooShort = "text_too_short"
        case invalidMessages = "invalid_messages"
        case invalidParameter = "invalid_parameter"
        case modelNotFound = "model_not_found"
        /// `/v1` only: the OpenAI form of ``textTooLong`` for a context overflow.
        case contextLengthExceeded = "context_length_exceeded"
        case badRequest = "bad_request"
        case unauthorized = "unauthorized"
        case notFound = "not_found"
        case methodNotAllowed = "method_not_allowed"
        case requestTimeout = "request_timeout"
        case textTooLong = "text_too_long"
        case bodyTooLarge = "body_too_large"
        case uriTooLong = "uri_too_long"
        case unsupportedMediaType = "unsupported_media_type"
        case rateLimited = "rate_limited"
        case tooManyJobs = "too_many_jobs"
        case budgetExceeded = "budget_exceeded"
        case headersTooLarge = "headers_too_large"
        case notConfigured = "not_configured"
        case internalError = "internal_error"
        case notImplemented = "not_implemented"
        case upstreamError = "upstream_error"
        case emptyResult = "empty_result"
        case invalidModelOutput = "invalid_model_output"
        case upstreamBusy = "upstream_busy"
        case storeUnavailable = "store_unavailable"
        case shuttingDown = "shutting_down"
        case upstreamTimeout = "upstream_timeout"
        case httpVersionNotSupported = "http_version_not_supported"
        /// A job's end, in its `error`; never an HTTP status.
        case cancelled = "cancelled"
        /// The client went away before its answer: the log and the ledger (so the caller's
        /// history) carry it, no answer does.
        case clientClosedRequest = "client_closed_request"
        case deviceAlreadyRegistered = "device_already_registered"
        case invalidIdempotencyKey = "invalid_idempotency_key"
        case idempotencyInProgress = "idempotency_in_progress"
        case idempotencyKeyReused = "idempotency_key_reused"

        // The wire's spelling wherever a code is interpolated, never the case's name.
        package var description: String { rawValue }
    }

    package var description: String { "\(status.code) \(code)" }

    package static func == (lhs: GatewayError, rhs: GatewayError) -> Bool {
        lhs.status == rhs.status && lhs.code == rhs.code && lhs.persian == rhs.persian
    }

    init(_ status: HTTPStatus, _ code: Code, _ persian: String, _ english: String) {
        box = Box(Fields(status: status, code: code, persian: persian, english: english))
    }

    /// The message in the client's language.
    package func message(_ language: Language) -> String {
        language == .english ? english : persian
    }

    static let invalidJSON = GatewayError(
        .badRequest, .invalidJSON, "ساختار درخواست معتبر نیست.", "The request body is not valid.")
    static let invalidTask = GatewayError(
        .badRequest, .invalidTask, "نوع عملیات معتبر نیست.", "The task is not valid.")
    static let invalidTone = GatewayError(
        .badRequest, .invalidTone, "لحن انتخاب‌شده معتبر نیست.", "The selected tone is not valid.")
    static let invalidFormat = GatewayError(
        .badRequest, .invalidFormat, "قالب پاسخ معتبر نیست.", "The response format is not valid.")
    static let textTooShort = GatewayError(
        .badRequest, .textTooShort, "متن باید حداقل ۲۰ کاراکتر باشد.",
        "The text must be at least 20 characters long.")
    static let unauthorized: GatewayError = {
        var error = GatewayError(.unauthorized, .unauthorized, "احراز هویت لازم است.", "Authentication is required.")
        error.headers.add(name: "WWW-Authenticate", value: "Bearer")
        return error
    }()
    /// A bearer token was presented and refused (RFC 6750 §3.1's `invalid_token`): a JWT that
    /// is expired, wrongly signed or malformed, or a token no configuration knows.
    static let invalidToken: GatewayError = {
        var error = GatewayError(.unauthorized, .unauthorized, "احراز هویت لازم است.", "Authentication is required.")
        error.headers.add(name: "WWW-Authenticate", value: "Bearer error=\"invalid_token\"")
        return error
    }()
    /// `/api/admin/…` without the admin token, or with another.
    static let adminUnauthorized: GatewayError = {
        var error = GatewayError(
            .unauthorized, .unauthorized, "توکن مدیریت لازم است.", "The admin token is required.")
        error.headers.add(name: "WWW-Authenticate", value: "Bearer realm=\"admin\"")
        return error
    }()
    /// `/api/admin/…` from an address that sent too many wrong admin tokens in a minute.
    static func adminLockedOut(retryAfterSeconds: Int) -> GatewayError {
        var error = GatewayError(
            .tooManyRequests, .rateLimited,
            "تلاش‌های ناموفق با توکن مدیریت از این نشانی بیش از حد مجاز است. لطفاً بعداً دوباره تلاش کنید.",
            "Too many wrong admin tokens from this address. Please try again later."
        )
        error.headers.add(name: "Retry-After", value: String(retryAfterSeconds))
        return error
    }
    /// `POST /api/admin/tokens` with a field the command line would refuse too.
    static func adminInvalidToken(field: String) -> GatewayError {
        GatewayError(
            .badRequest, .invalidParameter, "مقدار «\(field)» معتبر نیست.", "The field \(field) is not valid.")
    }
    static let rateLimited = GatewayError(
        .tooManyRequests, .rateLimited, "تعداد درخواست‌ها بیش از حد مجاز است. لطفاً بعداً دوباره تلاش کنید.",
        "Too many requests. Please try again later.")
    static let notFound = GatewayError(
        .notFound, .notFound, "مسیر درخواست‌شده وجود ندارد.", "The requested path does not exist.")
    static let methodNotAllowed = GatewayError(
        .methodNotAllowed, .methodNotAllowed, "این متد برای این مسیر پشتیبانی نمی‌شود.",
        "This method is not supported for this path.")
    static let textTooLong = GatewayError(
        .contentTooLarge, .textTooLong, "متن ورودی بیش از حد طولانی است.", "The input text is too long.")
    static let bodyTooLarge = GatewayError(
        .contentTooLarge, .bodyTooLarge, "حجم درخواست بیش از حد مجاز است.", "The request body is too large.")
    static let unsupportedMediaType = GatewayError(
        .unsupportedMediaType, .unsupportedMediaType, "نوع محتوای درخواست باید application/json باشد.",
        "The request content type must be application/json.")
    /// A body in a content coding other than `identity` (``ContentEncodingMiddleware``).
    static let unsupportedContentEncoding: GatewayError = {
        var error = GatewayError(
            .unsupportedMediaType, .unsupportedMediaType,
            "بدنهٔ درخواست نباید فشرده یا کدگذاری‌شده باشد (Content-Encoding).",
            "The request body must be sent as it is, without a Content-Encoding."
        )
        error.headers.add(name: "Accept-Encoding", value: "identity")
        return error
    }()
    static let keyNotConfigured = GatewayError(
        .internalServerError, .notConfigured, "کلید API روی سرور تنظیم نشده است.",
        "The API key is not configured on the server.")
    static let modelNotConfigured = GatewayError(
        .internalServerError, .notConfigured, "شناسه مدل روی سرور تنظیم نشده است.",
        "The model ID is not configured on the server.")
    static let upstreamError = GatewayError(
        .badGateway, .upstreamError, "سرویس هوش مصنوعی پاسخ موفقی برنگرداند.",
        "The AI service did not return a successful response.")
    static let emptyResult = GatewayError(
        .badGateway, .emptyResult, "پاسخ قابل‌استفاده‌ای از مدل دریافت نشد.",
        "No usable response was received from the model.")
    /// A `"format": "json"` answer that still broke its schema after the repair call.
    static let invalidModelOutput: GatewayError = {
        var error = GatewayError(
            .badGateway, .invalidModelOutput, "پاسخ مدل با قالب خواسته‌شده سازگار نبود.",
            "The model's answer did not match the requested format.")
        error.upstreamKind = .invalidOutput
        return error
    }()
    static let upstreamBusy = GatewayError(
        .serviceUnavailable, .upstreamBusy, "سرویس هوش مصنوعی در حال حاضر مشغول است. لطفاً بعداً تلاش کنید.",
        "The AI service is busy right now. Please try again later.")
    static let upstreamTimeout = GatewayError(
        .gatewayTimeout, .upstreamTimeout, "سرویس هوش مصنوعی در زمان مقرر پاسخ نداد.",
        "The AI service did not respond in time.")
    static let invalidMessages = GatewayError(
        .badRequest, .invalidMessages, "فهرست پیام‌ها خالی یا بیش از حد بلند است.",
        "messages must hold between one and the allowed number of messages.")
    static func modelNotFound(_ alias: String) -> GatewayError {
        let shown = String(alias.prefix(100).filter { !$0.isNewline })
        var error = GatewayError(
            .notFound, .modelNotFound, "مدل «\(shown)» وجود ندارد.", "The model `\(shown)` does not exist.")
        error.openAI = OpenAIForm(status: .notFound, code: .modelNotFound, param: "model")
        return error
    }
    /// `n` above `MAX_CHOICES`.
    static func tooManyChoices(limit: Int) -> GatewayError {
        var error = GatewayError(
            .badRequest, .invalidParameter, "تعداد پاسخ‌های خواسته‌شده (n) بیش از \(limit) است.",
            "n may be at most \(limit) on this gateway."
        )
        error.openAI = OpenAIForm(status: .badRequest, code: .invalidParameter, param: "n")
        return error
    }
    /// The upstream says the input does not fit the model's context: `413 text_too_long` on
    /// `/api`, OpenAI's `400 context_length_exceeded` on `/v1`.
    static let contextLengthExceeded: GatewayError = {
        var error = textTooLong
        error.openAI = OpenAIForm(status: .badRequest, code: .contextLengthExceeded, param: "messages")
        return error
    }()
    /// The client went away before its answer was complete (nginx's 499): for the log and
    /// metrics only, the client never sees it.
    static let clientClosedRequest = GatewayError(
        HTTPStatus(code: 499, reasonPhrase: "Client Closed Request"), .clientClosedRequest,
        "درخواست پیش از پاسخ لغو شد.", "The client closed the request before the answer was complete.")
    static let repeatedField = GatewayError(
        .badRequest, .badRequest, "درخواست HTTP معتبر نیست.", "The HTTP request is malformed.")
    static let shuttingDown = GatewayError(
        .serviceUnavailable, .shuttingDown, "سرور در حال خاموش شدن است. لطفاً دوباره تلاش کنید.",
        "The server is shutting down. Please try again.")
    /// A history item that does not exist or is another caller's: the two look the same.
    static let itemNotFound = GatewayError(
        .notFound, .notFound, "مورد درخواست‌شده پیدا نشد.", "The requested item was not found.")
    static let invalidParameter = GatewayError(
        .badRequest, .invalidParameter, "پارامتر درخواست معتبر نیست.", "A request parameter is not valid.")
    static let storeUnavailable = GatewayError(
        .serviceUnavailable, .storeUnavailable, "ذخیره‌ساز سرور در دسترس نیست. لطفاً بعداً تلاش کنید.",
        "The server's store is unavailable. Please try again later.")
    /// A device's registration or session refused for `reason` (docs/app-attest.md lists them).
    /// This error, refusing a credential for `reason` (the log's `auth_error`).
    func refusing(because reason: String) -> GatewayError {
        var error = self
        error.authFailure = reason
        return error
    }

    static func deviceUnauthorized(reason: String) -> GatewayError {
        var error = GatewayError(
            .unauthorized, .unauthorized, "تأیید دستگاه پذیرفته نشد.", "The device could not be verified.")
        error.headers.add(name: "WWW-Authenticate", value: "Bearer")
        error.attestError = reason
        return error
    }

    /// A device registration past `APP_ATTEST_REGISTRATIONS_PER_ADDRESS_PER_DAY` or
    /// `APP_ATTEST_REGISTRATIONS_PER_DAY`.
    static func deviceRegistrationLimit(retryAfterSeconds: Int) -> GatewayError {
        var error = GatewayError(
            .tooManyRequests, .rateLimited,
            "ثبت دستگاه تازه بیش از حد مجاز است. لطفاً بعداً دوباره تلاش کنید.",
            "Too many new devices were registered. Please try again later."
        )
        error.headers.add(name: "Retry-After", value: String(retryAfterSeconds))
        return error
    }

    /// `POST /api/attest/register` with a key id registered already.
    static let deviceAlreadyRegistered = GatewayError(
        .conflict, .deviceAlreadyRegistered, "این دستگاه پیش‌تر ثبت شده است.",
        "This device key is registered already.")
    static let invalidIdempotencyKey = GatewayError(
        .badRequest, .invalidIdempotencyKey, "کلید Idempotency-Key معتبر نیست.",
        "The Idempotency-Key header is not valid."
    )
    /// The first request with the key is still being answered on another instance: a second
    /// later it has usually ended, and the retry gets its answer.
    static let idempotencyInProgress: GatewayError = {
        var error = GatewayError(
            .conflict, .idempotencyInProgress,
            "درخواستی با همین Idempotency-Key هنوز در حال پاسخ است. لطفاً کمی بعد دوباره تلاش کنید.",
            "A request with this Idempotency-Key is still being answered. Please retry shortly."
        )
        error.headers.add(name: "Retry-After", value: "1")
        return error
    }()
    static let idempotencyKeyReused = GatewayError(
        .unprocessableContent, .idempotencyKeyReused,
        "این Idempotency-Key پیش‌تر برای درخواست دیگری به کار رفته است.",
        "This Idempotency-Key was used for a different request."
    )
    static let internalError = GatewayError(
        .internalServerError, .internalError, "خطای داخلی سرور رخ داد.", "An internal server error occurred.")

    /// A caller at `JOB_MAX_ACTIVE_PER_USER`. No one knows when one of its jobs will end, so
    /// `Retry-After` is about how long a job of a few chunks takes: a client that waits it
    /// out tries again once, rather than at once and again and again.
    static let tooManyJobs: GatewayError = {
        var error = GatewayError(
            .tooManyRequests, .tooManyJobs,
            "تعداد کارهای در جریان شما به حداکثر رسیده است. لطفاً پس از پایان یکی از آن‌ها دوباره تلاش کنید.",
            "You have as many jobs in flight as allowed. Please try again when one has finished."
        )
        error.headers.add(name: "Retry-After", value: String(tooManyJobsRetryAfterSeconds))
        return error
    }()
    static let tooManyJobsRetryAfterSeconds = 30

    /// A budget of `scope` has no room for the request's worst case; `Retry-After` is the
    /// period's end, or a second when requests in flight hold the room and may give it back.
    static func budgetExceeded(_ scope: BudgetScope, retryAfterSeconds: Int64) -> GatewayError {
        var error = GatewayError(
            .tooManyRequests, .budgetExceeded,
            "سقف هزینهٔ این سرویس برای این دوره پر شده است. لطفاً بعداً دوباره تلاش کنید.",
            "The spending budget for this period is used up. Please try again later."
        )
        error.budgetScope = scope
        error.headers.add(name: "Retry-After", value: String(max(1, retryAfterSeconds)))
        return error
    }
    static let jobCancelled = GatewayError(
        HTTPStatus(code: 499, reasonPhrase: "Client Closed Request"), .cancelled, "این کار لغو شد.",
        "The job was cancelled.")

    /// The errors a job can end with, by code.
    private static let jobEnds: [Code: GatewayError] = Dictionary(
        [
            upstreamError, emptyResult, invalidModelOutput, upstreamBusy, upstreamTimeout, contextLengthExceeded,
            keyNotConfigured, internalError, jobCancelled,
        ]
        .map { ($0.code, $0) }, uniquingKeysWith: { first, _ in first }
    )

    /// The error a stored job's code names (a job keeps its code, and is told in the reader's
    /// language); another code reads as ``internalError`` with that code, and a code this
    /// gateway does not have (one another version stored) as ``internalError`` itself.
    static func known(code: String) -> GatewayError {
        guard let code = Code(rawValue: code) else { return internalError }
        if let known = jobEnds[code] { return known }
        return GatewayError(internalError.status, code, internalError.persian, internalError.english)
    }

    /// Requests the HTTP layer refuses before any route runs.
    static func protocolError(_ status: HTTPStatus) -> GatewayError {
        switch status.code {
        case 413: return .bodyTooLarge
        case 408:
            return GatewayError(
                status, .requestTimeout, "زمان ارسال درخواست به پایان رسید.", "The request was not received in time.")
        case 414:
            return GatewayError(
                status, .uriTooLong, "نشانی درخواست بیش از حد طولانی است.", "The request URI is too long.")
        case 431:
            return GatewayError(
                status, .headersTooLarge, "سرآیندهای درخواست بیش از حد بزرگ است.",
                "The request header fields are too large.")
        case 501:
            return GatewayError(
                status, .notImplemented, "این نوع درخواست پشتیبانی نمی‌شود.",
                "This kind of request is not supported.")
        case 505:
            return GatewayError(
                status, .httpVersionNotSupported, "این نسخه از HTTP پشتیبانی نمی‌شود.",
                "This HTTP version is not supported.")
        default:
            return GatewayError(
                .badRequest, .badRequest, "درخواست HTTP معتبر نیست.", "The HTTP request is malformed.")
        }
    }
}
