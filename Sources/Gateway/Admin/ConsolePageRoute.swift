import AdminConsole
import HTTP1
import HTTPServer

/// `GET /admin`, `/admin/console.css`, `/admin/console.js`: the console's page, open to
/// anyone who can reach the gateway (it holds no data; every call it makes needs the admin
/// token), under a policy that lets it run only its own script and style.
struct ConsolePageRoute: ResponseHandler {
    enum Asset: Sendable {
        case page, style, script
    }

    let asset: Asset
    /// `ERROR_LANGUAGE`: the page's first language; `auto` (or unset) follows `Accept-Language`.
    let language: ErrorLanguage?

    private static let persianPage = page(lang: "fa", dir: "rtl")
    private static let englishPage = page(lang: "en", dir: "ltr")

    func handle(_ request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        var headers = Self.securityHeaders
        let body: [UInt8]
        switch asset {
        case .page:
            headers.add(name: "Content-Type", value: "text/html; charset=utf-8")
            let english =
                switch language {
                case .english?: true
                case .persian?: false
                case .auto?, nil: Language(acceptLanguage: request.headers["Accept-Language"]) == .english
                }
            body = english ? Self.englishPage : Self.persianPage
            if language == .auto || language == nil { headers.add(name: "Vary", value: "Accept-Language") }
        case .style:
            headers.add(name: "Content-Type", value: "text/css; charset=utf-8")
            body = ConsoleAssets.css
        case .script:
            headers.add(name: "Content-Type", value: "text/javascript; charset=utf-8")
            body = ConsoleAssets.javascript
        }
        return HTTPResponse(headers: headers, body: .bytes(body))
    }

    private static let securityHeaders: HTTPHeaders = [
        "Content-Security-Policy":
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
            + "form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
    ]

    private static func page(lang: String, dir: String) -> [UInt8] {
        Array(
            String(decoding: ConsoleAssets.html, as: UTF8.self)
                .replacing("{{LANG}}", with: lang)
                .replacing("{{DIR}}", with: dir)
                .utf8)
    }
}
