import ChatAPI
import EventLoop
import Synchronization

/// A bounded LRU of `/api/process` answers with a time to live, and single flight: while one
/// request asks the upstream for a key, identical requests wait for its answer instead of
/// calling the upstream again.
final class ResponseCache: Sendable {
    /// What a cached request is answered with.
    struct Answer: Sendable, Equatable {
        let result: String
        let usage: Usage?
    }

    /// task, tone, model and the trimmed text: everything the answer depends on.
    struct Key: Hashable, Sendable {
        let task: String
        let tone: String?
        let model: String
        let text: String
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
        var head: Int?  // most recently used
        var tail: Int?  // least recently used
        var waiting: [Key: [CheckedContinuation<Result<Answer, GatewayError>, Never>]] = [:]
    }

    let timeToLive: Duration
    let capacity: Int
    private let state = Mutex(State())

    init(timeToLive: Duration, capacity: Int) {
        self.timeToLive = timeToLive
        self.capacity = max(1, capacity)
    }

    /// Entries held (for tests and metrics).
    var count: Int { state.withLock { $0.index.count } }

    /// The cached answer for `key`, or the one an identical request in flight gets, or the
    /// answer of `compute` (then cached). `hit` is true when no upstream call was made for
    /// this request. A failure is shared with the requests that waited for it and not cached.
    func answer(
        for key: Key,
        now: @Sendable () -> MonotonicInstant = { .now() },
        compute: () async throws(GatewayError) -> Answer
    ) async throws(GatewayError) -> (answer: Answer, hit: Bool) {
        enum Step { case hit(Answer), wait, lead }
        let step: Step = state.withLock { state in
            if let answer = Self.lookup(key, now: now(), in: &state) { return .hit(answer) }
            if state.waiting[key] != nil { return .wait }
            state.waiting[key] = []
            return .lead
        }
        switch step {
        case .hit(let answer):
            return (answer, true)
        case .wait:
            let result = await withCheckedContinuation { continuation in
                let stillWaiting = state.withLock { state -> Bool in
                    guard state.waiting[key] != nil else { return false }
                    state.waiting[key]?.append(continuation)
                    return true
                }
                if !stillWaiting {
                    // The leader finished in between: its answer is in the cache, or it failed.
                    let cached = state.withLock { Self.lookup(key, now: now(), in: &$0) }
                    continuation.resume(returning: cached.map { .success($0) } ?? .failure(.upstreamError))
                }
            }
            return (try result.get(), true)
        case .lead:
            let result: Result<Answer, GatewayError>
            do {
                result = .success(try await compute())
            } catch {
                result = .failure(error)
            }
            let waiters = state.withLock { state -> [CheckedContinuation<Result<Answer, GatewayError>, Never>] in
                if case .success(let answer) = result { insert(key, answer, now: now(), into: &state) }
                return state.waiting.removeValue(forKey: key) ?? []
            }
            for waiter in waiters { waiter.resume(returning: result) }
            return (try result.get(), false)
        }
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

    private func insert(_ key: Key, _ answer: Answer, now: MonotonicInstant, into state: inout State) {
        if let slot = state.index[key] { Self.remove(slot, from: &state) }
        while state.index.count >= capacity, let tail = state.tail { Self.remove(tail, from: &state) }
        let node = Node(key: key, answer: answer, expires: now.advanced(by: timeToLive), previous: nil, next: state.head)
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
        state.nodes[slot].key = Key(task: "", tone: nil, model: "", text: "")  // drop the text now
        state.nodes[slot].answer = Answer(result: "", usage: nil)
        state.free.append(slot)
    }
}
