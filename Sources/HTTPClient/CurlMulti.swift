import CCurl
import EventLoop

#if canImport(Glibc)
    import Glibc
#endif

/// The upstream side of one ``EventLoop``: curl multi handles ("lanes") driven by the loop.
/// Curl's sockets sit in the loop's epoll (`CURLMOPT_SOCKETFUNCTION`), each lane's timeout
/// is one loop timer (`CURLMOPT_TIMERFUNCTION`), and readiness becomes
/// `curl_multi_socket_action`. Every curl call happens on the loop thread, and never from
/// inside a curl callback.
///
/// Why lanes: a multi handle keeps its connections to one host in a list that it walks for
/// every new transfer (looking for one to reuse) and when a connection is returned, so with
/// thousands of transfers in flight on one handle each start costs thousands of steps. A
/// lane takes at most ``HTTPClientConfiguration/transfersPerCurlHandle`` transfers; lanes fill
/// in order, so light traffic stays on the first lane and reuses its connections, and a burst
/// spreads over as many lanes as it needs. A lane without transfers for
/// ``HTTPClientConfiguration/idleConnectionTimeout`` is closed with its idle connections, so a
/// burst's connections do not outlive it.
///
/// https goes to one lane of its own that multiplexes: every https transfer of the loop
/// shares its connection cache, and a per-host cap makes a cold burst wait for HTTP/2 streams
/// instead of opening a connection per transfer (curl waits for a connection still in its
/// handshake only while it does not know the host multiplexes; past the first connection's
/// streams it would open one per transfer). An https host seen answering in HTTP/1.1 goes to
/// the plain lanes from then on, where only ``HTTPClientConfiguration/maxConnections`` bounds
/// it, and its transfers that have sent nothing yet move there at once.
final class CurlMulti: TransferDriver {
    let loop: EventLoop
    private let configuration: HTTPClientConfiguration
    private let laneCapacity: Int
    /// Connections all lanes together may hold: lanes are added while their capacities sum
    /// to less, the last one with what is left.
    private let maxConnections: Int
    /// Open lanes, in the order they are filled.
    private var lanes: [CurlLane] = []
    /// The lane of https transfers, made on first use.
    private var multiplexLane: CurlLane?
    /// https hosts (`host:port`) seen answering in HTTP/1.x; a client calls a handful.
    private var http1Origins: Set<Substring> = []
    private static let http1OriginLimit = 64
    /// Hosts just seen answering in HTTP/1.x whose waiting transfers still sit on the
    /// multiplexing lane (noted from a header callback, moved after curl returns).
    private var originsToMove: [Substring] = []
    /// Given to transfers on the multiplexing lane: one closure for all, not one each.
    private lazy var http1Seen: (Substring) -> Void = { [unowned self] origin in self.learnHTTP1(origin) }
    private var transfers: [UnsafeMutableRawPointer: (transfer: Transfer, lane: CurlLane)] = [:]
    private var sockets: [curl_socket_t: CurlSocket] = [:]
    private var idleHandles: [CurlEasy] = []
    /// URLs parsed once for `CURLOPT_CURLU`, with their text: with a parsed URL set, curl
    /// neither parses the URL again nor rebuilds its text for each transfer (what that saves
    /// is in BENCHMARKS.md's history). A client calls a handful of URLs, so they are
    /// found by comparing texts in order (the same string storage: one check each), which
    /// costs less than hashing the text; past ``parsedURLLimit`` of them, curl parses the
    /// rest itself.
    private var parsedURLs: [(url: String, parsed: OpaquePointer)] = []
    private static let parsedURLLimit = 16
    /// Idle easy handles kept whatever is in flight.
    static let idleHandleFloor = 8
    private var sweepTimer: TimerID?
    private var isShutdown = false

    /// Transfers in flight (for tests and metrics).
    var activeTransfers: Int { transfers.count }
    /// Easy handles kept for later transfers (for tests).
    var idleHandleCount: Int { idleHandles.count }

