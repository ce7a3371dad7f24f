/// One picture in the catalog: the row that describes the file `media/<id>.jpg`.
public struct MediaRecord: Codable, Equatable, Sendable {
    /// Assigned by the catalog, strictly increasing, never reused.
    public var id: Int64
    /// When the picture was taken, in UTC milliseconds since 1970-01-01.
    public var takenAt: Int64
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int
    /// Size of the JPEG file in bytes.
    public var bytes: Int
    /// Lowercase hex SHA-256 of the JPEG file.
    public var sha256: String
    /// The name of the camera that took it.
    public var source: String
    /// The job that took it, or nil for a picture taken on request.
    public var jobID: Int64?
    /// Whether retention must never delete it.
    public var keep: Bool
    /// The label it was taken with (the snap's, or its job's), or nil for none.
    public var label: String?
    /// Whether the S3 sink's store has acknowledged it.
    public var uploaded: Bool
    /// Whether its local file was freed because the store has it (`s3_mode` offload).
    public var offloaded: Bool

    public init(
        id: Int64, takenAt: Int64, width: Int, height: Int, bytes: Int, sha256: String, source: String,
        jobID: Int64? = nil, keep: Bool = false, label: String? = nil, uploaded: Bool = false,
        offloaded: Bool = false
    ) {
        self.id = id
        self.takenAt = takenAt
        self.width = width
        self.height = height
        self.bytes = bytes
        self.sha256 = sha256
        self.source = source
        self.jobID = jobID
        self.keep = keep
        self.label = label
        self.uploaded = uploaded
        self.offloaded = offloaded
    }
}
