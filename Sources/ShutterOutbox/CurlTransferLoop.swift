import CCurl
import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

/// Runs every HTTP transfer of the webhook and S3 sinks on one thread of its own, with libcurl's
/// multi interface: any number of deliveries in flight cost one thread and no pool thread waits.
///
/// `send` hands a request to the thread (waking `curl_multi_poll` with `curl_multi_wakeup`) and
/// suspends; the thread resumes it when the transfer completes, fails, times out or is cancelled.
/// The thread owns the multi handle and every easy handle; other threads only touch `inbox`.
public final class CurlTransferLoop: HTTPTransport, @unchecked Sendable {
    // @unchecked Sendable: `multi` is used by the loop thread only, except `curl_multi_wakeup`,
    // which libcurl documents as callable from any thread; `inbox` is behind its lock;
    // `active` is the loop thread's alone.

    /// Transfers and file reads waiting for the thread, cancellations, and whether to stop.
    private struct Inbox {
        var transfers: [PendingTransfer] = []
        var fileReads: [@Sendable () -> Void] = []
        var cancelled: Set<UInt64> = []
        var nextID: UInt64 = 1
        var inFlight = 0
        var stopping = false
    }

    private struct PendingTransfer {
        var id: UInt64
        var request: HTTPTransferRequest
        var continuation: CheckedContinuation<HTTPTransferResponse, any Error>
    }

    private let multi: UnsafeMutableRawPointer
    private let inbox = LockedValue(Inbox())
    private var active: [UInt: CurlTransfer] = [:]
    private let userAgent: String
    /// Transfers accepted at once (waiting or running); more are refused and retried later.
    public let maxTransfers: Int
    private let thread = LockedValue<OSThread?>(nil)

    /// libcurl loaded (the first loop of the process loads it: see CCurl.h) and initialised,
    /// or why not.
    private static let globalInit: Result<Void, TransferError> = {
        var reason = [CChar](repeating: 0, count: 256)
        guard shutter_curl_load(&reason, reason.count) == 1 else {
            let failure = String(
                decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return .failure(
                TransferError(
                    code: Int32(CURLE_FAILED_INIT.rawValue),
                    message: "libcurl could not be loaded (\(failure)); install libcurl4"))
        }
        // Once per process, before any other libcurl call (curl_global_init(3)).
        guard shutter_curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK else {
            return .failure(
                TransferError(code: Int32(CURLE_FAILED_INIT.rawValue), message: "curl_global_init failed"))
        }
        return .success(())
    }()

    public init(userAgent: String, maxTransfers: Int = 256) throws {
        try Self.globalInit.get()
        guard let multi = shutter_curl_multi_init() else {
            throw TransferError(code: Int32(CURLE_FAILED_INIT.rawValue), message: "curl_multi_init failed")
        }
        self.multi = multi
        self.userAgent = userAgent
        self.maxTransfers = max(1, maxTransfers)
        let started = try OSThread.spawn(name: "shutter-curl") { [self] in run() }
        thread.withLock { $0 = started }
    }

    deinit {
        shutter_curl_multi_cleanup(multi)
    }

    /// Transfers accepted and not yet finished.
    public var transfersInFlight: Int { inbox.withLock { $0.inFlight } }

    /// Fails what is in flight and ends the thread; call once, when no sink sends any more.
    public func stop() async {
        inbox.withLock { $0.stopping = true }
        shutter_curl_multi_wakeup(multi)
        let running = thread.withLock { thread in
            defer { thread = nil }
            return thread
        }
        await running?.finished()
    }

    public func send(_ request: HTTPTransferRequest) async throws -> HTTPTransferResponse {
        try Task.checkCancellation()
        let id = inbox.withLock { inbox in
            defer { inbox.nextID += 1 }
            return inbox.nextID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let refusal: TransferError? = inbox.withLock { inbox in
                    if inbox.stopping { return .stopped }
                    if inbox.inFlight >= maxTransfers { return .queueFull }
                    inbox.inFlight += 1
                    inbox.transfers.append(
                        PendingTransfer(id: id, request: request, continuation: continuation))
                    return nil
                }
                if let refusal {
                    continuation.resume(throwing: refusal)
                    return
                }
                // Cancelled before it was queued: the handler's mark may already have been read
                // and dropped by the loop, so mark it again now that the loop will find it.
                if Task.isCancelled { inbox.withLock { _ = $0.cancelled.insert(id) } }
                shutter_curl_multi_wakeup(multi)
            }
        } onCancel: {
            inbox.withLock { _ = $0.cancelled.insert(id) }
            shutter_curl_multi_wakeup(multi)
        }
    }

