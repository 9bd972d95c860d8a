import ChatAPI
import EventLoop
import JSON
import Synchronization
import TextTasks

/// A bounded LRU of `/api/process` answers with a time to live, and single flight: while one
/// request asks the upstream for a key, identical requests wait for its answer instead of
/// calling the upstream again.
final class ResponseCache: AnswerCache {
    /// What a cached request is answered with.
    struct Answer: Sendable, Equatable {
        let result: String
        let usage: Usage?
        /// The checked JSON of a `"format": "json"` answer.
        var data: JSONValue? = nil
    }

    /// task, tone, model, the trimmed text and the format: everything the answer depends on.
    struct Key: Hashable, Sendable {
        let task: String
        let tone: String?
        let model: String
        let text: String
        var format = OutputFormat.text
    }

    private struct Node {
        var key: Key
        var answer: Answer
        var expires: MonotonicInstant
        var previous: Int?
        var next: Int?
    }

    private struct State: ~Copyable {
        var index: [Key: Int] = [:]
        var nodes: [Node] = []
        var free: [Int] = []
        var head: Int? // most recently used
        var tail: Int? // least recently used
        var flights: [Key: Flight] = [:]
        var nextWaiterID: UInt64 = 0
    }

    typealias Waiter = CheckedContinuation<Result<Answer, GatewayError>, Never>

    /// One upstream call shared by identical requests. It runs in a task of its own, so the
    /// request that started it can go away without ending it for the others; it is
    /// cancelled when the last request waiting for it has gone.
    private struct Flight {
        var task: Task<Void, Never>?
        var waiters: [UInt64: Waiter] = [:]
        /// Requests still waiting, registered or about to be.
        var participants = 1
        /// Waiters cancelled before they could register their continuation.
        var cancelledEarly: Set<UInt64> = []
    }

    let timeToLive: Duration
    let capacity: Int
    /// Where expiry reads the time (tests advance a clock of their own).
    let clock: @Sendable () -> MonotonicInstant
    private let state = Mutex(State())

    init(timeToLive: Duration, capacity: Int, clock: @escaping @Sendable () -> MonotonicInstant = { .now() }) {
        self.timeToLive = timeToLive
        self.capacity = max(1, capacity)
        self.clock = clock
    }

    /// Entries held (for tests and metrics).
    var count: Int { state.withLock { $0.index.count } }

    func answer(
        for key: Key, compute: @escaping @Sendable () async throws(GatewayError) -> Answer
    ) async throws(GatewayError) -> (answer: Answer, hit: Bool) {
        try await answer(for: key, now: clock, compute: compute)
    }

    /// ``answer(for:compute:)`` on the clock `now`.
    func answer(
        for key: Key, now: @escaping @Sendable () -> MonotonicInstant,
        compute: @escaping @Sendable () async throws(GatewayError) -> Answer
    ) async throws(GatewayError) -> (answer: Answer, hit: Bool) {
        let timeToLive = self.timeToLive
        return try await answer(for: key, now: now) { () throws(GatewayError) in (try await compute(), timeToLive) }
    }

    /// The cached answer for `key`, or the answer of the call in flight for it, or of a new
    /// call of `compute`, then cached for the lifetime `compute` gives (at most the time to
    /// live; none: not kept). `hit` is true when this request made no call of its own. A
    /// failure is shared with every request that waited for it and not cached. When this
    /// request's task is cancelled it stops waiting at once (`client_closed_request`); the
    /// call goes on while anyone else waits for it.
    func answer(
        for key: Key, now: @escaping @Sendable () -> MonotonicInstant,
        computeWithLifetime compute: @escaping @Sendable () async throws(GatewayError) -> (Answer, lifetime: Duration)
    ) async throws(GatewayError) -> (answer: Answer, hit: Bool) {
        enum Step {
            case hit(Answer)
            case join(UInt64)
            case lead(UInt64)
        }
        let step: Step = state.withLock { state in
            if let answer = Self.lookup(key, now: now(), in: &state) { return .hit(answer) }
            state.nextWaiterID &+= 1
            let id = state.nextWaiterID
            if state.flights[key] != nil {
                state.flights[key]?.participants += 1
                return .join(id)
            }
            state.flights[key] = Flight()
            return .lead(id)
        }
        let waiterID: UInt64
        var start: (@Sendable () -> Void)?
        switch step {
        case .hit(let answer):
            return (answer, true)
        case .join(let id):
            waiterID = id
        case .lead(let id):
            waiterID = id
            // Started only once this request waits for it: a call that landed before its
            // leader waited would leave the leader no answer to take.
            start = { [self] in
                let task = Task { [self] in
                    let result: Result<(Answer, lifetime: Duration), GatewayError>
                    do throws(GatewayError) {
                        result = .success(try await compute())
                    } catch {
                        result = .failure(error)
                    }
                    land(key, result, now: now())
                }
                state.withLock { $0.flights[key]?.task = task }
            }
        }
        let result = await wait(for: key, id: waiterID, thenStart: start)
        return (try result.get(), start == nil)
    }

