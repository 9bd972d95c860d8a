import Testing

@testable import HTTP1

@Suite("HTTPDate")
struct HTTPDateTests {
    @Test(
        "formats IMF-fixdate",
        arguments: [
            (784_111_777, "Sun, 06 Nov 1994 08:49:37 GMT"),
            (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
            (-1, "Wed, 31 Dec 1969 23:59:59 GMT"),
            (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT"),
            (1_709_251_199, "Thu, 29 Feb 2024 23:59:59 GMT"),
            (4_102_444_800, "Fri, 01 Jan 2100 00:00:00 GMT"),
            (-2_208_988_800, "Mon, 01 Jan 1900 00:00:00 GMT"),
            (1_735_689_599, "Tue, 31 Dec 2024 23:59:59 GMT"),
            (253_402_300_799, "Fri, 31 Dec 9999 23:59:59 GMT"),
            (-62_135_596_800, "Mon, 01 Jan 0001 00:00:00 GMT"),
        ])
    func format(_ seconds: Int, _ expected: String) {
        #expect(HTTPDate.format(unixSeconds: seconds) == expected)
    }

    @Test("times outside years 1–9999 are clamped, without trapping")
    func clamped() {
        #expect(HTTPDate.format(unixSeconds: .max) == "Fri, 31 Dec 9999 23:59:59 GMT")
        #expect(HTTPDate.format(unixSeconds: .min) == "Mon, 01 Jan 0001 00:00:00 GMT")
    }

    @Test("every day of 400 years has a well-formed date whose day follows the previous one")
    func consecutiveDays() {
        var previous = HTTPDate.civilDate(daysSinceEpoch: -1)
        for day in 0..<146_097 {
            let date = HTTPDate.civilDate(daysSinceEpoch: day)
            #expect((1...12).contains(date.month) && (1...31).contains(date.day))
            if date.day != previous.day + 1 {
                #expect(date.day == 1)
                #expect(date.month == previous.month % 12 + 1)
            }
            previous = date
        }
    }

    @Test("the cache returns the same string within a second and a new one after")
    func cache() {
        var cache = HTTPDateCache()
        #expect(cache.string(for: 784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(cache.string(for: 784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(cache.string(for: 784_111_778) == "Sun, 06 Nov 1994 08:49:38 GMT")
    }
}
