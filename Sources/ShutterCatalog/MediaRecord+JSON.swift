import ShutterSystem

extension MediaRecord {
    /// Where the picture lives: `["local"]`, `["local","s3"]` once uploaded, `["s3"]` once offloaded.
    var storedJSON: String {
        offloaded ? #"["s3"]"# : uploaded ? #"["local","s3"]"# : #"["local"]"#
    }

    /// Where the JPEG is served.
    public var mediaURL: String { "/media/\(id).jpg" }

    /// The record as the API shows it, and as `picture.*` events carry it: one representation,
    /// so a script that reads both sees the same fields.
    public var json: String {
        // About 300 bytes with a short label: reserved once, not grown field by field.
        var object = JSONObjectWriter(capacity: 320)
        object.field("id", id)
        object.field("taken_at", Timestamp.iso8601(millisecondsSince1970: takenAt))
        object.field("width", width)
        object.field("height", height)
        object.field("bytes", bytes)
        object.field("sha256", sha256)
        object.field("source", source)
        object.field("job_id", jobID)
        object.field("keep", keep)
        object.field("label", label)
        object.field("url", mediaURL)
        object.rawField("stored", storedJSON)
        return object.finished()
    }
}
