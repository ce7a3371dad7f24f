#if canImport(Glibc)
    import Glibc
#endif

/// Tells systemd how the service is doing (sd_notify(3)): `READY=1`, `STATUS=…`, `WATCHDOG=1`,
/// `STOPPING=1`, as datagrams to `$NOTIFY_SOCKET`, written here rather than through libsystemd.
///
/// Sends never block and never fail the caller: a full or missing socket loses one message,
/// which systemd's own timeouts cover; the first failure is logged.
public final class SystemdNotifier: Sendable {
    /// The socket's address (a path, or an abstract name starting with a NUL byte).
    private let address: [UInt8]
    private let descriptor: Int32
    /// How often to send `WATCHDOG=1`: half of `$WATCHDOG_USEC` (sd_watchdog_enabled(3)), or nil
    /// when the watchdog is off or meant for another process (`$WATCHDOG_PID`).
    public let watchdogIntervalNanoseconds: UInt64?
    private let failureLogged = LockedValue(false)
    private let logger: Logger

    /// The notifier `environment` asks for, or nil when there is no `$NOTIFY_SOCKET` (not under
    /// systemd, or `Type=simple`).
    public init?(environment: [String: String], logger: Logger) {
        guard let path = environment["NOTIFY_SOCKET"], !path.isEmpty, path.utf8.count < 108,
            path.hasPrefix("/") || path.hasPrefix("@")
        else { return nil }
        // "@name" is the abstract socket "\0name" (unix(7)).
        address = path.hasPrefix("@") ? [0] + Array(path.utf8.dropFirst()) : Array(path.utf8)
        guard
            let descriptor = try? syscall(
                "socket(AF_UNIX)",
                {
                    socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
                })
        else { return nil }
        self.descriptor = descriptor
        self.logger = logger
        watchdogIntervalNanoseconds = Self.watchdogInterval(environment, pid: getpid())
    }

    deinit { closeDescriptor(descriptor) }

    /// Half of `WATCHDOG_USEC`, if the watchdog is on for process `pid`.
    package static func watchdogInterval(_ environment: [String: String], pid: Int32) -> UInt64? {
        guard let text = environment["WATCHDOG_USEC"], let microseconds = UInt64(text), microseconds > 0
        else {
            return nil
        }
        if let owner = environment["WATCHDOG_PID"], Int32(owner) != pid { return nil }
        return microseconds * 1000 / 2
    }

    /// Sends `state`: newline-separated `KEY=value` assignments.
    public func notify(_ state: String) {
        var target = sockaddr_un()
        target.sun_family = sa_family_t(AF_UNIX)
        let length = withUnsafeMutableBytes(of: &target.sun_path) { path -> Int in
            path.copyBytes(from: address)
            return address.count
        }
        let addressLength = socklen_t(MemoryLayout<sa_family_t>.size + length)
        let bytes = Array(state.utf8)
        do {
            _ = try withUnsafePointer(to: &target) { pointer in
                try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                    try bytes.withUnsafeBytes { raw in
                        try syscall("sendto $NOTIFY_SOCKET") {
                            sendto(
                                descriptor, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL),
                                address,
                                addressLength)
                        }
                    }
                }
            }
        } catch {
            let first = failureLogged.withLock { logged in
                defer { logged = true }
                return !logged
            }
            if first { logger.warning("could not notify systemd", ["error": "\(error)"]) }
        }
    }
}
