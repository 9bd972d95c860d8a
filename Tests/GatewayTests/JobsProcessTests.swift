import EventLoop
import HTTPClient
import HTTPServer
import JSON
import MockUpstream
import Store
import TestSupport
import Testing

@testable import Gateway
@testable import TextTasks

#if canImport(Glibc)
    import Glibc
#endif

/// Jobs across processes: a gateway killed with `kill -9` (or stopped) in the middle of a job,
/// then started again on the same SQLite file, finishes it without asking the upstream again
/// for any chunk whose answer it had stored.
@Suite("Jobs across processes: kill -9 and SIGTERM mid-job, then a restart", .serialized)
struct JobsProcessTests {
    static let token = StoreProcessTests.token
    static let chunkTokens = 200

    static func environment(_ upstream: StoreProcessTests.Upstream, database: String) -> [String: String] {
        upstream.environment(
            database: database,
            [
                "JOB_CHUNK_TOKENS": String(chunkTokens), "JOB_CHUNK_OVERLAP_TOKENS": "0", "JOB_CONCURRENCY": "2",
                "JOB_LEASE_SECONDS": "3",
            ])
    }

    static func submit(_ client: HTTPClient, _ base: String, text: String) async throws -> String {
        let body = "{\"task\":\"summarize\",\"text\":\(jsonString(text))}"
        let response = try await client.send(
            HTTPClientRequest(
                method: "POST", url: base + "/api/jobs",
                headers: [("Content-Type", "application/json"), ("Authorization", "Bearer \(token)")],
                body: Array(body.utf8)
            ))
        try #require(response.status == 202, "\(String(decoding: response.body, as: UTF8.self))")
        return try #require(try JSONValue.parse(response.body)["jobId"]?.stringValue)
    }

    static func job(_ client: HTTPClient, _ base: String, _ id: String) async throws -> JSONValue {
        let response = try await client.send(
            HTTPClientRequest(url: base + "/api/jobs/" + id, headers: [("Authorization", "Bearer \(token)")]))
        return try JSONValue.parse(response.body)
    }

    /// The level-0 items whose answers the store holds, read from the file itself.
    static func storedChunkStarts(database: String, job id: String) async throws -> Set<Int> {
        let pool = try BlockingPool(threadCount: 1, name: "jobs-test")
        let store = try await SQLiteStore.open(path: database, pool: pool, readOnly: true)
        let answers = try await store.levelAnswers(jobID: id, level: 0)
        await store.close()
        await pool.shutdown()
        return Set(answers.answers.map(\.sourceStart))
    }

    static func run(stop signal: Int32) async throws {
        var behaviour = MockBehaviour()
        // 17 chunks two at a time take 8.5 s: the stop lands mid-job even when a loaded test
        // run makes the progress polls seconds late (at 300 ms the job could finish first).
        behaviour.latencyMilliseconds = 1000
        let mock = try await MockUpstream.started(defaults: behaviour, apiKey: "k")
        let upstream = StoreProcessTests.Upstream(mock: mock)
        let directory = storeDirectory()
        let database = directory + "/gw.sqlite"
        let environment = Self.environment(upstream, database: database)
        let client = try HTTPClient()
        let text = JobsEndToEndTests.longText(sentences: 100)
        let chunks = TextChunker(budget: TokenEstimate.characters(tokens: chunkTokens), overlap: 0).chunks(
            of: TextChunker.clean(text))
        #expect(chunks.count >= 10)

        let first = try await StoreProcessTests.Gateway.start(environment, directory: directory)
        let id = try await Self.submit(client, first.base, text: text)
        await eventually("at least 4 of the job's items are done") {
            ((try? await Self.job(client, first.base, id))?["progress"]?["done"]?.doubleValue ?? 0) >= 4
        }
        first.child.signal(signal)
        #expect(await first.child.waitForExit(seconds: 15) != nil)
        let stored = try await Self.storedChunkStarts(database: database, job: id)
        #expect(stored.count >= 4)
        #expect(stored.count < chunks.count)

        let second = try await StoreProcessTests.Gateway.start(environment, directory: directory)
        var last: JSONValue?
        await eventually("the job succeeds after the restart: \(String(describing: last))") {
            last = try? await Self.job(client, second.base, id)
            return last?["status"]?.stringValue == "succeeded"
        }
        let calls = Int(last?["progress"]?["done"]?.doubleValue ?? 0)
        #expect(calls > chunks.count)
        #expect(last?["progress"]?["total"]?.doubleValue == Double(calls))
        let sent = mock.receivedUserTexts
        for chunk in chunks {
            let times = sent.filter { $0.contains(chunk.text) }.count
            if stored.contains(chunk.start) {
                #expect(times == 1, "a chunk whose answer was stored before the stop was asked \(times) times")
            } else {
                // Asked again only if the stop caught it in flight (at most JOB_CONCURRENCY of them).
                #expect((1...2).contains(times))
            }
        }
        // Every call stored once, and at most JOB_CONCURRENCY asked twice.
        #expect(mock.stats.requests >= calls)
        #expect(mock.stats.requests <= calls + 2)
        second.child.signal(SIGTERM)
        #expect(await second.child.waitForExit(seconds: 15) == 0)
        await client.shutdown()
        await mock.shutdown()
    }

    @Test("kill -9 mid-job: after a restart the job finishes, and no chunk with a stored answer is sent again")
    func killed() async throws {
        try await Self.run(stop: SIGKILL)
    }

    @Test("SIGTERM mid-job: the calls in flight are given back, and the restarted gateway finishes the job")
    func stopped() async throws {
        try await Self.run(stop: SIGTERM)
    }
}
