#if canImport(Glibc)
import Glibc
#endif
import CCurl
import EventLoop

/// One long-lived curl multi handle driven by an ``EventLoop``: curl's sockets sit in the
/// loop's epoll (`CURLMOPT_SOCKETFUNCTION`), its timeout is one loop timer
/// (`CURLMOPT_TIMERFUNCTION`), and readiness becomes `curl_multi_socket_action`. The handle
/// owns the connection pool, so connections are reused across requests. Every curl call
/// happens on the loop thread, and never from inside a curl callback.
final class CurlMulti {
    let loop: EventLoop
    private let handle: UnsafeMutableRawPointer
    private let configuration: HTTPClientConfiguration
    private var transfers: [UnsafeMutableRawPointer: Transfer] = [:]
    private var sockets: [curl_socket_t: CurlSocket] = [:]
    private var timer: TimerID?
    private var idleHandles: [CurlEasy] = []
    private var isShutdown = false

    /// Transfers in flight (for tests and metrics).
    var activeTransfers: Int { transfers.count }

    init(loop: EventLoop, configuration: HTTPClientConfiguration, maxConnections: Int) throws(HTTPClientError) {
        guard let handle = curl_multi_init() else { throw HTTPClientError(.invalidRequest, "curl_multi_init failed") }
        self.loop = loop
        self.handle = handle
        self.configuration = configuration
        let context = Unmanaged.passUnretained(self).toOpaque()
        var failed = false
        failed = failed || CCurl_multi_setopt_socket_callback(handle, curlSocketCallback) != CURLM_OK
        failed = failed || CCurl_multi_setopt_pointer(handle, CURLMOPT_SOCKETDATA, context) != CURLM_OK
        failed = failed || CCurl_multi_setopt_timer_callback(handle, curlTimerCallback) != CURLM_OK
        failed = failed || CCurl_multi_setopt_pointer(handle, CURLMOPT_TIMERDATA, context) != CURLM_OK
        failed = failed || CCurl_multi_setopt_long(handle, CURLMOPT_MAX_TOTAL_CONNECTIONS, maxConnections) != CURLM_OK
        failed = failed || CCurl_multi_setopt_long(handle, CURLMOPT_MAXCONNECTS, configuration.maxIdleConnectionsPerLoop) != CURLM_OK
        failed = failed || CCurl_multi_setopt_long(handle, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX)) != CURLM_OK
        if failed {
            curl_multi_cleanup(handle)
            throw HTTPClientError(.invalidRequest, "configuring the curl multi handle failed")
        }
    }

    // MARK: - Transfers

    /// Configures an easy handle for `request` and adds it; curl starts it on the next timer tick.
    func start(_ request: HTTPClientRequest, streaming: Bool) throws(HTTPClientError) -> Transfer {
        guard !isShutdown else { throw HTTPClientError(.shutdown) }
        let easy: CurlEasy
        if let idle = idleHandles.popLast() { easy = idle } else { easy = try CurlEasy() }
        let transfer = Transfer(
            easy: easy, streaming: streaming,
            maxBodyBytes: configuration.maxResponseBytes, highWatermark: configuration.streamHighWatermark
        )
        do throws(HTTPClientError) {
            try configure(easy, for: request, transfer: transfer)
        } catch {
            transfer.finish(.failure(error))
            recycle(easy)
            throw error
        }
        let code = curl_multi_add_handle(handle, easy.handle)
        guard code == CURLM_OK else {
            let error = HTTPClientError(.invalidRequest, String(cString: curl_multi_strerror(code)))
            transfer.finish(.failure(error))
            recycle(easy)
            throw error
        }
        transfers[easy.handle] = transfer
        return transfer
    }

    private func configure(_ easy: CurlEasy, for request: HTTPClientRequest, transfer: Transfer) throws(HTTPClientError) {
        let lowercasedURL = request.url.lowercased()
        guard lowercasedURL.hasPrefix("http://") || lowercasedURL.hasPrefix("https://") else {
            throw HTTPClientError(.invalidRequest, "only http and https URLs are allowed")
        }
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        try easy.set(CURLOPT_URL, request.url)
        try easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
        try easy.set(CURLOPT_NOSIGNAL, 1)
        try easy.set(CURLOPT_TIMEOUT_MS, Self.milliseconds(request.timeout ?? configuration.timeout))
        try easy.set(CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(request.connectTimeout ?? configuration.connectTimeout))
        try easy.set(CURLOPT_TCP_KEEPALIVE, configuration.tcpKeepAlive ? 1 : 0)
        try easy.set(CURLOPT_TCP_NODELAY, 1)
        try easy.set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
        // Waiting to multiplex only pays over TLS, where ALPN reveals HTTP/2 during the handshake;
        // over plain http it would hold a request until the first response on a new connection.
        try easy.set(CURLOPT_PIPEWAIT, lowercasedURL.hasPrefix("https://") ? 1 : 0)
        try easy.set(CURLOPT_WRITEFUNCTION, callback: curlWriteCallback)
        try easy.set(CURLOPT_WRITEDATA, pointer: context)
        try easy.set(CURLOPT_HEADERFUNCTION, callback: curlHeaderCallback)
        try easy.set(CURLOPT_HEADERDATA, pointer: context)
        switch request.method {
        case "GET": try easy.set(CURLOPT_HTTPGET, 1)
        case "HEAD": try easy.set(CURLOPT_NOBODY, 1)
        case "POST": break
        default: try easy.set(CURLOPT_CUSTOMREQUEST, request.method)
        }
        if let body = request.body { try easy.setBody(body) }
        var list: UnsafeMutablePointer<curl_slist>?
        // A field with an empty value removes curl's own default for it (e.g. Content-Type).
        for field in request.headers {
            let name = field.name.filter { $0 != "\r" && $0 != "\n" && $0 != ":" }
            let value = field.value.filter { $0 != "\r" && $0 != "\n" }
            list = curl_slist_append(list, value.isEmpty ? "\(name):" : "\(name): \(value)")
        }
        list = curl_slist_append(list, "Expect:")  // no 100-continue round trip
        transfer.headerList = list
        try easy.set(CURLOPT_HTTPHEADER, list: list)
    }

    /// Aborts a transfer: removed from the multi handle at once, its connection closed
    /// rather than returned to the pool mid-response.
    /// A transfer that already ended is left alone: its easy handle may be carrying a newer
    /// transfer by now, which a late cancel (a dropped stream, a task cancelled after its
    /// answer) must not touch.
    func cancel(_ transfer: Transfer) {
        guard transfers[transfer.easy.handle] === transfer else { return }
        transfers.removeValue(forKey: transfer.easy.handle)
        curl_multi_remove_handle(handle, transfer.easy.handle)
        transfer.finish(.failure(HTTPClientError(.cancelled)))
        recycle(transfer.easy)
    }

    /// Continues a transfer paused because its consumer fell behind.
    func resume(_ transfer: Transfer) {
        guard transfers[transfer.easy.handle] === transfer else { return }
        curl_easy_pause(transfer.easy.handle, CCurl_PAUSE_CONT)
    }

    private func recycle(_ easy: CurlEasy) {
        easy.reset()
        if idleHandles.count < 256 && !isShutdown {
            idleHandles.append(easy)
        } else {
            easy.cleanup()
        }
    }

    // MARK: - Driving curl

    func socketAction(_ socket: curl_socket_t, _ mask: Int32) {
        guard !isShutdown else { return }
        var running: Int32 = 0
        _ = curl_multi_socket_action(handle, socket, mask, &running)
        drainMessages()
    }

    private func drainMessages() {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(handle, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let easyHandle = message.pointee.easy_handle else { continue }
            let code = message.pointee.data.result
            guard let transfer = transfers.removeValue(forKey: easyHandle) else { continue }
            let result = classify(code, transfer)
            curl_multi_remove_handle(handle, easyHandle)
            transfer.finish(result)
            recycle(transfer.easy)
        }
    }

    private func classify(_ code: CURLcode, _ transfer: Transfer) -> Result<Void, HTTPClientError> {
        switch code {
        case CURLE_OK:
            return .success(())
        case CURLE_WRITE_ERROR where transfer.bodyTooLarge:
            return .failure(HTTPClientError(.responseTooLarge))
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return .failure(HTTPClientError(.connectFailed, CurlEasy.describe(code)))
        case CURLE_OPERATION_TIMEDOUT:
            return .failure(HTTPClientError(.timedOut, transfer.easy.connected ? "response" : "connect"))
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL:
            return .failure(HTTPClientError(.invalidRequest, CurlEasy.describe(code)))
        default:
            return .failure(HTTPClientError(.transport, CurlEasy.describe(code)))
        }
    }

    /// `CURLMOPT_SOCKETFUNCTION`: watch, re-watch or forget a socket.
    fileprivate func updateSocket(_ socket: curl_socket_t, what: Int32) {
        if what == CURL_POLL_REMOVE {
            if sockets.removeValue(forKey: socket) != nil { loop.deregister(socket) }
            return
        }
        var interest: SelectorInterest = []
        if what == CURL_POLL_IN || what == CURL_POLL_INOUT { interest.insert(.read) }
        if what == CURL_POLL_OUT || what == CURL_POLL_INOUT { interest.insert(.write) }
        if sockets[socket] != nil {
            try? loop.reregister(socket, interest: interest)
        } else {
            let watcher = CurlSocket(socket: socket, multi: self)
            do {
                try loop.register(socket, interest: interest, handler: watcher)
                sockets[socket] = watcher
            } catch {
                // curl notices the dead socket through its own timeouts.
            }
        }
    }

    /// `CURLMOPT_TIMERFUNCTION`: one loop timer; curl is called from the timer, never from here.
    fileprivate func updateTimer(milliseconds: Int) {
        if let timer { loop.cancelTimer(timer) }
        timer = nil
        guard milliseconds >= 0 else { return }
        let deadline = MonotonicInstant.now().advanced(by: .milliseconds(milliseconds))
        timer = loop.scheduleTimer(at: deadline) { [unowned self] in
            self.timer = nil
            self.socketAction(CCurl_SOCKET_TIMEOUT, 0)
        }
    }

    // MARK: - Shutdown

    /// Fails every transfer, closes every connection and frees the handles. Explicit
    /// rather than in `deinit`: cleanup calls back into this object.
    func shutdown() {
        guard !isShutdown else { return }
        for (easyHandle, transfer) in transfers {
            curl_multi_remove_handle(handle, easyHandle)
            transfer.finish(.failure(HTTPClientError(.shutdown)))
            transfer.easy.cleanup()
        }
        transfers = [:]
        isShutdown = true
        for easy in idleHandles { easy.cleanup() }
        idleHandles = []
        curl_multi_cleanup(handle)
        for socket in sockets.keys { loop.deregister(socket) }
        sockets = [:]
        if let timer { loop.cancelTimer(timer) }
        timer = nil
    }

    static func milliseconds(_ duration: Duration) -> Int {
        Int(min(duration.nanosecondsClamped / 1_000_000, UInt64(Int32.max)))
    }
}

