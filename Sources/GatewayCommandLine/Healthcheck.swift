import HTTPClient

/// `text-gateway healthcheck`: one GET of /api/health on loopback.
package enum Healthcheck {
    package static func run(port: Int) async -> Bool {
        guard let client = try? HTTPClient() else { return false }
        let request = HTTPClientRequest(
            url: "http://127.0.0.1:\(port)/api/health", timeout: .seconds(3), connectTimeout: .seconds(2))
        let healthy = (try? await client.send(request))?.status == 200
        await client.shutdown()
        return healthy
    }
}
