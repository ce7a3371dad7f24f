import ShutterSystem

/// Decides which frame slot a paced source delivers next and when it is due: a pure
/// state machine, so the skipping rules are tested without sleeping.
///
/// Slot k is due at `start + k / fps` seconds, computed from `start` each time rather than
/// by adding intervals, so rounding never accumulates into drift.
struct FramePacer {
    /// The instant slot 0 is due.
    let start: MonotonicInstant
    /// Slots per second.
    let fps: Int
    /// The slot the next call to `next(now:)` considers first.
    private(set) var nextSlot: UInt64 = 0

    /// A pacer whose slot 0 is due at `start`, `fps` slots a second.
    init(start: MonotonicInstant, fps: Int) {
        precondition(fps > 0, "fps \(fps) must be positive")
        self.start = start
        self.fps = fps
    }

    /// When `slot` is due: `start + slot * 1e9 / fps` ns, rounded down.
    func due(slot: UInt64) -> MonotonicInstant {
        // Whole seconds, then the remainder, so `slot * 1e9` cannot overflow in a long run.
        let rate = UInt64(fps)
        return start.advanced(by: slot / rate * 1_000_000_000 + slot % rate * 1_000_000_000 / rate)
    }

    /// The slot to deliver when asked at `now`, and when it is due (possibly still ahead).
    ///
    /// A caller late by up to one frame gets the late slot at once and catches up; a caller
    /// later than that skips to the first slot not yet due, so the dropped frames show as a
    /// gap in the slot numbers instead of a burst of stale frames.
    mutating func next(now: MonotonicInstant) -> (slot: UInt64, due: MonotonicInstant) {
        var slot = nextSlot
        let due = due(slot: slot)
        let interval = self.due(slot: slot + 1).nanoseconds(since: due)
        if now.nanoseconds(since: due) > interval {
            // The first slot with due(slot) >= now is ceil(elapsed * fps / 1e9); the product is
            // taken at full width so even a run of years cannot overflow it.
            let elapsed = now.nanoseconds(since: start)
            let product = elapsed.multipliedFullWidth(by: UInt64(fps))
            let (quotient, remainder) = UInt64(1_000_000_000).dividingFullWidth(product)
            slot = remainder == 0 ? quotient : quotient + 1
        }
        nextSlot = slot + 1
        return (slot, self.due(slot: slot))
    }
}
