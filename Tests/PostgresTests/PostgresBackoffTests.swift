import Testing

@testable import Postgres

@Suite("Postgres reconnect backoff")
struct PostgresBackoffTests {
    @Test("the wait doubles per failure up to the cap, jittered between half and all of it")
    func backoff() {
        let minimum = Duration.milliseconds(50)
        let maximum = Duration.seconds(5)
        for failures in 0..<60 {
            let full = min(Duration.milliseconds(50 * (1 << min(failures, 20))), maximum)
            for _ in 0..<20 {
                let wait = PostgresConnection.backoff(failures: failures, min: minimum, max: maximum)
                #expect(wait >= full / 2 && wait <= full, "failures \(failures): \(wait)")
            }
        }
    }
}
