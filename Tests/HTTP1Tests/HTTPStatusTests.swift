import Testing

@testable import HTTP1

@Suite("HTTPStatus, HTTPMethod, HTTPVersion and HTTPParseError")
struct HTTPStatusTests {
    @Test("standard reason phrases, custom phrases, unknown codes")
    func reasonPhrases() {
        #expect(HTTPStatus.ok.reasonPhrase == "OK")
        #expect(HTTPStatus.contentTooLarge.code == 413)
        #expect(HTTPStatus.contentTooLarge.reasonPhrase == "Content Too Large")
        #expect(HTTPStatus.uriTooLong.code == 414)
        #expect(HTTPStatus.requestHeaderFieldsTooLarge.code == 431)
        #expect(HTTPStatus.continue.description == "100 Continue")
        #expect(HTTPStatus(code: 599).reasonPhrase == "")
        #expect(HTTPStatus(code: 599).description == "599")
        #expect(HTTPStatus(code: 200, reasonPhrase: "Fine").reasonPhrase == "Fine")
    }

    @Test("equality and hashing use the code only")
    func equalityByCode() {
        #expect(HTTPStatus(code: 200, reasonPhrase: "Fine") == .ok)
        #expect(Set([HTTPStatus.ok, HTTPStatus(code: 200, reasonPhrase: "x")]).count == 1)
        #expect(HTTPStatus.ok != .created)
    }

    @Test(
        "every static status has its registered code",
        arguments: [
            (HTTPStatus.continue, 100), (.ok, 200), (.created, 201), (.accepted, 202), (.noContent, 204),
            (.badRequest, 400), (.unauthorized, 401), (.forbidden, 403), (.notFound, 404),
            (.methodNotAllowed, 405), (.requestTimeout, 408), (.contentTooLarge, 413), (.uriTooLong, 414),
            (.unsupportedMediaType, 415), (.tooManyRequests, 429), (.requestHeaderFieldsTooLarge, 431),
            (.internalServerError, 500), (.notImplemented, 501), (.badGateway, 502),
            (.serviceUnavailable, 503), (.gatewayTimeout, 504), (.httpVersionNotSupported, 505),
        ])
    func staticCodes(_ status: HTTPStatus, _ code: Int) {
        #expect(status.code == code)
        #expect(!status.reasonPhrase.isEmpty)
    }

    @Test(
        "parse errors map to their statuses: 400 unless noted",
        arguments: [
            (HTTPParseError.invalidRequestLine, 400), (.invalidMethod, 400), (.invalidTarget, 400),
            (.unsupportedVersion, 505), (.requestLineTooLong, 414), (.bareLineFeed, 400),
            (.bareCarriageReturn, 400), (.invalidHeaderName, 400), (.invalidHeaderValue, 400),
            (.whitespaceBeforeColon, 400), (.obsoleteLineFolding, 400), (.headerSectionTooLarge, 431),
            (.tooManyHeaders, 431), (.missingHost, 400), (.duplicateHost, 400), (.invalidHost, 400),
            (.invalidContentLength, 400), (.conflictingContentLength, 400),
            (.contentLengthWithTransferEncoding, 400), (.transferEncodingInHTTP10, 400),
            (.unsupportedTransferEncoding, 501), (.invalidChunkSize, 400), (.invalidChunkFraming, 400),
            (.bodyTooLarge, 413),
        ])
    func errorStatuses(_ error: HTTPParseError, _ code: Int) {
        #expect(error.status.code == code)
        #expect(!error.description.isEmpty)
    }

    @Test("methods, versions and their descriptions")
    func methodsAndVersions() {
        #expect(HTTPMethod("GET") == .GET)
        #expect(HTTPMethod("get") != .GET)
        #expect(HTTPMethod.PATCH.description == "PATCH")
        #expect(HTTPVersion.http1_1.description == "HTTP/1.1")
        #expect(HTTPVersion.http1_0 == HTTPVersion(major: 1, minor: 0))
    }
}
