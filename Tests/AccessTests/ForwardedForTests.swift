import HTTP1
import Testing

@testable import Access

/// `X-Forwarded-For` sent as several field lines, read as their combined value.
@Suite("X-Forwarded-For over several lines")
struct ForwardedForTests {
    static let proxies = TrustedProxies(ranges: [CIDR("10.0.0.0/8")!, CIDR("127.0.0.1")!, CIDR("::1")!])

    /// What a client may write in its own line: spoofed addresses, trusted-looking ones,
    /// garbage and empty entries.
    static let clientEntries = [
        "6.6.6.6", "10.0.0.9", "garbage", "", "[::1]:80", "7.7.7.7:1", "::ffff:10.1.1.1", "203.0.113.9",
    ]

    /// The lines the proxies appended: the address the first proxy saw, then trusted hops.
    static let proxyLines: [[String]] = [
        ["198.51.100.7"], ["198.51.100.7, 10.0.0.5"], ["198.51.100.7", "10.0.0.5, 127.0.0.1"],
    ]

    @Test("reads the combined value of several lines right to left, as one line")
    func combinedLikeOneLine() {
        for lines in Self.proxyLines {
            let headers = HTTPHeaders([("X-Forwarded-For", "6.6.6.6")] + lines.map { ("x-forwarded-for", $0) })
            let combined = headers.combinedValue("X-Forwarded-For")
            let oneLine = (["6.6.6.6"] + lines).joined(separator: ", ")
            #expect(combined == oneLine)
            #expect(Self.proxies.clientAddress(peer: "10.0.0.2", forwardedFor: combined) == "198.51.100.7")
            #expect(Self.proxies.clientAddress(peer: "10.0.0.2", forwardedFor: oneLine) == "198.51.100.7")
        }
    }

    @Test("a client's own first line, however its entries are turned, never changes the client the proxies name")
    func clientLineRotated() {
        for lines in Self.proxyLines {
            for count in 1...Self.clientEntries.count {
                for shift in 0..<count {
                    let entries = Array(Self.clientEntries.prefix(count))
                    let rotated = Array(entries[shift...] + entries[..<shift])
                    let clientLine = rotated.joined(separator: ", ")
                    let headers = HTTPHeaders([("X-Forwarded-For", clientLine)] + lines.map { ("X-Forwarded-For", $0) })
                    let client = Self.proxies.clientAddress(
                        peer: "10.0.0.2", forwardedFor: headers.combinedValue("X-Forwarded-For"))
                    #expect(client == "198.51.100.7", "client line \(clientLine)")
                }
            }
        }
    }

    @Test(
        "the last line's rightmost untrusted entry is the client, as in one line; an untrusted peer's lines are ignored"
    )
    func linesWithoutTrustedTail() {
        let headers = HTTPHeaders([("X-Forwarded-For", "6.6.6.6"), ("X-Forwarded-For", "7.7.7.7")])
        #expect(
            Self.proxies.clientAddress(peer: "203.0.113.5", forwardedFor: headers.combinedValue("X-Forwarded-For"))
                == "203.0.113.5")
        #expect(
            Self.proxies.clientAddress(peer: "10.0.0.2", forwardedFor: headers.combinedValue("X-Forwarded-For"))
                == "7.7.7.7")
    }
}
