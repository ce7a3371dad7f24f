import ShutterCatalog
import ShutterOutbox
import ShutterSystem

extension ShutterDaemon {
    /// The webhook and S3 sinks the configuration asks for, sharing one libcurl transfer thread
    /// (started only when there is a sink); `stopInReverse` gets the thread's stop.
    func makeHTTPSinks(catalog: MediaCatalog, stopInReverse: inout [() -> Void]) throws -> [any OutboxSink] {
        let settings = configuration.httpSinks
        guard !settings.webhooks.isEmpty || !settings.s3URL.isEmpty else { return [] }
        let s3 = try s3Settings(settings)
        let transfers = try CurlTransferLoop(userAgent: "shutterd/\(Self.version)")
        // Appended before the dispatchers' stop, so it runs after them: nothing sends any more.
        stopInReverse.append { blockingAwait { await transfers.stop() } }
        let mediaPath: @Sendable (Int64) -> String = { catalog.mediaPath(id: $0) }
        var sinks: [any OutboxSink] = []
        var names = Set<String>()
        for var hook in settings.webhooks {
            // The same URL twice would share a cursor: one sink, not two.
            guard names.insert(hook.sinkName).inserted else { continue }
            hook.timeoutMilliseconds = settings.timeoutMilliseconds
            sinks.append(WebhookSink(settings: hook, transport: transfers, mediaPath: mediaPath))
            logger.notice(
                "webhook sink",
                [
                    "sink": hook.sinkName,
                    "events": hook.events.map(\.rawValue).sorted().joined(separator: ","),
                    "signed": hook.secret == nil ? "no" : "yes",
                    "include_jpeg": hook.includeJPEG ? "yes" : "no",
                ])
        }
        if let s3 {
            sinks.append(
                S3Sink(
                    settings: s3, transport: transfers, mediaPath: mediaPath,
                    logger: logger.with("component", "outbox"),
                    onUploaded: { [logger] id in
                        do { try await catalog.markUploaded(id: id) } catch {
                            logger.warning(
                                "could not record an upload", ["id": String(id), "error": "\(error)"])
                        }
                    }))
            logger.notice(
                "s3 sink",
                [
                    "url": s3.location.description, "region": s3.region,
                    "addressing": s3.location.addressing.rawValue, "key": s3.credentials.accessKeyID,
                    "mode": settings.s3Mode.rawValue,
                ])
        }
        return sinks
    }

    /// With `s3_mode offload`, where `/media` sends a client for an offloaded picture: a URL
    /// presigned for five minutes from now.
    func remoteMediaURL(clock: any Clock) throws -> (@Sendable (MediaRecord) -> String?)? {
        guard configuration.httpSinks.s3Mode == .offload, let s3 = try s3Settings(configuration.httpSinks)
        else {
            return nil
        }
        return { record in
            let takenAt = Timestamp.iso8601(millisecondsSince1970: record.takenAt)
            guard let key = s3.location.objectKey(pictureID: record.id, takenAt: takenAt) else { return nil }
            return S3Presigner.presignedGetURL(
                key: key, location: s3.location, region: s3.region, credentials: s3.credentials,
                nowSecondsSince1970: clock.wallMillisecondsNow() / 1000, expiresInSeconds: 300)
        }
    }

    /// The S3 settings with their keys, or nil without `s3_url`; throws when the keys are missing.
    private func s3Settings(_ settings: HTTPSinkSettings) throws -> S3Settings? {
        guard !settings.s3URL.isEmpty else { return nil }
        let location: S3Location
        do { location = try S3Location(url: settings.s3URL, addressing: settings.s3Addressing) } catch {
            throw ConfigurationError("\(error)")
        }
        let credentials: S3Credentials?
        if settings.s3CredentialsFile.isEmpty {
            credentials = S3Credentials.fromEnvironment(environment)
        } else {
            let text: String
            do {
                text = String(
                    decoding: try ConfigurationLoader.readWholeFile(settings.s3CredentialsFile), as: UTF8.self
                )
            } catch {
                throw ConfigurationError("s3_credentials \(settings.s3CredentialsFile): cannot be read")
            }
            credentials = S3Credentials.parse(credentialsFile: text)
        }
        guard let credentials else {
            throw ConfigurationError(
                settings.s3CredentialsFile.isEmpty
                    ? "s3_url needs keys: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or s3_credentials"
                    : "s3_credentials \(settings.s3CredentialsFile): no aws_access_key_id and aws_secret_access_key in [default]"
            )
        }
        return S3Settings(
            location: location, region: settings.s3Region, credentials: credentials,
            timeoutMilliseconds: settings.timeoutMilliseconds)
    }
}
