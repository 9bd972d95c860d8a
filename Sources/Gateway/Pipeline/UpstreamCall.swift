import ChatAPI
import Telemetry
import Upstream

/// What every route does with a failed upstream call: classify it once, log the upstream's
/// own details (never to the client), and answer with the classification's error.
enum UpstreamCall {
    /// The classification of `error`, its details logged; nil for a cancellation (the
    /// client went away, nothing failed).
    static func failure(of error: ChatError, requestID: String, logger: Logger) -> UpstreamFailure? {
        guard let failure = UpstreamFailure(error) else { return nil }
        log(failure, error, requestID: requestID, logger: logger)
        return failure
    }

    /// The error a route answers a failed call with (it carries the failure's kind, which
    /// the finisher records as the outcome).
    static func gatewayError(for error: ChatError, requestID: String, logger: Logger) -> GatewayError {
        failure(of: error, requestID: requestID, logger: logger)?.error ?? .clientClosedRequest
    }

    /// The upstream's own error details go to the log (bounded, one line).
    private static func log(_ failure: UpstreamFailure, _ error: ChatError, requestID: String, logger: Logger) {
        var fields: [(String, Logger.Value?)] = [
            ("request_id", .string(requestID)), ("kind", .string(failure.label)),
            ("failure", .string(error.description)),
        ]
        if case .httpStatus(let status, let body, _) = error {
            fields.append(("upstream_status", .int(status)))
            fields.append(("upstream_code", body?.code.map { .string(String($0.prefix(100))) }))
            fields.append(("upstream_message", body?.message.map { .string(String($0.prefix(300))) }))
            if status == 401 || status == 403 {
                logger.error(
                    "upstream_rejected_key", [("request_id", .string(requestID)), ("upstream_status", .int(status))])
            }
        }
        if case .streamError(let body) = error {
            fields.append(("upstream_code", body.code.map { .string(String($0.prefix(100))) }))
            fields.append(("upstream_message", body.message.map { .string(String($0.prefix(300))) }))
        }
        logger.log(.warning, "upstream_failure", fields)
    }
}
