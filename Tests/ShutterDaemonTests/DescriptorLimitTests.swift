import Testing

@testable import ShutterDaemon

/// `max_connections` is capped to what the descriptor limit leaves room for, so clients get a
/// 503 at once instead of waiting while `accept` fails with EMFILE.
@Suite struct DescriptorLimitTests {
    @Test func connectionsAreCappedToHalfTheDescriptorsLeftAfterTheHeadroom() {
        #expect(ShutterDaemon.connectionLimit(descriptorLimit: 1024, requested: 1024) == 448)
        #expect(ShutterDaemon.connectionLimit(descriptorLimit: 1_048_576, requested: 1024) == 1024)
        #expect(ShutterDaemon.connectionLimit(descriptorLimit: 2176, requested: 1024) == 1024)
        #expect(ShutterDaemon.connectionLimit(descriptorLimit: 2175, requested: 1024) == 1023)
        #expect(ShutterDaemon.connectionLimit(descriptorLimit: 64, requested: 1024) == 1)
        #expect(ShutterDaemon.connectionLimit(descriptorLimit: .max, requested: 100_000) == 100_000)
    }
}
