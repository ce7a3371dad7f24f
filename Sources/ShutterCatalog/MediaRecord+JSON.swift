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
        var bytes: [UInt8] = []
        bytes.reserveCapacity(320)
        appendJSON(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `json`'s bytes to `bytes`: a `/library` page writes its records straight into its
    /// body, where building each as a `String` first was half of an uncached page's CPU.
    public func appendJSON(to bytes: inout [UInt8]) {
        bytes += #"{"id":"#.utf8
        JSONBytes.appendInteger(id, to: &bytes)
        bytes += #","taken_at":""#.utf8
        Timestamp.appendISO8601(millisecondsSince1970: takenAt, to: &bytes)
        bytes += #"","width":"#.utf8
        JSONBytes.appendInteger(Int64(width), to: &bytes)
        bytes += #","height":"#.utf8
        JSONBytes.appendInteger(Int64(height), to: &bytes)
        bytes += #","bytes":"#.utf8
        JSONBytes.appendInteger(Int64(self.bytes), to: &bytes)
        bytes += #","sha256":"#.utf8
        JSONBytes.appendString(sha256, to: &bytes)
        bytes += #","source":"#.utf8
        JSONBytes.appendString(source, to: &bytes)
        bytes += #","job_id":"#.utf8
        if let jobID { JSONBytes.appendInteger(jobID, to: &bytes) } else { bytes += "null".utf8 }
        bytes += #","keep":"#.utf8
        bytes += (keep ? "true" : "false").utf8
        bytes += #","label":"#.utf8
        if let label { JSONBytes.appendString(label, to: &bytes) } else { bytes += "null".utf8 }
        bytes += #","url":"/media/"#.utf8
        JSONBytes.appendInteger(id, to: &bytes)
        bytes += #".jpg","stored":"#.utf8
        bytes += storedJSON.utf8
        bytes.append(UInt8(ascii: "}"))
    }
}
