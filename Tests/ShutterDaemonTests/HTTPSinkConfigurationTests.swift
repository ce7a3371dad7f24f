import ShutterCatalog
import ShutterDaemon
import ShutterOutbox
import Testing

@Suite struct HTTPSinkConfigurationTests {
    private func load(_ arguments: [String], environment: [String: String] = [:], file: String? = nil) throws
        -> ShutterConfiguration
    {
        let outcome = try ConfigurationLoader.load(arguments: arguments, environment: environment) { _ in
            guard let file else { throw ConfigurationError("no such file") }
            return Array(file.utf8)
        }
        guard case .run(let configuration) = outcome else { throw ConfigurationError("no configuration") }
        return configuration
    }

    @Test func theWebhooksListComesFromTheFileAndWebhookURLAddsToIt() throws {
        let file = #"""
            {"webhooks": [
              {"url": "https://a.example/x", "events": ["picture.created", "camera.state"], "secret": "s", "include_jpeg": true},
              {"url": "http://127.0.0.1:9/y"}
            ], "outbox_timeout_ms": 5000}
            """#
        let configuration = try load(
            ["--config", "c.json", "--webhook-url", "https://b.example/z"], file: file)
        let hooks = configuration.httpSinks.webhooks
        #expect(hooks.map(\.url) == ["https://a.example/x", "http://127.0.0.1:9/y", "https://b.example/z"])
        #expect(
            hooks[0].events == [.pictureCreated, .cameraState] && hooks[0].secret == "s"
                && hooks[0].includeJPEG)
        #expect(
            hooks[1].events == Set(CatalogEventType.allCases) && hooks[1].secret == nil
                && !hooks[1].includeJPEG)
        #expect(configuration.httpSinks.timeoutMilliseconds == 5000)
        // The environment gives the same JSON as text.
        let fromEnvironment = try load(
            [], environment: ["SHUTTERD_WEBHOOKS": #"[{"url": "https://c.example/"}]"#])
        #expect(fromEnvironment.httpSinks.webhooks.map(\.url) == ["https://c.example/"])
    }

    @Test func s3KeysAreCheckedWhenRead() throws {
        let configuration = try load([
            "--s3-url", "https://s3.example.net/bucket/p", "--s3-region", "eu-west-1", "--s3-addressing",
            "virtual",
        ])
        #expect(configuration.httpSinks.s3URL == "https://s3.example.net/bucket/p")
        #expect(
            configuration.httpSinks.s3Region == "eu-west-1"
                && configuration.httpSinks.s3Addressing == .virtual)
        #expect(try load([]).httpSinks == HTTPSinkSettings())
        // Offload turns retention into freeing uploaded files, and only with an S3 sink.
        let offload = try load(["--s3-mode", "offload", "--retention-max-pictures", "10"])
        #expect(offload.retentionPolicy?.offloadsUploaded == false)
        let withS3 = try load([
            "--s3-mode", "offload", "--retention-max-pictures", "10", "--s3-url",
            "https://s3.example.net/b12",
        ])
        #expect(withS3.retentionPolicy?.offloadsUploaded == true)
    }

    @Test(arguments: [
        (["--webhook-url", "ftp://x.example/"], "not an http:// or https:// URL"),
        (
            ["--webhooks", #"[{"url": "https://x.example/", "events": ["picture.made"]}]"#],
            "not an event type"
        ),
        (["--webhooks", #"[{"url": "https://x.example/", "secret": ""}]"#], "empty secret"),
        (["--webhooks", #"{"url": "https://x.example/"}"#], "not a JSON list"),
        (["--s3-url", "http://s3.example.net/bucket"], "only for a loopback host"),
        (["--s3-addressing", "dns"], "not path or virtual"),
        (["--s3-mode", "move"], "not mirror or offload"),
        (["--s3-region", "eu west"], "not a region name"),
        (["--outbox-timeout-ms", "10"], "from 1000 to 600000"),
    ])
    func badValuesSayWhatIsWrong(arguments: [String], words: String) {
        #expect {
            _ = try load(arguments)
        } throws: { error in
            "\(error)".contains(words)
        }
    }
}
