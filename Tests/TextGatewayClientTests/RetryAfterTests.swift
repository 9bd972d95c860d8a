import Foundation
import Testing

@testable import TextGatewayClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Retry-After as the client reads it")
struct RetryAfterTests {
    static let now = Date(timeIntervalSince1970: 784_111_777) // Sun, 06 Nov 1994 08:49:37 GMT

    @Test("delta-seconds are taken as they are; negative or malformed values are none")
    func deltaSeconds() {
        #expect(TextGatewayClient.retryAfterSeconds("7", now: Self.now) == 7)
        #expect(TextGatewayClient.retryAfterSeconds(" 0 ", now: Self.now) == 0)
        #expect(TextGatewayClient.retryAfterSeconds("-3", now: Self.now) == nil)
        #expect(TextGatewayClient.retryAfterSeconds("soon", now: Self.now) == nil)
        #expect(TextGatewayClient.retryAfterSeconds("", now: Self.now) == nil)
    }

    @Test("an HTTP-date is the seconds until it, rounded up; a past date is zero")
    func httpDate() {
        #expect(TextGatewayClient.retryAfterSeconds("Sun, 06 Nov 1994 08:50:07 GMT", now: Self.now) == 30)
        #expect(
            TextGatewayClient.retryAfterSeconds("Sun, 06 Nov 1994 08:49:37 GMT", now: Self.now.addingTimeInterval(-0.2))
                == 1)
        #expect(TextGatewayClient.retryAfterSeconds("Sun, 06 Nov 1994 08:00:00 GMT", now: Self.now) == 0)
        #expect(TextGatewayClient.retryAfterSeconds("Sun, 06 Nov 1994 08:50:07 PST", now: Self.now) == nil)
    }

    @Test("an answer's Retry-After HTTP-date reaches TextGatewayError.retryAfter")
    func errorCarriesIt() throws {
        let later = Date().addingTimeInterval(120)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let response = try #require(
            HTTPURLResponse(
                url: URL(string: "http://gateway.test/api/process")!, statusCode: 503, httpVersion: "HTTP/1.1",
                headerFields: ["Retry-After": formatter.string(from: later), "Content-Type": "text/html"]
            ))
        let error = TextGatewayClient.error(status: 503, body: Array("<html>busy</html>".utf8), headers: response)
        #expect(error.code == "http_503")
        #expect(error.isBusy)
        #expect((118...121).contains(error.retryAfter ?? -1))
    }
}
