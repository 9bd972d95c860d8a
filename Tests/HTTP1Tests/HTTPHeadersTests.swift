import Testing

@testable import HTTP1

@Suite("HTTPHeaders")
struct HTTPHeadersTests {
    @Test("lookups ignore ASCII case and keep the original case and order")
    func caseInsensitiveLookups() {
        var headers: HTTPHeaders = ["Content-Type": "text/plain", "X-Multi": "a"]
        headers.add(name: "x-multi", value: "b")
        #expect(headers.count == 3)
        #expect(headers["content-type"] == "text/plain")
        #expect(headers["CONTENT-TYPE"] == "text/plain")
        #expect(headers["missing"] == nil)
        #expect(headers.values("X-MULTI") == ["a", "b"])
        #expect(headers.contains("x-MULTI"))
        #expect(!headers.contains("x-multi-2"))
        #expect(headers.map(\.name) == ["Content-Type", "X-Multi", "x-multi"])
    }

    @Test("replaceOrAdd removes every field with the name, then appends one")
    func replaceOrAdd() {
        var headers = HTTPHeaders([("A", "1"), ("b", "2"), ("a", "3")])
        headers.replaceOrAdd(name: "A", value: "4")
        #expect(headers.map(\.name) == ["b", "A"])
        #expect(headers.values("a") == ["4"])
        headers.remove(name: "B")
        #expect(headers.count == 1)
        headers.remove(name: "nothing")
        #expect(headers.count == 1)
    }

    @Test("tokens splits, trims, lower-cases and drops empty elements across fields")
    func tokens() {
        let headers = HTTPHeaders([("Connection", " Keep-Alive ,Upgrade,, "), ("connection", "CLOSE"), ("Other", "x")])
        #expect(headers.tokens("CONNECTION") == ["keep-alive", "upgrade", "close"])
        #expect(headers.tokens("missing") == [])
        #expect(headers.hasToken("connection", "close"))
        #expect(!headers.hasToken("connection", "clos"))
        #expect(!headers.hasToken("other", "close"))
    }

    @Test(
        "combinedValue joins every line of a name with \", \" in order, and values(_:) lists them",
        arguments: [
            ([], nil, 0),
            ([("X-Forwarded-For", "1.2.3.4")], "1.2.3.4", 1),
            ([("X-Forwarded-For", "1.2.3.4, 5.6.7.8")], "1.2.3.4, 5.6.7.8", 1),
            ([("X-Forwarded-For", "1.2.3.4"), ("Host", "h"), ("x-forwarded-for", "5.6.7.8")], "1.2.3.4, 5.6.7.8", 2),
            ([("X-FORWARDED-FOR", "a, b"), ("x-forwarded-for", "c"), ("X-Forwarded-For", "d")], "a, b, c, d", 3),
            ([("X-Forwarded-For", ""), ("X-Forwarded-For", "b")], ", b", 2),
            ([("X-Forwarded-Fo", "a"), ("X-Forwarded-For-2", "b")], nil, 0),
        ] as [([(String, String)], String?, Int)]
    )
    func combinedValue(fields: [(String, String)], combined: String?, count: Int) {
        let headers = HTTPHeaders(fields.map { (name: $0.0, value: $0.1) })
        #expect(headers.combinedValue("X-Forwarded-For") == combined)
        #expect(headers.values("x-forwarded-for").count == count)
        #expect(
            headers.combinedValue("X-Forwarded-For")
                == (count == 0 ? nil : headers.values("X-Forwarded-For").joined(separator: ", ")))
    }

    @Test("equality compares names ignoring case, values exactly, order included")
    func equality() {
        #expect(HTTPHeaders([("A", "1")]) == HTTPHeaders([("a", "1")]))
        #expect(HTTPHeaders([("A", "1")]) != HTTPHeaders([("A", "x")]))
        #expect(HTTPHeaders([("A", "1"), ("B", "2")]) != HTTPHeaders([("B", "2"), ("A", "1")]))
        #expect(HTTPHeaders() == HTTPHeaders([]))
    }

    @Test("description lists the fields")
    func description() {
        #expect(HTTPHeaders([("A", "1"), ("B", "2")]).description == "[A: 1, B: 2]")
    }

    @Test("case-insensitive comparison only folds ASCII letters")
    func asciiFolding() {
        #expect("Content-Length".asciiCaseInsensitiveEquals("content-length"))
        #expect(!"[".asciiCaseInsensitiveEquals("{"))
        #expect(!"@".asciiCaseInsensitiveEquals("`"))
        #expect(!"É".asciiCaseInsensitiveEquals("é"))
    }
}
