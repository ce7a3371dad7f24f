/// Which pictures retention may remove: limits on count, total bytes and age, in any combination.
///
/// Kept pictures count towards the limits but are never removed; neither is a picture younger
/// than `minimumAgeMilliseconds`. A nil limit is no limit.
public struct RetentionPolicy: Sendable, Equatable {
    /// The most pictures the library holds, or nil for no limit.
    public var maxPictures: Int?
    /// The most bytes the pictures take together, or nil for no limit.
    public var maxBytes: Int64?
    /// Pictures taken longer ago than this are removed, or nil for no limit.
    public var maxAgeMilliseconds: Int64?
    /// Pictures taken less than this long ago are never removed.
    public var minimumAgeMilliseconds: Int64
    /// Offload (`s3_mode offload`): instead of removing pictures, free the local files of pictures
    /// the S3 store has acknowledged, keeping their rows; pictures not uploaded stay.
    public var offloadsUploaded = false

    public init(
        maxPictures: Int? = nil, maxBytes: Int64? = nil, maxAgeMilliseconds: Int64? = nil,
        minimumAgeMilliseconds: Int64 = 0
    ) {
        self.maxPictures = maxPictures
        self.maxBytes = maxBytes
        self.maxAgeMilliseconds = maxAgeMilliseconds
        self.minimumAgeMilliseconds = minimumAgeMilliseconds
    }

    /// Whether no limit is set, so retention never removes anything.
    public var isUnlimited: Bool { maxPictures == nil && maxBytes == nil && maxAgeMilliseconds == nil }
}
