import Testing

@testable import Access

/// `Authorization: Bearer <token>`, read one way for callers' tokens and `METRICS_TOKEN`.
@Suite("Bearer credentials")
struct BearerCredentialsTests {
    static let longest = String(repeating: "a", count: BearerCredentials.maximumLength)

    @Test(
        "reads the token of `Bearer`, one or more spaces, then 1–16,384 printable ASCII bytes",
        arguments: [
            ("Bearer abc", "abc"),
            ("bearer abc", "abc"),
            ("BEARER abc", "abc"),
            ("bEaReR abc", "abc"),
            ("Bearer   abc", "abc"),
            ("Bearer tgk_AbC-1.2~3+4/5==", "tgk_AbC-1.2~3+4/5=="),
            // Beyond token68, as configured tokens may be.
            ("Bearer a=b", "a=b"),
            ("Bearer !#$%&'()*,:;<>?@[]^`{|}\"\\", "!#$%&'()*,:;<>?@[]^`{|}\"\\"),
            ("Bearer " + longest, longest),
        ] as [(String, String)]
    )
    func reads(authorization: String, token: String) {
        #expect(BearerCredentials.token(in: authorization) == Array(token.utf8))
    }

    @Test(
        "refuses anything else",
        arguments: [
            "", "Bearer", "Bearer ", "Bearer    ", "Bearerabc", "Basic abc", "Basic YWxhZGRpbjpvcGVuc2VzYW1l", "abc",
            "Bearer a b", "Bearer abc ", " Bearer abc", "Bearer\tabc", "Bearer \tabc", "Bearer abc\t",
            "Bearer\u{A0}abc",
            "Bearer abc\r\n", "Bearer ab\u{0}c", "Bearer abc\u{7F}", "Bearer abcé", "Bearer é", "Beärer abc",
            "Bearers abc",
            "Token abc", "Bearer: abc", "Bearer " + longest + "a", "Bearer  " + longest + "a",
        ]
    )
    func refuses(authorization: String) {
        #expect(BearerCredentials.token(in: authorization) == nil)
    }

    @Test(
        "matches a presented token with the secret, only when they are the same bytes",
        arguments: [
            ("Bearer s3cret", "s3cret", true),
            ("bearer   s3cret", "s3cret", true),
            ("Bearer s3cret", "s3cre", false),
            ("Bearer s3cre", "s3cret", false),
            ("Bearer s3cretx", "s3cret", false),
            ("Bearer S3CRET", "s3cret", false),
            ("Basic s3cret", "s3cret", false),
            ("s3cret", "s3cret", false),
            ("Bearer s3cret ", "s3cret", false),
            ("Bearer ", "", false),
            ("Bearer a b", "a b", false),
            ("Bearer " + longest, longest, true),
        ] as [(String, String, Bool)]
    )
    func matches(authorization: String, secret: String, matched: Bool) {
        #expect(BearerCredentials.matches(authorization: authorization, secret: secret) == matched)
    }

    @Test("a missing header matches no secret")
    func missingHeader() {
        #expect(!BearerCredentials.matches(authorization: nil, secret: "s3cret"))
        #expect(!BearerCredentials.matches(authorization: nil, secret: ""))
    }

    @Test("every token the configuration can hold is accepted, and none it cannot")
    func sameTokensAsConfiguration() {
        for byte in UInt8(0)...UInt8(0x7F) {
            let token = "x" + String(decoding: [byte], as: UTF8.self)
            #expect(
                TokenStore.isAcceptableToken(token) == (BearerCredentials.token(in: "Bearer " + token) != nil),
                "byte \(byte)")
        }
    }
}