@available(*, unavailable)
extension CurlMulti: Sendable {}

/// The loop's handler for one curl socket.
private final class CurlSocket: Selectable {
    let socket: curl_socket_t
    unowned let multi: CurlMulti

    init(socket: curl_socket_t, multi: CurlMulti) {
        self.socket = socket
        self.multi = multi
    }

    func selectorEvents(_ events: SelectorEvents) {
        var mask: Int32 = 0
        if events.contains(.readable) || events.contains(.hangup) { mask |= CURL_CSELECT_IN }
        if events.contains(.writable) { mask |= CURL_CSELECT_OUT }
        if events.contains(.error) { mask |= CURL_CSELECT_ERR }
        multi.socketAction(socket, mask)
    }
}

private let curlSocketCallback: CCurlSocketCallback = { _, socket, what, context, _ in
    guard let context else { return 0 }
    Unmanaged<CurlMulti>.fromOpaque(context).takeUnretainedValue().updateSocket(socket, what: what)
    return 0
}

private let curlTimerCallback: CCurlTimerCallback = { _, milliseconds, context in
    guard let context else { return 0 }
    Unmanaged<CurlMulti>.fromOpaque(context).takeUnretainedValue().updateTimer(milliseconds: milliseconds)
    return 0
}

private let curlWriteCallback: CCurlDataCallback = { data, size, count, context in
    guard let context, let data else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.receiveBody(UnsafeRawBufferPointer(start: data, count: size * count))
}

private let curlHeaderCallback: CCurlDataCallback = { data, size, count, context in
    guard let context, let data else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    transfer.receiveHeaderLine(UnsafeRawBufferPointer(start: data, count: size * count))
    return size * count
}
