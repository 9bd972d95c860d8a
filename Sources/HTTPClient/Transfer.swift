import CCurl
import EventLoop
import Synchronization

/// One request in flight on a ``CurlMulti``: its easy handle and header list besides the
/// response. curl's callbacks reach it through the pointer given as `WRITEDATA`/`HEADERDATA`,
/// kept alive by the multi's table.
final class Transfer: ResponseSink {
    let easy: CurlEasy
    var headerList: CurlHeaderList?
    /// The loop timer of the request's head timeout, while it runs.
    var headTimer: TimerID?

    init(easy: CurlEasy, streaming: Bool, maxBodyBytes: Int, highWatermark: Int) {
        self.easy = easy
        super.init(streaming: streaming, maxBodyBytes: maxBodyBytes, highWatermark: highWatermark)
    }

    override func finish(_ result: Result<Void, HTTPClientError>) {
        headerList?.free()
        headerList = nil
        super.finish(result)
    }
}

/// What carries a loop's requests: curl (``CurlMulti``) or the client's own HTTP/1.1
/// connections (``PlainConnections``). Every call is made on its loop.
protocol TransferDriver: AnyObject {
    /// Starts `request`; `attach` gives the new request its waiter, and false from it means
    /// the caller was cancelled meanwhile (the request is then cancelled).
    func start(_ request: HTTPClientRequest, streaming: Bool, attach: (ResponseSink) -> Bool) throws(HTTPClientError)
    /// Aborts a request still in flight; one that ended already is left alone.
    func cancel(_ transfer: ResponseSink)
    /// Continues a request paused because its consumer fell behind.
    func resume(_ transfer: ResponseSink)
}

/// Lets any thread cancel a transfer that a loop owns: cancellation can arrive before the
/// transfer starts (it is then never started) or while it runs (it is removed at once).
final class TransferToken: Sendable {
    private struct State {
        var cancelled = false
        var transfer: LoopBound<ResponseSink>?
    }

    let driver: LoopBound<any TransferDriver>
    private let state = Mutex(State())

    init(driver: LoopBound<any TransferDriver>) {
        self.driver = driver
    }

    /// On the loop: records the started transfer; false when cancelled already.
    func attach(_ transfer: ResponseSink) -> Bool {
        state.withLock { state in
            if state.cancelled { return false }
            state.transfer = LoopBound(transfer, loop: driver.loop)
            return true
        }
    }

    /// From any thread: aborts the transfer (now, or before it starts).
    func cancel() {
        let transfer = state.withLock { state -> LoopBound<ResponseSink>? in
            state.cancelled = true
            defer { state.transfer = nil }
            return state.transfer
        }
        guard let transfer else { return }
        driver.withValue { driver in driver.cancel(transfer.value) }
    }

    /// On the loop, once the transfer ended by itself.
    func detach() {
        state.withLock { $0.transfer = nil }
    }

    /// The transfer, on its loop.
    var transfer: ResponseSink? {
        state.withLock { $0.transfer }?.value
    }
}
