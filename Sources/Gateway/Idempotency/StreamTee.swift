import ChatAPI
import HTTPServer
import Synchronization

/// One streamed answer, produced once in a task of its own and read by any number of
/// clients: the one that asked for it (until it goes away) and retries that join it while it
/// runs. The producer writes through ``writer``; nothing it writes can fail, so a client
/// that hangs up no longer ends the upstream call.
final class StreamTee: Sendable {
    /// How a joining client catches up, and what is kept for a replay.
    enum Shape: Sendable {
        /// An opening event, deltas that carry the text so far, one last event (`/api/process`:
        /// `start`, `delta`, `done` or `error`). A joiner gets `opening`, one delta made by
        /// `delta` with the whole text so far, then what follows.
        case text(opening: [UInt8], delta: @Sendable (String) -> [UInt8])
        /// `/v1/chat/completions`: chunks relayed as they came. A joiner gets every event so
        /// far, then what follows.
        case transcript
    }

    private struct State {
        var subscribers: [UInt64: AsyncStream<[UInt8]>.Continuation] = [:]
        var nextID: UInt64 = 0
        var finished = false
        var sawStart = false
        /// The whole text after the delta about to be written (``noteText(_:)``).
        var pendingText: String?
        var text = ""
        /// The last event of a `/api/process` stream: `done` or `error`.
        var last: [UInt8]?
        /// Every event but heartbeats, for ``Shape/transcript``.
        var transcript: [UInt8] = []
    }

    let shape: Shape
    private let state = Mutex(State())

    init(shape: Shape) {
        self.shape = shape
    }

    /// The writer the stream's producer writes to.
    var writer: ResponseBodyWriter {
        ResponseBodyWriter(sink: { [self] bytes in publish(bytes) })
    }

    /// Tells the tee the whole text a `delta` about to be written brings the answer to, so
    /// a client joining after it gets the text in one piece.
    func noteText(_ text: String) {
        state.withLock { $0.pendingText = text }
    }

    /// The text the deltas carried, the last event (for a finished `/api/process` stream) and
    /// every event but heartbeats (for a transcript).
    var kept: (text: String, last: [UInt8]?, transcript: [UInt8]) {
        state.withLock { ($0.text, $0.last, $0.transcript) }
    }

    private func publish(_ bytes: [UInt8]) {
        let heartbeat = bytes.first == UInt8(ascii: ":")
        let subscribers = state.withLock { state -> [AsyncStream<[UInt8]>.Continuation] in
            guard !state.finished else { return [] }
            if !heartbeat {
                switch shape {
                case .transcript:
                    state.transcript += bytes
                case .text:
                    if !state.sawStart {
                        state.sawStart = true
                    } else if let text = state.pendingText {
                        state.text = text
                        state.pendingText = nil
                    } else {
                        state.last = bytes
                    }
                }
            }
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.yield(bytes) }
    }

    /// The producer is done: every reader gets the end of its stream.
    func finish() {
        let subscribers = state.withLock { state -> [AsyncStream<[UInt8]>.Continuation] in
            state.finished = true
            defer { state.subscribers = [:] }
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.finish() }
    }

    /// A reader's place in the stream, taken before the reader writes anything.
    struct Subscription: Sendable {
        let events: AsyncStream<[UInt8]>

        /// Writes the stream to `writer` until its end; throws when `writer`'s client has gone.
        func forward(to writer: ResponseBodyWriter) async throws {
            for await piece in events { try await writer.write(piece) }
        }
    }

    /// A place in the stream from now: all of it for the client that asked for it (taken
    /// before the producer starts), or, for a joining retry, what it has missed (in
    /// ``Shape``'s catch-up form) then what follows.
    func subscribe(joining: Bool) -> Subscription {
        let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .unbounded)
        let id = state.withLock { state -> UInt64 in
            state.nextID &+= 1
            let id = state.nextID
            if joining { continuation.yield(catchUp(state)) }
            if state.finished {
                continuation.finish()
            } else {
                state.subscribers[id] = continuation
            }
            return id
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return Subscription(events: stream)
    }

    /// What a client joining now has missed.
    private func catchUp(_ state: State) -> [UInt8] {
        switch shape {
        case .transcript:
            return state.transcript
        case .text(let opening, let delta):
            guard state.sawStart else { return [] }
            var bytes = opening
            if !state.text.isEmpty { bytes += delta(state.text) }
            if let last = state.last { bytes += last }
            return bytes
        }
    }
}
