import CCurl

/// Owns one curl easy handle. Loop-confined; reused across transfers after ``recycle()``.
/// Every option setter throws: setting an option can fail (an unsupported option on this
/// libcurl, out of memory), and that must never crash the server.
final class CurlEasy {
    let handle: UnsafeMutableRawPointer
    /// The options every transfer shares are set (they survive between transfers).
    var hasFixedOptions = false
    /// The last transfer set options the next one might not set again (a method other than
    /// POST): ``recycle()`` clears every option.
    var needsReset = false
    /// The CA file the handle verifies with (`CAINFO`), nil for the system store: set again
    /// only when a transfer asks for another.
    var caFile: String?
    /// `FRESH_CONNECT` is on (a retry set it): the next transfer turns it off.
    var freshConnect = false

    init() throws(HTTPClientError) {
        guard let handle = curl_easy_init() else { throw HTTPClientError(.invalidRequest, "curl_easy_init failed") }
        self.handle = handle
        sizeReceiveBuffer()
    }

    /// The receive buffer curl allocates for each transfer and holds until it ends
    /// (`CURLOPT_BUFFERSIZE`; curl's default is 16 KiB): every request waiting on the upstream
    /// holds one, heap that is resident as far as it was written, wholly where the heap's pages
    /// were used before. Most answers are a few kilobytes; a larger one only takes more reads, a
    /// stream's events come as they come, and an HTTP/2 stream whose buffer is full waits in
    /// curl for the next read.
    static let receiveBufferSize = 4096

    /// Sets ``receiveBufferSize``: on a new handle and after a reset (which restores curl's
    /// default), never during a transfer (curl 7.88 refuses while its buffer is allocated). A
    /// libcurl that refuses it keeps its default, which only costs memory.
    private func sizeReceiveBuffer() {
        _ = CCurl_easy_setopt_long(handle, CURLOPT_BUFFERSIZE, Self.receiveBufferSize)
    }

    /// Frees the handle; the caller removed it from its multi handle first.
    func cleanup() {
        curl_easy_cleanup(handle)
    }

    /// Readies the handle for its next transfer. The pointers into the finished transfer (its
    /// callbacks' context, its header list) are cleared, so curl holds none that dangle; all
    /// options are cleared only when ``needsReset``. Connections stay in the multi's pool.
    func recycle() {
        if needsReset {
            reset()
            return
        }
        // The callbacks answer a nil context by stopping the transfer.
        if CCurl_easy_setopt_pointer(handle, CURLOPT_WRITEDATA, nil) != CURLE_OK
            || CCurl_easy_setopt_pointer(handle, CURLOPT_HEADERDATA, nil) != CURLE_OK
            || CCurl_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, nil) != CURLE_OK
        {
            reset()
        }
    }

    private func reset() {
        curl_easy_reset(handle)
        sizeReceiveBuffer()
        hasFixedOptions = false
        needsReset = false
        caFile = nil
        freshConnect = false
    }

    /// Verifies peers against `file`, or the system store when nil (curl's built-in
    /// default, which a reset restores too). With a file of its own, the system's CA
    /// directory is not consulted either.
    func trust(_ file: String?) throws(HTTPClientError) {
        guard file != caFile else { return }
        if let file {
            try set(CURLOPT_CAINFO, file)
            try set(CURLOPT_CAPATH, pointer: nil)
        } else {
            let defaults = Self.defaultTrust
            if let bundle = defaults.caInfo {
                try set(CURLOPT_CAINFO, bundle)
            } else {
                try set(CURLOPT_CAINFO, pointer: nil)
            }
            if let directory = defaults.caPath {
                try set(CURLOPT_CAPATH, directory)
            } else {
                try set(CURLOPT_CAPATH, pointer: nil)
            }
        }
        caFile = file
    }

    /// libcurl's built-in CA bundle and directory (either may be absent).
    private static let defaultTrust: (caInfo: String?, caPath: String?) = {
        guard let info = curl_version_info(CCurl_VERSION_NOW) else { return (nil, nil) }
        return (info.pointee.cainfo.map { String(cString: $0) }, info.pointee.capath.map { String(cString: $0) })
    }()

    /// - SeeAlso: https://curl.se/libcurl/c/curl_easy_setopt.html
    func set(_ option: CURLoption, _ value: Int) throws(HTTPClientError) {
        try check(CCurl_easy_setopt_long(handle, option, value), option)
    }

    func set(_ option: CURLoption, offset value: Int) throws(HTTPClientError) {
        try check(CCurl_easy_setopt_offset(handle, option, curl_off_t(value)), option)
    }

    /// Sets a string option; libcurl copies the string (never use this for `POSTFIELDS`).
    func set(_ option: CURLoption, _ value: String) throws(HTTPClientError) {
        let code = value.withCString { CCurl_easy_setopt_string(handle, option, $0) }
        try check(code, option)
    }

    func set(_ option: CURLoption, pointer value: UnsafeMutableRawPointer?) throws(HTTPClientError) {
        try check(CCurl_easy_setopt_pointer(handle, option, value), option)
    }

    func set(_ option: CURLoption, list value: UnsafeMutablePointer<curl_slist>?) throws(HTTPClientError) {
        try check(CCurl_easy_setopt_slist(handle, option, value), option)
    }

    func set(_ option: CURLoption, callback value: CCurlDataCallback) throws(HTTPClientError) {
        try check(CCurl_easy_setopt_data_callback(handle, option, value), option)
    }

    /// Copies `bytes` as the request body (`POSTFIELDSIZE_LARGE` then `COPYPOSTFIELDS`).
    func setBody(_ bytes: [UInt8]) throws(HTTPClientError) {
        try set(CURLOPT_POSTFIELDSIZE_LARGE, offset: bytes.count)
        let code = bytes.withUnsafeBytes { buffer -> CURLcode in
            // COPYPOSTFIELDS copies `count` bytes (set above); an empty body still needs a valid pointer.
            let empty: StaticString = ""
            let pointer = buffer.baseAddress ?? UnsafeRawPointer(empty.utf8Start)
            return CCurl_easy_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: pointer))
        }
        try check(code, CURLOPT_COPYPOSTFIELDS)
    }

    /// The last response's status code, 0 when none arrived.
    var responseCode: Int {
        var code = 0
        _ = CCurl_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &code)
        return code
    }

    /// Whether the request got as far as being sent (a new or reused connection was ready),
    /// for telling connect timeouts from response timeouts.
    var connected: Bool {
        var pretransfer: curl_off_t = 0
        _ = CCurl_easy_getinfo_offset(handle, CURLINFO_PRETRANSFER_TIME_T, &pretransfer)
        return pretransfer > 0 || responseCode > 0
    }

    /// Whether the last transfer ran on a connection an earlier transfer had opened (curl
    /// opened none for it).
    var reusedConnection: Bool {
        var connects = 0
        guard CCurl_easy_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK else { return false }
        return connects == 0
    }

    private func check(_ code: CURLcode, _ option: CURLoption) throws(HTTPClientError) {
        guard code != CURLE_OK else { return }
        throw HTTPClientError(.invalidRequest, "setting curl option \(option.rawValue): \(Self.describe(code))")
    }

    static func describe(_ code: CURLcode) -> String {
        String(cString: curl_easy_strerror(code))
    }
}

@available(*, unavailable)
extension CurlEasy: Sendable {}
