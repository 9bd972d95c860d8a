// TEMPORARY: the contract's types, replaced by the rollups branch at merge.
public struct LatencyHistogram: Sendable, Equatable {
    public static let bounds: [Double] = [
        0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 30000, .infinity,
    ]
    public var counts: [Int]
    public init(counts: [Int] = Array(repeating: 0, count: 16)) { self.counts = counts }
    public init() { counts = Array(repeating: 0, count: 16) }
    public static func bucket(ofMilliseconds value: Double) -> Int { bounds.firstIndex { value <= $0 } ?? 15 }
    public mutating func add(milliseconds: Double) { counts[Self.bucket(ofMilliseconds: milliseconds)] += 1 }
    public func percentile(_ p: Double) -> Double? { nil }
}
public struct RollupTotals: Sendable, Equatable {
    public var requests = 0, cacheHits = 0, inputTokens = 0, outputTokens = 0, errors = 0
    public var added = LatencyHistogram(), upstream = LatencyHistogram()
}
public struct RollupDayTask: Sendable, Equatable {
    public var day: Int64
    public var task: String
    public var requests: Int, inputTokens: Int, outputTokens: Int, errors: Int
}
public struct RollupDayCode: Sendable, Equatable {
    public var day: Int64
    public var code: String
    public var count: Int
}
public struct RollupCaller: Sendable, Equatable {
    public var userID: String
    public var plan: String?
    public var requests: Int, cacheHits: Int, inputTokens: Int, outputTokens: Int, errors: Int
    public var lastSeenMilliseconds: Int64?
}
public struct FailedRequest: Sendable, Equatable {
    public var sequence: Int64
    public var requestID: String
    public var createdAtMilliseconds: Int64
    public var status: Int
    public var code: String?
    public var route: String
    public var upstream: String?
    public var task: String?
    public var userID: String?
}
public protocol AdminStore: Sendable {
    func rollupTotals(fromSlot: Int64, toSlot: Int64) async throws(StoreError) -> RollupTotals
    func rollupDayTasks(fromSlot: Int64, toSlot: Int64, offsetMinutes: Int) async throws(StoreError) -> [RollupDayTask]
    func rollupDayCodes(fromSlot: Int64, toSlot: Int64, offsetMinutes: Int) async throws(StoreError) -> [RollupDayCode]
    func rollupCallers(fromDay: Int64, toDay: Int64) async throws(StoreError) -> [RollupCaller]
    func recentFailures(limit: Int) async throws(StoreError) -> [FailedRequest]
    func activeJobs(limit: Int) async throws(StoreError) -> [JobRecord]
}
extension SQLiteStore: AdminStore {
    public func rollupTotals(fromSlot: Int64, toSlot: Int64) async throws(StoreError) -> RollupTotals { RollupTotals() }
    public func rollupDayTasks(fromSlot: Int64, toSlot: Int64, offsetMinutes: Int) async throws(StoreError)
        -> [RollupDayTask] { [] }
    public func rollupDayCodes(fromSlot: Int64, toSlot: Int64, offsetMinutes: Int) async throws(StoreError)
        -> [RollupDayCode] { [] }
    public func rollupCallers(fromDay: Int64, toDay: Int64) async throws(StoreError) -> [RollupCaller] { [] }
    public func recentFailures(limit: Int) async throws(StoreError) -> [FailedRequest] { [] }
    public func activeJobs(limit: Int) async throws(StoreError) -> [JobRecord] { [] }
}
extension PostgresStore {
    public func rollupTotals(fromSlot: Int64, toSlot: Int64) async throws(StoreError) -> RollupTotals { RollupTotals() }
    public func rollupDayTasks(fromSlot: Int64, toSlot: Int64, offsetMinutes: Int) async throws(StoreError)
        -> [RollupDayTask] { [] }
    public func rollupDayCodes(fromSlot: Int64, toSlot: Int64, offsetMinutes: Int) async throws(StoreError)
        -> [RollupDayCode] { [] }
    public func rollupCallers(fromDay: Int64, toDay: Int64) async throws(StoreError) -> [RollupCaller] { [] }
    public func recentFailures(limit: Int) async throws(StoreError) -> [FailedRequest] { [] }
    public func activeJobs(limit: Int) async throws(StoreError) -> [JobRecord] { [] }
}
