/// A thread that runs closures one at a time, in the order they were given: the event loop.
///
/// The seam between code that produces work on one thread (the capture thread, a scaler) and
/// the thread that owns what the work touches (the connections, on the event loop), so that
/// the producer need not know it is an event loop and tests can run the queue by hand.
public protocol SerialQueue: AnyObject, Sendable {
    /// Runs `task` later on the queue's thread, after every task given before it; safe from any thread.
    func execute(_ task: @escaping @Sendable () -> Void)
    /// Whether the caller is on the queue's thread.
    var isCurrent: Bool { get }
}