    public func readFile(atPath path: String, maxBytes: Int) async throws -> [UInt8]? {
        try await withCheckedThrowingContinuation { continuation in
            let read: @Sendable () -> Void = {
                do {
                    continuation.resume(returning: try Self.readWholeFile(path, maxBytes: maxBytes))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
            let stopping = inbox.withLock { inbox in
                if !inbox.stopping { inbox.fileReads.append(read) }
                return inbox.stopping
            }
            if stopping {
                continuation.resume(throwing: TransferError.stopped)
            } else {
                shutter_curl_multi_wakeup(multi)
            }
        }
    }

    // MARK: - The loop thread

    private func run() {
        while true {
            let (transfers, fileReads, cancelled, stopping) = inbox.withLock { inbox in
                defer {
                    inbox.transfers.removeAll()
                    inbox.fileReads.removeAll()
                    inbox.cancelled.removeAll()
                }
                return (inbox.transfers, inbox.fileReads, inbox.cancelled, inbox.stopping)
            }
            // A picture is read here rather than on the pool: a few hundred KB, usually cached.
            for read in fileReads { read() }
            for pending in transfers { start(pending) }
            for transfer in active.values where cancelled.contains(transfer.id) {
                finish(transfer, with: .failure(CancellationError()))
            }
            if stopping {
                for transfer in active.values { finish(transfer, with: .failure(TransferError.stopped)) }
                return
            }
            var running: Int32 = 0
            shutter_curl_multi_perform(multi, &running)
            collectFinished()
            // Sleeps until a socket is ready, a timeout of libcurl's is due, or `curl_multi_wakeup`.
            var ready: Int32 = 0
            shutter_curl_multi_poll(multi, nil, 0, 1000, &ready)
        }
    }

    private func start(_ pending: PendingTransfer) {
        do {
            let transfer = try CurlTransfer(
                id: pending.id, request: pending.request, userAgent: userAgent,
                continuation: pending.continuation)
            let added = shutter_curl_multi_add_handle(multi, transfer.handle)
            guard added == CURLM_OK else {
                let message = String(cString: shutter_curl_multi_strerror(added))
                releaseSlot()
                transfer.fail(TransferError(code: 0, message: "curl_multi_add_handle: \(message)"))
                return
            }
            active[UInt(bitPattern: transfer.handle)] = transfer
        } catch {
            releaseSlot()
            pending.continuation.resume(throwing: error)
        }
    }

    private func collectFinished() {
        var remaining: Int32 = 0
        while let message = shutter_curl_multi_info_read(multi, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle,
                let transfer = active[UInt(bitPattern: handle)]
            else { continue }
            let code = shutter_curl_message_result(message)
            if code == CURLE_OK {
                var status = 0
                _ = shutter_curl_response_code(handle, &status)
                finish(
                    transfer, with: .success(HTTPTransferResponse(status: status, body: transfer.received)))
            } else {
                finish(transfer, with: .failure(transfer.error(for: code)))
            }
        }
    }

    private func finish(_ transfer: CurlTransfer, with result: Result<HTTPTransferResponse, any Error>) {
        shutter_curl_multi_remove_handle(multi, transfer.handle)
        active[UInt(bitPattern: transfer.handle)] = nil
        // The slot is free before the sender hears: one that sends again at once (a retry) must
        // not be refused for the slot its own transfer still held.
        releaseSlot()
        switch result {
        case .success(let response): transfer.complete(response)
        case .failure(let error): transfer.fail(error)
        }
    }

    private func releaseSlot() {
        inbox.withLock { $0.inFlight -= 1 }
    }

    private static func readWholeFile(_ path: String, maxBytes: Int) throws -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        if descriptor < 0 {
            if errno == ENOENT { return nil }
            throw SystemError(errno: errno, call: "open")
        }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = try syscall("read") {
                chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > maxBytes { throw SystemError(errno: EFBIG, call: "read") }
        }
    }
}

/// One easy handle with what it points at (headers, body, the answer so far); lives on the loop
/// thread from creation to `complete`/`fail`, which resume the sink's task exactly once.
private final class CurlTransfer {
    let id: UInt64
    let handle: UnsafeMutableRawPointer
    private var headers: UnsafeMutablePointer<curl_slist>?
    // libcurl reads CURLOPT_POSTFIELDS from this memory during the transfer without copying it.
    private let body: UnsafeMutableRawBufferPointer
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    private var continuation: CheckedContinuation<HTTPTransferResponse, any Error>?
    fileprivate(set) var received: [UInt8] = []

    init(
        id: UInt64, request: HTTPTransferRequest, userAgent: String,
        continuation: CheckedContinuation<HTTPTransferResponse, any Error>
    ) throws {
        guard let handle = shutter_curl_easy_init() else {
            throw TransferError(code: Int32(CURLE_FAILED_INIT.rawValue), message: "curl_easy_init failed")
        }
        self.id = id
        self.handle = handle
        self.continuation = continuation
        body = .allocate(byteCount: max(1, request.body.count), alignment: 1)
        errorBuffer.initialize(to: 0)
        do {
            try configure(request, userAgent: userAgent)
        } catch {
            self.continuation = nil
            throw error
        }
    }

