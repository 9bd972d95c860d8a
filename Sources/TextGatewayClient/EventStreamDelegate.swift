import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a stream's owner makes of each event: go on, or stop because it was the last.
enum EventDisposition: Sendable {
    case more
    case last
}

/// One event stream's transfer: `URLSession` hands it the body as it arrives, it parses the
/// events and gives them to `onEvent`, and tells `onEnd` once how the stream ended. A
/// delegate per stream, because swift-corelibs-foundation has no `bytes(for:)`.
///
/// `@unchecked Sendable`: `URLSession` calls it on its one serial delegate queue while the
/// stream's consumer may cancel from another thread; every mutable field is read and written
/// only inside `lock`.
final class EventStreamDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    /// How a stream ended: `nil` after its last event, else the error to throw.
    typealias End = @Sendable ((any Error)?) -> Void

    private let lock = NSLock()
    private var parser = ServerSentEventParser()
    private var errorBody: [UInt8]?
    private var ended = false
    private let onEvent: @Sendable (ServerSentEvent) throws -> EventDisposition
    private let onEnd: End

    init(onEvent: @escaping @Sendable (ServerSentEvent) throws -> EventDisposition, onEnd: @escaping End) {
        self.onEvent = onEvent
        self.onEnd = onEnd
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let status = (dataTask.response as? HTTPURLResponse)?.statusCode ?? 200
        let outcome: (any Error)?? = lock.withLock {
            guard !ended else { return nil }
            if !(200..<300).contains(status) {
                errorBody = (errorBody ?? []) + data
                return nil
            }
            for event in parser.feed(data) {
                do {
                    if try onEvent(event) == .last {
                        ended = true
                        return .some(nil)
                    }
                } catch {
                    ended = true
                    return .some(error)
                }
            }
            return nil
        }
        if let outcome {
            onEnd(outcome)
            dataTask.cancel()
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let response = task.response as? HTTPURLResponse
        let outcome: (any Error)?? = lock.withLock {
            guard !ended else { return nil }
            ended = true
            if let error { return .some(error) }
            if let response, !(200..<300).contains(response.statusCode) {
                return .some(
                    TextGatewayClient.error(status: response.statusCode, body: errorBody ?? [], headers: response))
            }
            if let event = parser.finish() {
                do {
                    if try onEvent(event) == .last { return .some(nil) }
                } catch {
                    return .some(error)
                }
            }
            // The body ended without a terminal event: the connection was cut.
            return .some(URLError(.networkConnectionLost))
        }
        if let outcome { onEnd(outcome) }
        session.finishTasksAndInvalidate()
    }
}

/// The data task of a transfer that an async caller may cancel before or after it starts.
///
/// `@unchecked Sendable`: the task and the flag are read and written only inside `lock`.
final class TransferHandle: @unchecked Sendable {
    private let lock = NSLock()
    private var task: URLSessionDataTask?
    private var cancelled = false

    /// Resumes `task`, and cancels it at once when ``cancel()`` came first.
    func start(_ task: URLSessionDataTask) {
        let cancelled = lock.withLock {
            self.task = task
            task.resume()
            return self.cancelled
        }
        if cancelled { task.cancel() }
    }

    /// Cancels the task, or the one ``start(_:)`` will be given.
    func cancel() {
        let task = lock.withLock {
            cancelled = true
            return self.task
        }
        task?.cancel()
    }
}
