import FoundationEssentials
import ShutterCatalog
import ShutterOutbox

/// The webhook and S3 sinks' settings (`webhooks`, `webhook_url`, `s3_*`): none by default.
public struct HTTPSinkSettings: Sendable, Equatable {
    public var webhooks: [WebhookSettings] = []
    /// `https://HOST/BUCKET[/PREFIX]`; empty: no S3 sink.
    public var s3URL = ""
    public var s3Region = "us-east-1"
    public var s3Addressing = S3Location.Addressing.path
    /// An AWS shared credentials file; empty: `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`.
    public var s3CredentialsFile = ""
    /// How long one webhook POST or S3 request may take, connecting included.
    public var timeoutMilliseconds = 30_000
    /// `mirror` keeps every local copy; `offload` lets retention free the local files of
    /// pictures the store has, and `/media` redirects to them.
    public var s3Mode = S3Mode.mirror

    /// What the S3 sink does with local copies.
    public enum S3Mode: String, Sendable, Equatable {
        case mirror, offload
    }

    public init() {}
}

/// One entry of the `webhooks` list as the configuration writes it.
private struct WebhookEntry: Decodable {
    var url: String
    var events: [String]?
    var secret: String?
    var includeJPEG: Bool?

    enum CodingKeys: String, CodingKey {
        case url, events, secret
        case includeJPEG = "include_jpeg"
    }
}

extension ConfigurationKey {
    /// Webhooks and S3-compatible storage (docs/integrations.md).
    static let httpSinkKeys: [ConfigurationKey] = [
        ConfigurationKey(
            name: "webhooks", valueName: "JSON",
            help:
                "webhooks, a JSON list of {\"url\", \"events\": [types] (default all), \"secret\" (signs with X-Shutter-Signature), \"include_jpeg\"}; each gets every event it wants POSTed, at least once, in order",
            apply: { config, text in config.httpSinks.webhooks = try parseWebhooks(text) },
            current: { $0.httpSinks.webhooks.isEmpty ? "none" : "\($0.httpSinks.webhooks.count) hooks" }),
        ConfigurationKey(
            name: "webhook_url", valueName: "URL",
            help: "a webhook that gets every event as JSON (repeatable; added to the webhooks list)",
            apply: { config, text in
                try validateWebhookURL(text)
                config.httpSinks.webhooks.append(WebhookSettings(url: text))
            },
            current: { _ in "none" }),
        ConfigurationKey(
            name: "s3_url", valueName: "URL",
            help:
                "mirror every stored picture to https://HOST/BUCKET[/PREFIX] as PREFIX/YYYY/MM/DD/{id}.jpg, and delete it there when it is deleted here (plain http only for loopback)",
            apply: { config, text in
                if !text.isEmpty {
                    do { _ = try S3Location(url: text, addressing: config.httpSinks.s3Addressing) } catch {
                        throw ConfigurationError("\(error)")
                    }
                }
                config.httpSinks.s3URL = text
            },
            current: { $0.httpSinks.s3URL.isEmpty ? "none" : $0.httpSinks.s3URL }),
        ConfigurationKey(
            name: "s3_region", valueName: "REGION",
            help: "the region S3 requests are signed for (AWS Signature V4)",
            apply: { config, text in
                guard !text.isEmpty,
                    text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ":") })
                else { throw ConfigurationError("s3_region: '\(text)' is not a region name") }
                config.httpSinks.s3Region = text
            },
            current: { $0.httpSinks.s3Region }),
        ConfigurationKey(
            name: "s3_addressing", valueName: "STYLE",
            help:
                "how S3 requests name the bucket: path (https://HOST/BUCKET/KEY) or virtual (https://BUCKET.HOST/KEY)",
            apply: { config, text in
                guard let addressing = S3Location.Addressing(rawValue: text) else {
                    throw ConfigurationError("s3_addressing: '\(text)' is not path or virtual")
                }
                config.httpSinks.s3Addressing = addressing
            },
            current: { $0.httpSinks.s3Addressing.rawValue }),
        ConfigurationKey(
            name: "s3_mode", valueName: "MODE",
            help:
                "mirror (keep every local copy) or offload (retention frees only the local files of pictures the store has acknowledged, keeping their records; /media/{id}.jpg then answers 302 to a presigned URL valid 5 minutes)",
            apply: { config, text in
                guard let mode = HTTPSinkSettings.S3Mode(rawValue: text) else {
                    throw ConfigurationError("s3_mode: '\(text)' is not mirror or offload")
                }
                config.httpSinks.s3Mode = mode
            },
            current: { $0.httpSinks.s3Mode.rawValue }),
        ConfigurationKey(
            name: "s3_credentials", valueName: "FILE",
            help:
                "an AWS shared credentials file whose [default] profile has the S3 key pair; without it, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY from the environment",
            apply: { config, text in config.httpSinks.s3CredentialsFile = text },
            current: { $0.httpSinks.s3CredentialsFile.isEmpty ? "none" : $0.httpSinks.s3CredentialsFile }),
        .integer(
            "outbox_timeout_ms", "MS",
            "milliseconds one webhook POST or S3 request may take, connecting included (1000 to 600000); then it is retried",
            range: 1000...600_000, \.httpSinks.timeoutMilliseconds),
    ]

    private static func validateWebhookURL(_ url: String) throws {
        do { try WebhookSettings.validate(url: url) } catch { throw ConfigurationError("\(error)") }
    }

    /// The `webhooks` JSON list, checked: URLs, event type names.
    static func parseWebhooks(_ text: String) throws -> [WebhookSettings] {
        let entries: [WebhookEntry]
        do { entries = try JSONDecoder().decode([WebhookEntry].self, from: Data(text.utf8)) } catch {
            throw ConfigurationError(
                "webhooks: not a JSON list of {\"url\", \"events\", \"secret\", \"include_jpeg\"} (\(error))")
        }
        return try entries.map { entry in
            try validateWebhookURL(entry.url)
            var events = Set(CatalogEventType.allCases)
            if let names = entry.events {
                events = []
                for name in names {
                    guard let type = CatalogEventType(rawValue: name) else {
                        throw ConfigurationError(
                            "webhooks: '\(name)' is not an event type (\(CatalogEventType.allCases.map(\.rawValue).joined(separator: ", ")))"
                        )
                    }
                    events.insert(type)
                }
            }
            if entry.secret == "" {
                throw ConfigurationError("webhooks: an empty secret signs nothing; leave it out")
            }
            return WebhookSettings(
                url: entry.url, events: events, secret: entry.secret, includeJPEG: entry.includeJPEG ?? false)
        }
    }
}
