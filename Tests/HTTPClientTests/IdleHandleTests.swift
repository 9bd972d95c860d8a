import HTTPServer
import Testing

@testable import HTTPClient

@Suite("Idle curl handles after a burst")
struct IdleHandleTests {
    @Test("a burst's easy handles are let go as it drains: no more are kept than are in flight, or 8")
    func burstHandlesReleased() async throws {
        try await withUpstream({ router in
            router.get("/slow") { _ in
                // Long enough for the 40 requests to be in flight together.
                try await Task.sleep(for: .milliseconds(200))
                return .text("done")
            }
        }) { _, base in
            try await withClient { client in
                let succeeded = try await withThrowingTaskGroup(of: Bool.self) { group in
                    for _ in 0..<40 {
                        group.addTask { try await client.send(HTTPClientRequest(url: base + "/slow")).status == 200 }
                    }
                    var count = 0
                    for try await ok in group where ok { count += 1 }
                    return count
                }
                #expect(succeeded == 40)
                // Kept before: one handle per transfer of the burst, up to 256.
                #expect(await client.idleHandleCount() <= CurlMulti.idleHandleFloor)
                // The handles kept still serve.
                for _ in 0..<3 {
                    #expect(try await client.send(HTTPClientRequest(url: base + "/slow")).status == 200)
                }
                #expect(await client.idleHandleCount() <= CurlMulti.idleHandleFloor)
            }
        }
    }
}
