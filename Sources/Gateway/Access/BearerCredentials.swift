// Placeholder until the strict-input branch lands.
enum BearerCredentials {
    static func matches(authorization: String?, secret: String) -> Bool {
        let expected = Array("Bearer \(secret)".utf8)
        let given = Array((authorization ?? "").utf8)
        return ConstantTime.equals(expected, given)
    }
}
