/// The S3 sink's configuration: where, the signing region, the keys.
public struct S3Settings: Sendable, Equatable {
    public var location: S3Location
    /// The SigV4 region (`us-east-1` for most self-hosted stores).
    public var region: String
    public var credentials: S3Credentials
    /// How long one upload or delete may take, connecting included.
    public var timeoutMilliseconds: Int

    public init(
        location: S3Location, region: String, credentials: S3Credentials, timeoutMilliseconds: Int = 30_000
    ) {
        self.location = location
        self.region = region
        self.credentials = credentials
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    var signature: AWSSignatureSettings {
        AWSSignatureSettings(
            region: region, service: "s3", accessKeyID: credentials.accessKeyID,
            secretAccessKey: credentials.secretAccessKey)
    }
}

/// An access key pair. Its description never shows the secret.
public struct S3Credentials: Sendable, Equatable, CustomStringConvertible {
    public var accessKeyID: String
    public var secretAccessKey: String

    public init(accessKeyID: String, secretAccessKey: String) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
    }

    public var description: String { "access key \(accessKeyID)" }

    /// `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` from `environment`, or nil if either is missing.
    public static func fromEnvironment(_ environment: [String: String]) -> S3Credentials? {
        guard let id = environment["AWS_ACCESS_KEY_ID"], let secret = environment["AWS_SECRET_ACCESS_KEY"],
            !id.isEmpty, !secret.isEmpty
        else { return nil }
        return S3Credentials(accessKeyID: id, secretAccessKey: secret)
    }

    /// The `[default]` profile (or the lines before any profile) of an AWS shared credentials file
    /// (`aws_access_key_id = …`, `aws_secret_access_key = …`); nil if it names no pair.
    public static func parse(credentialsFile text: String) -> S3Credentials? {
        var profile = "default"
        var id: String?
        var secret: String?
        for rawLine in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            let line = rawLine.trimmingCharacters(in: " \t")
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") && line.hasSuffix("]") {
                profile = String(line.dropFirst().dropLast()).trimmingCharacters(in: " \t")
                continue
            }
            guard profile == "default", let equals = line.firstIndex(of: "=") else { continue }
            let name = String(line[..<equals]).trimmingCharacters(in: " \t").lowercased()
            let value = String(line[line.index(after: equals)...]).trimmingCharacters(in: " \t")
            switch name {
            case "aws_access_key_id": id = value
            case "aws_secret_access_key": secret = value
            default: break
            }
        }
        guard let id, let secret, !id.isEmpty, !secret.isEmpty else { return nil }
        return S3Credentials(accessKeyID: id, secretAccessKey: secret)
    }
}

extension StringProtocol {
    fileprivate func trimmingCharacters(in set: String) -> String {
        let characters = Set(set)
        let start = firstIndex { !characters.contains($0) } ?? endIndex
        let end = lastIndex { !characters.contains($0) }.map { index(after: $0) } ?? start
        return String(self[start..<Swift.max(start, end)])
    }
}

/// The requests of the S3 sink: pure, so headers and URLs are tested without a store.
public enum S3Request {
    /// The SHA-256 of an empty payload, which a DELETE signs.
    static let emptyPayloadSHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    /// `PUT` of a picture: the store checks `x-amz-checksum-sha256` against what arrives (base64
    /// of the record's SHA-256), and `x-amz-content-sha256` is the signed payload's hash, which
    /// S3 requires with SigV4.
    public static func upload(
        key: String, jpeg: [UInt8], payloadSHA256: [UInt8], picture: OutboxMessage.PictureFields,
        settings: S3Settings
    ) -> HTTPTransferRequest {
        var headers = [
            "Content-Type: image/jpeg",
            "x-amz-content-sha256: \(ByteText.hex(payloadSHA256))",
            // The algorithm named as the SDKs name it: some stores (moto) keep the checksum only then.
            "x-amz-sdk-checksum-algorithm: SHA256",
            "x-amz-checksum-sha256: \(ByteText.base64(ByteText.bytes(hex: picture.sha256 ?? "") ?? payloadSHA256))",
            "x-amz-meta-picture-id: \(picture.id)",
        ]
        if let takenAt = picture.takenAt {
            headers.append("x-amz-meta-taken-at: \(ByteText.headerSafe(takenAt))")
        }
        if let label = picture.label { headers.append("x-amz-meta-label: \(ByteText.headerSafe(label))") }
        if let job = picture.jobID { headers.append("x-amz-meta-job: \(job)") }
        return HTTPTransferRequest(
            method: "PUT", url: settings.location.objectURL(key: key), headers: headers, body: jpeg,
            timeoutMilliseconds: settings.timeoutMilliseconds, awsSignature: settings.signature)
    }

    /// `DELETE` of a picture's object.
    public static func delete(key: String, settings: S3Settings) -> HTTPTransferRequest {
        HTTPTransferRequest(
            method: "DELETE", url: settings.location.objectURL(key: key),
            headers: ["x-amz-content-sha256: \(emptyPayloadSHA256)"],
            timeoutMilliseconds: settings.timeoutMilliseconds, awsSignature: settings.signature)
    }
}