    /// Waits for the flight of `key`, or leaves it when the task is cancelled. `start` (the
    /// leader's) runs once the waiter is in place, whether or not it was cancelled first:
    /// the others waiting need the call.
    private func wait(for key: Key, id: UInt64, thenStart start: (@Sendable () -> Void)?) async -> Result<
        Answer, GatewayError
    > {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: Waiter) in
                let registered = state.withLock { state -> Bool in
                    guard state.flights[key] != nil else { return false }
                    if state.flights[key]?.cancelledEarly.remove(id) != nil { return false }
                    state.flights[key]?.waiters[id] = continuation
                    return true
                }
                if !registered {
                    // Cancelled already, or the flight landed in between (its answer is cached then).
                    let cached = state.withLock { Self.lookup(key, now: clock(), in: &$0) }
                    continuation.resume(returning: cached.map { .success($0) } ?? .failure(.clientClosedRequest))
                }
                start?()
            }
        } onCancel: {
            let (waiter, abandoned) = state.withLock { state -> (Waiter?, Task<Void, Never>?) in
                guard var flight = state.flights[key] else { return (nil, nil) }
                let waiter = flight.waiters.removeValue(forKey: id)
                if waiter == nil { flight.cancelledEarly.insert(id) }
                flight.participants -= 1
                let abandoned = flight.participants == 0 ? flight.task : nil
                state.flights[key] = flight
                return (waiter, abandoned)
            }
            waiter?.resume(returning: .failure(.clientClosedRequest))
            abandoned?.cancel()
        }
    }

    /// The flight of `key` has its result: cache a success and answer everyone waiting.
    private func land(_ key: Key, _ result: Result<(Answer, lifetime: Duration), GatewayError>, now: MonotonicInstant) {
        let waiters = state.withLock { state -> [Waiter] in
            if case .success(let (answer, lifetime)) = result, lifetime > .zero {
                insert(key, answer, expires: now.advanced(by: min(lifetime, timeToLive)), into: &state)
            }
            return state.flights.removeValue(forKey: key).map { Array($0.waiters.values) } ?? []
        }
        let answered = result.map(\.0)
        for waiter in waiters { waiter.resume(returning: answered) }
    }

    private static func lookup(_ key: Key, now: MonotonicInstant, in state: inout State) -> Answer? {
        guard let slot = state.index[key] else { return nil }
        if state.nodes[slot].expires <= now {
            remove(slot, from: &state)
            return nil
        }
        moveToFront(slot, in: &state)
        return state.nodes[slot].answer
    }

    private func insert(_ key: Key, _ answer: Answer, expires: MonotonicInstant, into state: inout State) {
        if let slot = state.index[key] { Self.remove(slot, from: &state) }
        while state.index.count >= capacity, let tail = state.tail { Self.remove(tail, from: &state) }
        let node = Node(key: key, answer: answer, expires: expires, previous: nil, next: state.head)
        let slot: Int
        if let reused = state.free.popLast() {
            slot = reused
            state.nodes[slot] = node
        } else {
            slot = state.nodes.count
            state.nodes.append(node)
        }
        if let head = state.head { state.nodes[head].previous = slot }
        state.head = slot
        if state.tail == nil { state.tail = slot }
        state.index[key] = slot
    }

    private static func unlink(_ slot: Int, in state: inout State) {
        let previous = state.nodes[slot].previous
        let next = state.nodes[slot].next
        if let previous { state.nodes[previous].next = next } else { state.head = next }
        if let next { state.nodes[next].previous = previous } else { state.tail = previous }
        state.nodes[slot].previous = nil
        state.nodes[slot].next = nil
    }

    private static func moveToFront(_ slot: Int, in state: inout State) {
        guard state.head != slot else { return }
        unlink(slot, in: &state)
        state.nodes[slot].next = state.head
        if let head = state.head { state.nodes[head].previous = slot }
        state.head = slot
        if state.tail == nil { state.tail = slot }
    }

    private static func remove(_ slot: Int, from state: inout State) {
        unlink(slot, in: &state)
        state.index.removeValue(forKey: state.nodes[slot].key)
        state.nodes[slot].key = Key(task: "", tone: nil, model: "", text: "") // drop the text now
        state.nodes[slot].answer = Answer(result: "", usage: nil)
        state.free.append(slot)
    }
}