    init(loop: EventLoop, configuration: HTTPClientConfiguration, maxConnections: Int) throws(HTTPClientError) {
        self.loop = loop
        self.configuration = configuration
        laneCapacity = max(1, min(configuration.transfersPerCurlHandle, maxConnections))
        self.maxConnections = max(1, maxConnections)
        // the first lane exists up front: a bad libcurl fails at start
        lanes.append(try makeLane(capacity: laneCapacity))
    }

    private func makeLane(capacity: Int, multiplexing: Bool = false) throws(HTTPClientError) -> CurlLane {
        guard let handle = curl_multi_init() else { throw HTTPClientError(.invalidRequest, "curl_multi_init failed") }
        let lane = CurlLane(handle: handle, multi: self, capacity: capacity, multiplexing: multiplexing)
        let context = Unmanaged.passUnretained(lane).toOpaque()
        var failed = false
        failed = failed || CCurl_multi_setopt_socket_callback(handle, curlSocketCallback) != CURLM_OK
        failed = failed || CCurl_multi_setopt_pointer(handle, CURLMOPT_SOCKETDATA, context) != CURLM_OK
        failed = failed || CCurl_multi_setopt_timer_callback(handle, curlTimerCallback) != CURLM_OK
        failed = failed || CCurl_multi_setopt_pointer(handle, CURLMOPT_TIMERDATA, context) != CURLM_OK
        failed = failed || CCurl_multi_setopt_long(handle, CURLMOPT_MAX_TOTAL_CONNECTIONS, capacity) != CURLM_OK
        // The cache holds every connection of the lane, busy or idle: sized so curl never
        // evicts while the lane is full, and never walks it for an eviction on each return.
        failed = failed || CCurl_multi_setopt_long(handle, CURLMOPT_MAXCONNECTS, capacity) != CURLM_OK
        failed = failed || CCurl_multi_setopt_long(handle, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX)) != CURLM_OK
        if multiplexing {
            failed =
                failed
                || CCurl_multi_setopt_long(
                    handle, CURLMOPT_MAX_HOST_CONNECTIONS, max(1, configuration.http2ConnectionsPerHost)) != CURLM_OK
            // Below common servers' limits, curl's own default would open another connection
            // while the first still had streams to give.
            failed =
                failed
                || CCurl_multi_setopt_long(
                    handle, CURLMOPT_MAX_CONCURRENT_STREAMS, max(1, configuration.http2StreamsPerConnection))
                    != CURLM_OK
        }
        if failed {
            curl_multi_cleanup(handle)
            throw HTTPClientError(.invalidRequest, "configuring the curl multi handle failed")
        }
        return lane
    }

    /// The first lane with room; a new lane when all are full and the cap allows; else the
    /// least busy (curl queues the transfer until one of its connections is free).
    private func pickLane(origin: Substring?) throws(HTTPClientError) -> CurlLane {
        if let origin, !http1Origins.contains(origin) {
            if let lane = multiplexLane { return lane }
            let lane = try makeLane(capacity: maxConnections, multiplexing: true)
            multiplexLane = lane
            return lane
        }
        for lane in lanes where lane.active < lane.capacity { return lane }
        let room = maxConnections - lanes.reduce(0) { $0 + $1.capacity }
        if room > 0 {
            let lane = try makeLane(capacity: min(laneCapacity, room))
            lanes.append(lane)
            return lane
        }
        var best = lanes[0]
        for lane in lanes where lane.active < best.active { best = lane }
        return best
    }

    // MARK: - Transfers

    /// Configures an easy handle for `request`, adds it, lets `attach` give the transfer its
    /// waiter (false: the caller was cancelled meanwhile, and the transfer is cancelled), then
    /// lets curl start it at once: on a kept-alive connection the request is written before
    /// this returns, not after the loop has handled every other event of its wake-up.
    func start(_ request: HTTPClientRequest, streaming: Bool, attach: (ResponseSink) -> Bool) throws(HTTPClientError) {
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
        let lane: CurlLane
        do throws(HTTPClientError) {
            lane = try pickLane(origin: transfer.origin)
        } catch {
            transfer.finish(.failure(error))
            recycle(easy)
            throw error
        }
        lane.adding = true
        let code = curl_multi_add_handle(lane.handle, easy.handle)
        lane.adding = false
        guard code == CURLM_OK else {
            let error = HTTPClientError(.invalidRequest, String(cString: curl_multi_strerror(code)))
            transfer.finish(.failure(error))
            recycle(easy)
            if lane.dueNow { runTimeout(lane) }
            throw error
        }
        transfers[easy.handle] = (transfer, lane)
        lane.active += 1
        if lane.multiplexing { transfer.http1Seen = http1Seen }
        if let headTimeout = request.headTimeout {
            transfer.headTimer = loop.scheduleTimer(at: MonotonicInstant.now().advanced(by: headTimeout)) {
                [unowned self] in
                transfer.headTimer = nil
                guard !transfer.headComplete else { return }
                self.abort(
                    transfer, HTTPClientError(.timedOut, "response head", beforeResponse: !transfer.responseStarted))
            }
        }
        if !attach(transfer) { cancel(transfer) }
        if lane.dueNow { runTimeout(lane) }
    }

    private func configure(_ easy: CurlEasy, for request: HTTPClientRequest, transfer: Transfer) throws(HTTPClientError)
    {
        guard let secure = Self.isSecure(request.url) else {
            throw HTTPClientError(.invalidRequest, "only http and https URLs are allowed")
        }
        if secure { transfer.origin = Self.origin(ofSecure: request.url) }
        let multiplexing = secure && !http1Origins.contains(transfer.origin ?? "")
        if !easy.hasFixedOptions {
            // The same for every transfer: set once per handle, and again only after a reset.
            try easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
            try easy.set(CURLOPT_NOSIGNAL, 1)
            try easy.set(CURLOPT_TCP_KEEPALIVE, configuration.tcpKeepAlive ? 1 : 0)
            try easy.set(CURLOPT_TCP_NODELAY, 1)
            try easy.set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
            // curl's defaults, set so that nothing else can ever leave them off.
            try easy.set(CURLOPT_SSL_VERIFYPEER, 1)
            try easy.set(CURLOPT_SSL_VERIFYHOST, 2)
            try easy.set(CURLOPT_WRITEFUNCTION, callback: curlWriteCallback)
            try easy.set(CURLOPT_HEADERFUNCTION, callback: curlHeaderCallback)
            easy.hasFixedOptions = true
        }
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        try easy.set(CURLOPT_URL, request.url)
        // Set on every transfer, nil included: the handle may still hold the last one's.
        try easy.set(CURLOPT_CURLU, pointer: parsedURL(request.url).map { UnsafeMutableRawPointer($0) })
        try easy.set(CURLOPT_TIMEOUT_MS, Self.milliseconds(request.timeout ?? configuration.timeout))
        try easy.set(
            CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(request.connectTimeout ?? configuration.connectTimeout))
        // Waiting to multiplex only pays over TLS, where ALPN reveals HTTP/2 during the handshake;
        // over plain http it would hold a request until the first response on a new connection.
        // An https host known to answer in HTTP/1.1 is treated as plain http.
        try easy.set(CURLOPT_PIPEWAIT, multiplexing ? 1 : 0)
        try easy.trust(request.caFile)
        if easy.freshConnect {
            try easy.set(CURLOPT_FRESH_CONNECT, 0)
            easy.freshConnect = false
        }
        try easy.set(CURLOPT_WRITEDATA, pointer: context)
        try easy.set(CURLOPT_HEADERDATA, pointer: context)
        switch request.method {
        case "POST":
            // A POST always has a body, empty when none is given: curl's default would read stdin.
            try easy.setBody(request.body ?? [])
        default:
            // Other methods change options a POST does not set again: reset before the next use.
            easy.needsReset = true
            switch request.method {
            case "GET": try easy.set(CURLOPT_HTTPGET, 1)
            case "HEAD": try easy.set(CURLOPT_NOBODY, 1)
            default: try easy.set(CURLOPT_CUSTOMREQUEST, request.method)
            }
            if let body = request.body { try easy.setBody(body) }
        }
        transfer.headerList = CurlHeaderList(request.headers)
        guard let list = transfer.headerList?.head else {
            throw HTTPClientError(.invalidRequest, "out of memory for the header list")
        }
        try easy.set(CURLOPT_HTTPHEADER, list: list)
    }

    /// `url` parsed as curl parses a `CURLOPT_URL` itself, kept until ``shutdown()``; nil
    /// when there are ``parsedURLLimit`` already, or curl rejects it (the transfer then
    /// fails in curl with the error it always gave).
    private func parsedURL(_ url: String) -> OpaquePointer? {
        if let known = parsedURLs.first(where: { $0.url == url }) { return known.parsed }
        guard parsedURLs.count < Self.parsedURLLimit, let parsed = curl_url() else { return nil }
        guard
            curl_url_set(parsed, CURLUPART_URL, url, UInt32(CURLU_GUESS_SCHEME | CURLU_NON_SUPPORT_SCHEME)) == CURLUE_OK
        else {
            curl_url_cleanup(parsed)
            return nil
        }
        parsedURLs.append((url, parsed))
        return parsed
    }

    /// Whether `url` is https (true) or http (false), by its scheme in any case; nil for any other.
    static func isSecure(_ url: String) -> Bool? {
        var url = url
        return url.withUTF8 { bytes -> Bool? in
            func hasPrefix(_ prefix: StaticString) -> Bool {
                let count = prefix.utf8CodeUnitCount
                guard bytes.count >= count else { return false }
                for index in 0..<count where bytes[index] | 0x20 != prefix.utf8Start[index] | 0x20 { return false }
                return true
            }
            if hasPrefix("http://") { return false }
            if hasPrefix("https://") { return true }
            return nil
        }
    }

    /// `host:port` of an https URL (what follows the scheme, up to the path).
    static func origin(ofSecure url: String) -> Substring {
        let rest = url.utf8.dropFirst(8) // "https://"
        let end =
            rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
            ?? rest.endIndex
        return Substring(url[rest.startIndex..<end])
    }

    /// Aborts a transfer: removed from the multi handle at once, its connection closed
    /// rather than returned to the pool mid-response.
    /// A transfer that already ended is left alone: its easy handle may be carrying a newer
    /// transfer by now, which a late cancel (a dropped stream, a task cancelled after its
    /// answer) must not touch.
    func cancel(_ transfer: ResponseSink) {
        guard let transfer = transfer as? Transfer else { return }
        abort(transfer, HTTPClientError(.cancelled, beforeResponse: !transfer.responseStarted))
    }

    private func abort(_ transfer: Transfer, _ error: HTTPClientError) {
        guard let entry = transfers[transfer.easy.handle], entry.transfer === transfer else { return }
        transfers.removeValue(forKey: transfer.easy.handle)
        curl_multi_remove_handle(entry.lane.handle, transfer.easy.handle)
        complete(transfer, on: entry.lane, .failure(error))
    }

    /// The transfer is out of curl and out of the table: wake its waiters, reuse its handle.
    private func complete(_ transfer: Transfer, on lane: CurlLane, _ result: Result<Void, HTTPClientError>) {
        ended(on: lane)
        if let timer = transfer.headTimer { loop.cancelTimer(timer) }
        transfer.headTimer = nil
        transfer.finish(result)
        recycle(transfer.easy)
    }

    /// Continues a transfer paused because its consumer fell behind.
    func resume(_ transfer: ResponseSink) {
        guard let transfer = transfer as? Transfer, let entry = transfers[transfer.easy.handle],
            entry.transfer === transfer
        else { return }
        curl_easy_pause(transfer.easy.handle, CCurl_PAUSE_CONT)
    }

    private func ended(on lane: CurlLane) {
        lane.active -= 1
        if lane.active == 0 {
            lane.idleSince = .now()
            scheduleSweep()
        }
    }

    /// Keeps `easy` for a later transfer. No more are kept than transfers are in flight (and
    /// at least ``idleHandleFloor``): a burst's handles go as it drains, rather than staying
    /// after it scattered through the heap, where each one's pages would keep the freed
    /// pages around them from being given back.
    private func recycle(_ easy: CurlEasy) {
        easy.recycle()
        let keep = isShutdown ? 0 : min(256, max(Self.idleHandleFloor, transfers.count))
        if idleHandles.count < keep {
            idleHandles.append(easy)
        } else {
            easy.cleanup()
        }
        while idleHandles.count > keep { idleHandles.removeLast().cleanup() }
    }

    // MARK: - Driving curl

    fileprivate func socketAction(_ lane: CurlLane, _ socket: curl_socket_t, _ mask: Int32) {
        guard !isShutdown, !lane.isClosed else { return }
        var running: Int32 = 0
        _ = curl_multi_socket_action(lane.handle, socket, mask, &running)
        drainMessages(lane)
        if !originsToMove.isEmpty { moveToPlainLanes() }
    }

    /// From a header callback: `origin` answered in HTTP/1.x, so its transfers need a
    /// connection each, which the multiplexing lane's per-host cap would ration.
    private func learnHTTP1(_ origin: Substring) {
        guard !http1Origins.contains(origin), http1Origins.count < Self.http1OriginLimit else { return }
        http1Origins.insert(origin)
        originsToMove.append(origin)
    }

    /// Moves the transfers of ``originsToMove`` that have sent nothing yet (waiting in curl
    /// for a connection, or on one still connecting) from the multiplexing lane to the plain
    /// lanes, without waiting for a connection of their own.
    private func moveToPlainLanes() {
        let origins = originsToMove
        originsToMove = []
        guard let from = multiplexLane else { return }
        var moving: [Transfer] = []
        for entry in transfers.values where entry.lane === from {
            guard let origin = entry.transfer.origin, origins.contains(origin), !entry.transfer.easy.connected else {
                continue
            }
            moving.append(entry.transfer)
        }
        for transfer in moving {
            curl_multi_remove_handle(from.handle, transfer.easy.handle)
            from.active -= 1
            guard (try? transfer.easy.set(CURLOPT_PIPEWAIT, 0)) != nil,
                let lane = try? pickLane(origin: transfer.origin),
                curl_multi_add_handle(lane.handle, transfer.easy.handle) == CURLM_OK
            else {
                transfers.removeValue(forKey: transfer.easy.handle)
                from.active += 1 // counted down once more by complete
                complete(
                    transfer, on: from,
                    .failure(HTTPClientError(.transport, "moving to a plain handle failed", beforeResponse: true)))
                continue
            }
            transfer.http1Seen = nil
            transfers[transfer.easy.handle] = (transfer, lane)
            lane.active += 1
        }
        if from.active == 0 {
            from.idleSince = .now()
            scheduleSweep()
        }
    }

    private func drainMessages(_ lane: CurlLane) {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(lane.handle, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let easyHandle = message.pointee.easy_handle else { continue }
            let code = message.pointee.data.result
            guard let entry = transfers[easyHandle] else { continue }
            curl_multi_remove_handle(lane.handle, easyHandle)
            if shouldRetry(code, entry.transfer), retryOnFreshConnection(entry.transfer, on: lane) { continue }
            transfers.removeValue(forKey: easyHandle)
            complete(entry.transfer, on: lane, classify(code, entry.transfer))
        }
    }

    /// A connection the server ended before answering (reset, GOAWAY, an HTTP/2 error) fails
    /// a transfer that was sent on it by chance of timing: one more try on a new connection
    /// cannot duplicate an answer. curl retries some of these by itself (a dead HTTP/1
    /// connection, a refused HTTP/2 stream) on a new connection, which this then leaves alone.
    private func shouldRetry(_ code: CURLcode, _ transfer: Transfer) -> Bool {
        switch code {
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING, CURLE_HTTP2, CURLE_HTTP2_STREAM:
            return !transfer.retried && !transfer.responseStarted && !isShutdown && transfer.easy.reusedConnection
        default:
            return false
        }
    }

    /// Adds the transfer again, on a new connection; false when curl refuses it.
    private func retryOnFreshConnection(_ transfer: Transfer, on lane: CurlLane) -> Bool {
        transfer.retried = true
        guard (try? transfer.easy.set(CURLOPT_FRESH_CONNECT, 1)) != nil else { return false }
        transfer.easy.freshConnect = true
        // curl asks for a call at once through its timer: a loop timer, not a call from here.
        return curl_multi_add_handle(lane.handle, transfer.easy.handle) == CURLM_OK
    }

    // MARK: - Closing idle lanes

    private func scheduleSweep(at deadline: MonotonicInstant? = nil) {
        guard sweepTimer == nil, !isShutdown else { return }
        let deadline = deadline ?? MonotonicInstant.now().advanced(by: configuration.idleConnectionTimeout)
        sweepTimer = loop.scheduleTimer(at: deadline) { [unowned self] in
            self.sweepTimer = nil
            self.closeIdleLanes()
        }
    }

    /// Closes every lane that has had no transfer for the idle timeout, with its connections.
    private func closeIdleLanes() {
        guard !isShutdown else { return }
        let now = MonotonicInstant.now()
        var next: MonotonicInstant?
        var kept: [CurlLane] = []
        if let lane = multiplexLane, lane.active == 0 {
            let expiry = lane.idleSince.advanced(by: configuration.idleConnectionTimeout)
            if expiry <= now {
                close(lane)
                multiplexLane = nil
            } else {
                next = expiry
            }
        }
        for lane in lanes {
            guard lane.active == 0 else {
                kept.append(lane)
                continue
            }
            let expiry = lane.idleSince.advanced(by: configuration.idleConnectionTimeout)
            if expiry <= now {
                close(lane)
            } else {
                kept.append(lane)
                if next.map({ expiry < $0 }) ?? true { next = expiry }
            }
        }
        lanes = kept
        if let next { scheduleSweep(at: next) }
    }

    private func close(_ lane: CurlLane) {
        lane.isClosed = true
        if let timer = lane.timer { loop.cancelTimer(timer.id) }
        lane.timer = nil
        lane.deadline = nil
        curl_multi_cleanup(lane.handle) // closes the lane's connections; may call back to forget sockets
        for (socket, watcher) in sockets where watcher.lane === lane {
            sockets.removeValue(forKey: socket)
            loop.deregister(socket)
        }
    }

    private func classify(_ code: CURLcode, _ transfer: Transfer) -> Result<Void, HTTPClientError> {
        if code == CURLE_OK { return .success(()) }
        if code == CURLE_WRITE_ERROR && transfer.bodyTooLarge { return .failure(HTTPClientError(.responseTooLarge)) }
        var error = HTTPClientError(
            Self.kind(of: code), CurlEasy.describe(code), beforeResponse: !transfer.responseStarted)
        if error.kind == .timedOut { error.detail = transfer.easy.connected ? "response" : "connect" }
        return .failure(error)
    }

    /// The kind of failure a curl result means (not `CURLE_OK`).
    static func kind(of code: CURLcode) -> HTTPClientError.Kind {
        switch code {
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return .connectFailed
        case CURLE_OPERATION_TIMEDOUT:
            return .timedOut
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL:
            return .invalidRequest
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM,
            CURLE_SSL_CIPHER, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED,
            CURLE_SSL_CRL_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS,
            CURLE_SSL_CLIENTCERT, CURLE_USE_SSL_FAILED:
            return .tls
        default:
            return .transport
        }
    }

    /// `CURLMOPT_SOCKETFUNCTION`: watch, re-watch or forget a socket.
    fileprivate func updateSocket(_ socket: curl_socket_t, what: Int32, lane: CurlLane) {
        if what == CURL_POLL_REMOVE {
            if sockets.removeValue(forKey: socket) != nil { loop.deregister(socket) }
            return
        }
        var interest: SelectorInterest = []
        if what == CURL_POLL_IN || what == CURL_POLL_INOUT { interest.insert(.read) }
        if what == CURL_POLL_OUT || what == CURL_POLL_INOUT { interest.insert(.write) }
        if let watcher = sockets[socket], watcher.lane !== lane {
            // A descriptor number another lane used before: watch it for this lane now.
            sockets.removeValue(forKey: socket)
            loop.deregister(socket)
        }
        if sockets[socket] != nil {
            try? loop.reregister(socket, interest: interest)
        } else {
            let watcher = CurlSocket(socket: socket, lane: lane)
            do {
                try loop.register(socket, interest: interest, handler: watcher)
                sockets[socket] = watcher
            } catch {
                // curl notices the dead socket through its own timeouts.
            }
        }
    }

    /// `CURLMOPT_TIMERFUNCTION`: curl is called from a loop timer (or from ``start``), never
    /// from here. curl moves its deadline on nearly every call (each transfer's own timeout);
    /// the loop timer is moved only when the deadline comes sooner, and one that fires early
    /// sets itself again for the deadline, so a busy lane does not reschedule a timer for each
    /// request.
    fileprivate func updateTimer(_ lane: CurlLane, milliseconds: Int) {
        guard milliseconds >= 0, !lane.isClosed else {
            lane.deadline = nil // a loop timer still set finds nothing to do
            lane.dueNow = false
            return
        }
        let deadline = MonotonicInstant.now().advanced(by: .milliseconds(milliseconds))
        lane.deadline = deadline
        lane.dueNow = milliseconds == 0 && lane.adding // ``start`` calls curl as soon as it may
        if lane.dueNow { return }
        if let timer = lane.timer, timer.at <= deadline { return }
        setTimer(lane, at: deadline)
    }

    private func setTimer(_ lane: CurlLane, at deadline: MonotonicInstant) {
        if let timer = lane.timer { loop.cancelTimer(timer.id) }
        let id = loop.scheduleTimer(at: deadline) { [unowned self] in
            lane.timer = nil
            guard let deadline = lane.deadline else { return }
            if MonotonicInstant.now() < deadline {
                self.setTimer(lane, at: deadline)
            } else {
                self.runTimeout(lane)
            }
        }
        lane.timer = (id, deadline)
    }

    /// Lets curl do what it asked its timer for; it sets the next deadline itself.
    private func runTimeout(_ lane: CurlLane) {
        lane.deadline = nil
        lane.dueNow = false
        socketAction(lane, CCurl_SOCKET_TIMEOUT, 0)
    }

    // MARK: - Shutdown

    /// Fails every transfer, closes every connection and frees the handles. Explicit
    /// rather than in `deinit`: cleanup calls back into this object.
    func shutdown() {
        guard !isShutdown else { return }
        for (easyHandle, entry) in transfers {
            curl_multi_remove_handle(entry.lane.handle, easyHandle)
            if let timer = entry.transfer.headTimer { loop.cancelTimer(timer) }
            entry.transfer.headTimer = nil
            entry.transfer.finish(.failure(HTTPClientError(.shutdown, beforeResponse: !entry.transfer.responseStarted)))
            entry.transfer.easy.cleanup()
        }
        transfers = [:]
        isShutdown = true
        for easy in idleHandles { easy.cleanup() }
        idleHandles = []
        for lane in lanes { close(lane) }
        lanes = []
        if let lane = multiplexLane { close(lane) }
        multiplexLane = nil
        for socket in sockets.keys { loop.deregister(socket) }
        sockets = [:]
        for entry in parsedURLs { curl_url_cleanup(entry.parsed) } // no easy handle is left to use them
        parsedURLs = []
        if let sweepTimer { loop.cancelTimer(sweepTimer) }
        sweepTimer = nil
    }

    static func milliseconds(_ duration: Duration) -> Int {
        Int(min(duration.nanosecondsClamped / 1_000_000, UInt64(Int32.max)))
    }
}

