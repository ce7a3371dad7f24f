import ShutterSystem

/// Retention passes that follow each other until the excess is gone, logged as one.
struct RetentionRun {
    /// The first and last id removed.
    var firstID: Int64
    var lastID: Int64 = 0
    /// Pictures removed and passes run so far.
    var count = 0
    var passes = 0
    /// When the first pass started.
    let started: MonotonicInstant

    init(firstID: Int64, started: MonotonicInstant) {
        self.firstID = firstID
        self.started = started
    }
}
