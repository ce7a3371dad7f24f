/// Matches the broker's PUBACKs to the publishes waiting for them, by message id (`mid`).
///
/// libmosquitto hands out the mid when `mosquitto_publish` returns, and its network thread may
/// report the PUBACK before the publisher has registered to wait for it: an early outcome is
/// kept until the registration takes it. Outcomes nobody will take (a publish that timed out,
/// one sent without waiting) are bounded by `maximumUnclaimed`, the oldest forgotten first.
/// A value type without locks: the client keeps it behind its own.
public struct AcknowledgementTable<Waiter> {
    public enum Outcome: Equatable {
        case acknowledged
        case failed(MQTTError)
    }

    private var waiting: [Int32: Waiter] = [:]
    private var unclaimed: [Int32: Outcome] = [:]
    private var unclaimedOrder: [Int32] = []
    /// Mids whose waiter gave up (timed out): their late PUBACK is dropped, not kept.
    private var abandoned: Set<Int32> = []
    public let maximumUnclaimed: Int

    public init(maximumUnclaimed: Int = 1024) {
        self.maximumUnclaimed = max(1, maximumUnclaimed)
    }

    /// Publishes waiting, and those given up on whose PUBACK has not come.
    public var outstanding: Int { waiting.count + abandoned.count }

    /// Waits for `mid`; returns its outcome instead if it is already known.
    public mutating func register(_ mid: Int32, _ waiter: Waiter) -> Outcome? {
        if let outcome = unclaimed.removeValue(forKey: mid) {
            unclaimedOrder.removeAll { $0 == mid }
            return outcome
        }
        waiting[mid] = waiter
        return nil
    }

    /// The broker acknowledged `mid`: its waiter, to resume, if one waits.
    public mutating func acknowledge(_ mid: Int32) -> Waiter? {
        if let waiter = waiting.removeValue(forKey: mid) { return waiter }
        if abandoned.remove(mid) != nil { return nil }
        keepUnclaimed(mid, .acknowledged)
        return nil
    }

    /// The waiter of `mid` gives up (a timeout, a cancelled task): it, to resume with a failure.
    public mutating func abandon(_ mid: Int32) -> Waiter? {
        guard let waiter = waiting.removeValue(forKey: mid) else {
            // Not registered yet: the registration finds this failure.
            if unclaimed[mid] == nil {
                keepUnclaimed(mid, .failed(.acknowledgementTimedOut(milliseconds: 0)))
            }
            return nil
        }
        abandoned.insert(mid)
        if abandoned.count > maximumUnclaimed { abandoned.removeFirst() }
        return waiter
    }

    /// The connection ended: every waiter, to fail; what was given up on is forgotten (libmosquitto
    /// resends it on the next connection, and its PUBACK then finds nobody).
    public mutating func failAll() -> [Waiter] {
        let waiters = Array(waiting.values)
        waiting.removeAll()
        abandoned.removeAll()
        unclaimed.removeAll()
        unclaimedOrder.removeAll()
        return waiters
    }

    private mutating func keepUnclaimed(_ mid: Int32, _ outcome: Outcome) {
        unclaimed[mid] = outcome
        unclaimedOrder.append(mid)
        while unclaimedOrder.count > maximumUnclaimed {
            unclaimed.removeValue(forKey: unclaimedOrder.removeFirst())
        }
    }
}