@available(*, unavailable)
extension CurlMulti: Sendable {}

/// One curl multi handle of a ``CurlMulti``, and what the loop keeps for it.
private final class CurlLane {
    let handle: UnsafeMutableRawPointer
    unowned let multi: CurlMulti
    /// Transfers (and connections) this lane takes at most; for the multiplexing lane,
    /// connections only (its transfers wait in curl for a stream).
    let capacity: Int
    /// The lane of https transfers, with a per-host connection cap.
    let multiplexing: Bool
    /// When curl wants `CURL_SOCKET_TIMEOUT` next; nil when it wants no call.
    var deadline: MonotonicInstant?
    /// The loop timer serving `deadline` and when it fires: never after `deadline`.
    var timer: (id: TimerID, at: MonotonicInstant)?
    /// True while ``CurlMulti/start`` adds a transfer to this lane.
    var adding = false
    /// curl asked, while a transfer was being added, to be called at once: ``CurlMulti/start`` does.
    var dueNow = false
    /// Transfers on this lane now.
    var active = 0
    /// When `active` last dropped to zero.
    var idleSince = MonotonicInstant.now()
    var isClosed = false

    init(handle: UnsafeMutableRawPointer, multi: CurlMulti, capacity: Int, multiplexing: Bool) {
        self.handle = handle
        self.multi = multi
        self.capacity = capacity
        self.multiplexing = multiplexing
    }
}

