import ShutterCatalog

extension ShutterConfiguration {
    /// The catalog's retention from the `retention_*` keys, or nil when none sets a limit.
    public var retentionPolicy: RetentionPolicy? {
        var policy = RetentionPolicy(
            maxPictures: retentionMaxPictures > 0 ? retentionMaxPictures : nil,
            maxBytes: retentionMaxBytes > 0 ? Int64(retentionMaxBytes) : nil,
            maxAgeMilliseconds: retentionMaxAgeSeconds > 0 ? Int64(retentionMaxAgeSeconds) * 1000 : nil,
            minimumAgeMilliseconds: Int64(retentionMinAgeSeconds) * 1000)
        policy.offloadsUploaded = httpSinks.s3Mode == .offload && !httpSinks.s3URL.isEmpty
        return policy.isUnlimited ? nil : policy
    }

    /// How much event history the catalog keeps, from the `outbox_*` keys.
    public var eventHistoryLimits: EventHistoryLimits {
        EventHistoryLimits(
            maxEvents: outboxMaxEvents,
            maxAgeMilliseconds: outboxMaxAgeSeconds > 0 ? Int64(outboxMaxAgeSeconds) * 1000 : nil)
    }
}
