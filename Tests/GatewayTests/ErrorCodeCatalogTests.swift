import Foundation
import HTTP1
import TestSupport
import Testing

@testable import Gateway

/// The gateway's error codes (``GatewayError/Code``) and the documents that list them kept
/// the same, both ways: docs/openapi.yaml's `ErrorCode` enum, and docs/api.md's table of
/// codes, whose statuses must be the ones the gateway answers with.
@Suite("GatewayError.Code matches docs/openapi.yaml's ErrorCode and docs/api.md's table")
struct ErrorCodeCatalogTests {
    /// Codes no answer carries (the log and the ledger do), so the schema of answers leaves
    /// them out.
    static let neverAnswered: Set<GatewayError.Code> = [.clientClosedRequest]

    /// Every error ``GatewayError`` declares, its factories' included: what says which status
    /// each code is answered with. A new code needs the error that carries it here.
    static let errors: [GatewayError] =
        [
            .invalidJSON, .invalidTask, .invalidTone, .invalidFormat, .textTooShort, .unauthorized, .invalidToken,
            .rateLimited, .notFound, .methodNotAllowed, .textTooLong, .bodyTooLarge, .unsupportedMediaType,
            .unsupportedContentEncoding, .keyNotConfigured, .modelNotConfigured, .upstreamError, .emptyResult,
            .invalidModelOutput, .upstreamBusy, .upstreamTimeout, .invalidMessages, .modelNotFound("m"),
            .tooManyChoices(limit: 4), .contextLengthExceeded, .clientClosedRequest, .repeatedField, .shuttingDown,
            .itemNotFound, .invalidParameter, .storeUnavailable, .deviceAlreadyRegistered, .invalidIdempotencyKey,
            .idempotencyInProgress, .idempotencyKeyReused, .internalError, .tooManyJobs,
            .budgetExceeded(.gateway, retryAfterSeconds: 1), .jobCancelled,
        ] + [400, 408, 413, 414, 431, 501, 505].map { GatewayError.protocolError(HTTPStatus(code: $0)) }

    /// The statuses each code is answered with, in either shape (an OpenAI form's own).
    static func statuses() -> [GatewayError.Code: Set<Int>] {
        var statuses: [GatewayError.Code: Set<Int>] = [:]
        for error in errors {
            statuses[error.code, default: []].insert(error.status.code)
            if let openAI = error.openAI { statuses[openAI.code, default: []].insert(openAI.status.code) }
        }
        return statuses
    }

    /// One row of docs/api.md's table of error codes: its code cell without the backticks,
    /// and its status cell (a number, or `—` for a code that is never a status).
    struct TableRow {
        let code: String
        let status: String
    }

    struct MissingTable: Error, CustomStringConvertible {
        var description: String { "docs/api.md has no table whose header is | status | code | when |" }
    }

    /// docs/api.md's table of error codes: the rows after its `| status | code | when |` header.
    static func apiTable() throws -> [TableRow] {
        let lines = try RepositoryFile.text("docs/api.md").split(separator: "\n", omittingEmptySubsequences: false)
        guard let header = lines.firstIndex(where: { cells(of: $0) == ["status", "code", "when"] }) else {
            throw MissingTable()
        }
        // The line after the header is the `|---|---|---|` delimiter row.
        return lines[(header + 2)...].prefix { $0.hasPrefix("|") }.map { line in
            let cells = cells(of: line)
            let code = cells.count > 1 ? cells[1] : ""
            let unquoted = code.count > 2 && code.hasPrefix("`") && code.hasSuffix("`")
            return TableRow(code: unquoted ? String(code.dropFirst().dropLast()) : code, status: cells.first ?? "")
        }
    }

    private static func cells(of line: Substring) -> [String] {
        guard line.hasPrefix("|") else { return [] }
        return line.split(separator: "|", omittingEmptySubsequences: false).dropFirst().dropLast().map {
            $0.trimmingCharacters(in: .whitespaces)
        }
    }

    @Test("every code is carried by an error, and is answered with one status")
    func everyCodeHasAnError() {
        let statuses = Self.statuses()
        let uncarried = GatewayError.Code.allCases.filter { statuses[$0] == nil }
        #expect(uncarried.isEmpty, "no error in `errors` carries \(uncarried)")
        for (code, answered) in statuses {
            #expect(answered.count == 1, "\(code) is answered with \(answered.sorted())")
        }
    }

    @Test("docs/openapi.yaml's ErrorCode is every code an answer can carry, and only those")
    func openAPIErrorCodes() throws {
        let documented = try OpenAPIDocumentTests.document().errorCodes
        #expect(documented.count == Set(documented).count, "a code listed twice: \(documented)")
        let sent = Set(GatewayError.Code.allCases.filter { !Self.neverAnswered.contains($0) }.map(\.rawValue))
        let undocumented = sent.subtracting(documented)
        #expect(undocumented.isEmpty, "not in ErrorCode: \(undocumented.sorted())")
        let unknown = Set(documented).subtracting(sent)
        #expect(unknown.isEmpty, "in ErrorCode but never sent: \(unknown.sorted())")
    }

    @Test("docs/api.md's table lists every code, and only those, with the status the gateway answers it with")
    func apiTableCodesAndStatuses() throws {
        let rows = try Self.apiTable()
        let listed = rows.map(\.code)
        #expect(listed.count == Set(listed).count, "a code listed twice: \(listed)")
        let codes = Set(GatewayError.Code.allCases.map(\.rawValue))
        let unlisted = codes.subtracting(listed)
        #expect(unlisted.isEmpty, "not in docs/api.md's table: \(unlisted.sorted())")
        let unknown = Set(listed).subtracting(codes)
        #expect(unknown.isEmpty, "in docs/api.md's table but no code of the gateway: \(unknown.sorted())")
        let statuses = Self.statuses()
        for row in rows {
            guard row.status != "—" else { continue }
            guard let status = Int(row.status) else {
                Issue.record("docs/api.md: `\(row.code)` has the status \(row.status), neither a number nor —")
                continue
            }
            guard let code = GatewayError.Code(rawValue: row.code), let answered = statuses[code] else { continue }
            #expect(
                answered == [status], "docs/api.md: \(row.code) is \(status), the gateway answers \(answered.sorted())")
        }
    }
}
