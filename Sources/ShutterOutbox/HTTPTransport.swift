/// One HTTP request a sink sends: everything the transport needs, nothing it must look up.
public struct HTTPTransferRequest: Sendable, Equatable {
    public var method: String
    public var url: String
    /// `Name: value` lines, sent as given (and signed, when `awsSignature` is set).
    public var headers: [String]
    public var body: [UInt8]
    /// The whole transfer, connecting included, must finish within this.
    public var timeoutMilliseconds: Int
    /// Sign with AWS Signature V4 (libcurl's `CURLOPT_AWS_SIGV4`); nil sends it unsigned.
    public var awsSignature: AWSSignatureSettings?

    public init(
        method: String, url: String, headers: [String] = [], body: [UInt8] = [], timeoutMilliseconds: Int,
        awsSignature: AWSSignatureSettings? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeoutMilliseconds = timeoutMilliseconds
        self.awsSignature = awsSignature
    }
}

/// The parameters of an AWS Signature V4: the scope and the key pair.
public struct AWSSignatureSettings: Sendable, Equatable, CustomStringConvertible {
    public var region: String
    public var service: String
    public var accessKeyID: String
    public var secretAccessKey: String

    public init(region: String, service: String = "s3", accessKeyID: String, secretAccessKey: String) {
        self.region = region
        self.service = service
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
    }

    /// `CURLOPT_AWS_SIGV4`'s parameter: `aws:amz:REGION:SERVICE`.
    public var curlProvider: String { "aws:amz:\(region):\(service)" }

    /// Never the secret: this is what ends up in logs and error messages.
    public var description: String { "AWS SigV4 \(region)/\(service) key \(accessKeyID)" }
}

/// What the destination answered.
public struct HTTPTransferResponse: Sendable, Equatable {
    public var status: Int
    /// The start of the answer's body (at most `HTTPTransferResponse.maxBodyBytes`), for errors.
    public var body: [UInt8]

    /// Enough for an S3 error document or a webhook's complaint, not a download.
    public static let maxBodyBytes = 4096

    public init(status: Int, body: [UInt8] = []) {
        self.status = status
        self.body = body
    }

    /// 200 to 299.
    public var isSuccess: Bool { (200..<300).contains(status) }
}

/// The network (and disk) side of the webhook and S3 sinks, off the cooperative pool.
///
/// `CurlTransferLoop` is the real one; tests of the sinks use `RecordingHTTPTransport`
/// (ShutterTestSupport).
public protocol HTTPTransport: Sendable {
    /// Sends `request` and returns the answer, whatever its status; throws `TransferError` when
    /// there was none (no connection, a timeout, a refused certificate).
    func send(_ request: HTTPTransferRequest) async throws -> HTTPTransferResponse
    /// The whole file at `path`, or nil if there is none; read on the transport's own thread.
    func readFile(atPath path: String, maxBytes: Int) async throws -> [UInt8]?
}