    deinit {
        shutter_curl_easy_cleanup(handle)
        shutter_curl_slist_free_all(headers)
        body.deallocate()
        errorBuffer.deallocate()
    }

    private func configure(_ request: HTTPTransferRequest, userAgent: String) throws {
        func check(_ code: CURLcode, _ option: String) throws {
            guard code == CURLE_OK else {
                throw TransferError(
                    code: Int32(code.rawValue),
                    message: "\(option): \(String(cString: shutter_curl_easy_strerror(code)))")
            }
        }
        try check(shutter_curl_setopt_string(handle, CURLOPT_URL, request.url), "CURLOPT_URL")
        // No signals from libcurl in a threaded process (its resolver timeouts use them otherwise).
        try check(shutter_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1), "CURLOPT_NOSIGNAL")
        try check(
            shutter_curl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"), "CURLOPT_PROTOCOLS_STR")
        // Certificates are checked against the system store (libcurl's defaults, stated here so no
        // change of default can turn them off).
        try check(shutter_curl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 1), "CURLOPT_SSL_VERIFYPEER")
        try check(shutter_curl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 2), "CURLOPT_SSL_VERIFYHOST")
        let timeout = max(1, request.timeoutMilliseconds)
        try check(shutter_curl_setopt_long(handle, CURLOPT_TIMEOUT_MS, timeout), "CURLOPT_TIMEOUT_MS")
        try check(
            shutter_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, min(timeout, 10_000)),
            "CURLOPT_CONNECTTIMEOUT_MS")
        try check(shutter_curl_setopt_string(handle, CURLOPT_USERAGENT, userAgent), "CURLOPT_USERAGENT")
        try check(
            shutter_curl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, request.method), "CURLOPT_CUSTOMREQUEST"
        )
        try check(
            shutter_curl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, UnsafeMutableRawPointer(errorBuffer)),
            "CURLOPT_ERRORBUFFER")
        if !request.body.isEmpty || request.method == "POST" || request.method == "PUT" {
            request.body.withUnsafeBytes { body.copyMemory(from: $0) }
            try check(
                shutter_curl_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count)),
                "CURLOPT_POSTFIELDSIZE_LARGE")
            try check(
                shutter_curl_setopt_pointer(handle, CURLOPT_POSTFIELDS, body.baseAddress),
                "CURLOPT_POSTFIELDS")
        }
        // No "Expect:" line to turn 100-continue off: libcurl would sign it (CURLOPT_AWS_SIGV4
        // signs every header given here) without sending it, and the store would refuse the
        // signature. libcurl asks for 100-continue only for bodies over 1 MB.
        for line in request.headers {
            guard let appended = shutter_curl_slist_append(headers, line) else {
                throw TransferError(code: Int32(CURLE_OUT_OF_MEMORY.rawValue), message: "curl_slist_append")
            }
            headers = appended
        }
        try check(shutter_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, headers), "CURLOPT_HTTPHEADER")
        if let signature = request.awsSignature {
            try check(
                shutter_curl_setopt_string(handle, CURLOPT_AWS_SIGV4, signature.curlProvider),
                "CURLOPT_AWS_SIGV4")
            try check(
                shutter_curl_setopt_string(handle, CURLOPT_USERNAME, signature.accessKeyID),
                "CURLOPT_USERNAME")
            try check(
                shutter_curl_setopt_string(handle, CURLOPT_PASSWORD, signature.secretAccessKey),
                "CURLOPT_PASSWORD")
        }
        try check(
            shutter_curl_setopt_write_function(handle) { data, size, count, context in
                let transfer = Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue()
                let length = size * count
                let room = HTTPTransferResponse.maxBodyBytes - transfer.received.count
                if room > 0, let data {
                    data.withMemoryRebound(to: UInt8.self, capacity: length) {
                        transfer.received.append(
                            contentsOf: UnsafeBufferPointer(start: $0, count: min(room, length)))
                    }
                }
                // Everything is taken; what is past the limit is dropped, not an error.
                return length
            }, "CURLOPT_WRITEFUNCTION")
        try check(
            shutter_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, Unmanaged.passUnretained(self).toOpaque()),
            "CURLOPT_WRITEDATA")
    }

    func error(for code: CURLcode) -> TransferError {
        let detail = String(cString: errorBuffer)
        let message = detail.isEmpty ? String(cString: shutter_curl_easy_strerror(code)) : detail
        return TransferError(code: Int32(code.rawValue), message: message)
    }

    func complete(_ response: HTTPTransferResponse) {
        continuation?.resume(returning: response)
        continuation = nil
    }

    func fail(_ error: any Error) {
        continuation?.resume(throwing: error)
        continuation = nil
    }
}
