import CShutterLinux

/// SIGTERM and SIGINT (stop) and SIGHUP (reload the TLS certificate) delivered through a
/// descriptor the event loop watches, instead of a handler that could run on any thread at any time.
public enum TerminationSignals {
    /// Blocks SIGTERM, SIGINT, SIGHUP and SIGPIPE for this thread and every thread started
    /// after it, and returns a signalfd for the first three. Call first thing in `main`,
    /// before any Task or thread exists, or a signal may go to a thread that lets it kill the process.
    public static func blockAndOpenDescriptor() throws -> Int32 {
        try syscall("signalfd") { cshutter_block_signals_and_open_signalfd() }
    }

    /// The number of the pending signal, or nil if none could be read.
    public static func read(_ descriptor: Int32) -> Int32? {
        let signal = cshutter_read_signalfd(descriptor)
        return signal > 0 ? signal : nil
    }
}