/// The loop's handler for one curl socket.
private final class CurlSocket: Selectable {
    let socket: curl_socket_t
    let lane: CurlLane

    init(socket: curl_socket_t, lane: CurlLane) {
        self.socket = socket
        self.lane = lane
    }

    func selectorEvents(_ events: SelectorEvents) {
        var mask: Int32 = 0
        if events.contains(.readable) || events.contains(.hangup) { mask |= CURL_CSELECT_IN }
        if events.contains(.writable) { mask |= CURL_CSELECT_OUT }
        if events.contains(.error) { mask |= CURL_CSELECT_ERR }
        lane.multi.socketAction(lane, socket, mask)
    }
}

private let curlSocketCallback: CCurlSocketCallback = { _, socket, what, context, _ in
    guard let context else { return 0 }
    let lane = Unmanaged<CurlLane>.fromOpaque(context).takeUnretainedValue()
    lane.multi.updateSocket(socket, what: what, lane: lane)
    return 0
}

private let curlTimerCallback: CCurlTimerCallback = { _, milliseconds, context in
    guard let context else { return 0 }
    let lane = Unmanaged<CurlLane>.fromOpaque(context).takeUnretainedValue()
    lane.multi.updateTimer(lane, milliseconds: milliseconds)
    return 0
}

private let curlWriteCallback: CCurlDataCallback = { data, size, count, context in
    guard let context, let data else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    switch transfer.receiveBody(UnsafeRawBufferPointer(start: data, count: size * count)) {
    case .taken: return size * count
    case .refused: return CCurl_WRITEFUNC_PAUSE
    case .tooLarge: return 0
    }
}

private let curlHeaderCallback: CCurlDataCallback = { data, size, count, context in
    guard let context, let data else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    transfer.receiveHeaderLine(UnsafeRawBufferPointer(start: data, count: size * count))
    return size * count
}
