import ShutterMQTT
import Testing

@Suite struct AcknowledgementTableTests {
    @Test func anAcknowledgementResumesItsWaiter() {
        var table = AcknowledgementTable<String>()
        #expect(table.register(1, "first") == nil)
        #expect(table.register(2, "second") == nil)
        #expect(table.outstanding == 2)
        #expect(table.acknowledge(2) == "second")
        #expect(table.acknowledge(1) == "first")
        #expect(table.outstanding == 0)
    }

    @Test func anAcknowledgementBeforeTheRegistrationIsKept() {
        var table = AcknowledgementTable<String>()
        #expect(table.acknowledge(9) == nil)
        #expect(table.register(9, "late") == .acknowledged)
        #expect(table.outstanding == 0)
    }

    @Test func aTimedOutPublishIsCountedUntilItsAcknowledgementComes() {
        var table = AcknowledgementTable<String>()
        #expect(table.register(3, "waiter") == nil)
        #expect(table.abandon(3) == "waiter")
        #expect(table.outstanding == 1)
        #expect(table.acknowledge(3) == nil)
        #expect(table.outstanding == 0)
        // Not kept as an early acknowledgement: a reused mid must wait for its own.
        #expect(table.register(3, "reused") == nil)
    }

    @Test func aTimeoutBeforeTheRegistrationFailsIt() {
        var table = AcknowledgementTable<String>()
        #expect(table.abandon(4) == nil)
        #expect(table.register(4, "waiter") == .failed(.acknowledgementTimedOut(milliseconds: 0)))
    }

    @Test func aLostConnectionFailsEveryWaiterAndForgetsTheRest() {
        var table = AcknowledgementTable<String>()
        _ = table.register(1, "a")
        _ = table.register(2, "b")
        _ = table.register(3, "c")
        _ = table.abandon(3)
        #expect(Set(table.failAll()) == ["a", "b"])
        #expect(table.outstanding == 0)
    }

    @Test func unclaimedOutcomesAreBounded() {
        var table = AcknowledgementTable<String>(maximumUnclaimed: 4)
        for mid in Int32(1)...10 { _ = table.acknowledge(mid) }
        #expect(table.register(1, "old") == nil)
        #expect(table.register(10, "new") == .acknowledged)
    }
}
