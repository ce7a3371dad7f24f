import ShutterDaemon
import ShutterHTTP
import ShutterSystem
import Testing

@Suite struct ConfigurationLoaderTests {
    private func load(
        _ arguments: [String], environment: [String: String] = [:], file: String? = nil
    ) throws -> ShutterConfiguration {
        let outcome = try ConfigurationLoader.load(arguments: arguments, environment: environment) { _ in
            guard let file else { throw ConfigurationError("no such file") }
            return Array(file.utf8)
        }
        guard case .run(let configuration) = outcome else {
            throw ConfigurationError("expected a configuration, got \(outcome)")
        }
        return configuration
    }

    @Test func defaultsAreSafe() throws {
        let configuration = try load([])
        #expect(configuration.listenHost == "127.0.0.1")
        #expect(configuration.listenPort == 8080)
        #expect(configuration.width == 1280 && configuration.height == 720 && configuration.fps == 30)
    }

    @Test func accessKeysAndABooleanFlagWithoutAValue() throws {
        let configuration = try load(
            [
                "--insecure-no-auth", "--anonymous", "view", "--allowed-hosts", "cam.example.org, pi.lan",
                "--cors-origins=https://dash.example.org", "--auth-tokens", "tokens",
            ],
            environment: ["CREDENTIALS_DIRECTORY": "/run/credentials/shutterd.service"])
        #expect(configuration.insecureNoAuth)
        #expect(configuration.anonymous == .scope(.view))
        #expect(configuration.allowedHosts == ["cam.example.org", "pi.lan"])
        #expect(configuration.corsOrigins == ["https://dash.example.org"])
        #expect(configuration.authTokensPath == "tokens")
        #expect(configuration.credentialsDirectory == "/run/credentials/shutterd.service")
        #expect(try load(["--access-log", "false"]).accessLog == false)
        #expect(try load(["--access-log"]).accessLog == true)
        #expect(try load([]).anonymous == .automatic)
        #expect(throws: ConfigurationError.self) { try load(["--anonymous", "root"]) }
    }

    @Test func theManPageListsEveryKeyThatHelpDoes() throws {
        let outcome = try ConfigurationLoader.load(arguments: ["--man"], environment: [:])
        guard case .help(let page) = outcome else { return #expect(Bool(false)) }
        #expect(page.hasPrefix(".TH SHUTTERD 8 "))
        for key in ConfigurationKey.all {
            // roff writes a literal hyphen as \- (groff(7)).
            let flag = key.flag.split(separator: "-", omittingEmptySubsequences: false).joined(
                separator: "\\-")
            #expect(page.contains("\\fB\(flag)\\fR"), "\(key.flag)")
            #expect(page.contains(key.environmentVariable.replacing("-", with: "\\-")))
        }
        // Every line roff takes for a request is one of the man macros used on purpose: help
        // text that began with a dot would have been escaped.
        let requests: Set<Substring> = ["TH", "SH", "TP", "PP", "B", "I", "BR"]
        for line in page.split(separator: "\n") where line.hasPrefix(".") || line.hasPrefix("'") {
            let name = line.dropFirst().prefix { $0 != " " }
            #expect(requests.contains(name), "\(line)")
        }
    }

    @Test func flagsOverrideEnvironmentOverrideFile() throws {
        let file = #"{"fps": 10, "size": "320x240", "quality": 50, "_note": "ignored"}"#
        let configuration = try load(
            ["--config", "x.json", "--fps=25"],
            environment: ["SHUTTERD_FPS": "15", "SHUTTERD_SIZE": "640x480"],
            file: file)
        #expect(configuration.fps == 25)
        #expect(configuration.width == 640 && configuration.height == 480)
        #expect(configuration.quality == 50)
    }

    @Test func configFileFromEnvironment() throws {
        let configuration = try load(
            [], environment: ["SHUTTERD_CONFIG": "c.json"], file: #"{"listen": "[::1]:9000"}"#)
        #expect(configuration.listenHost == "[::1]" && configuration.listenPort == 9000)
    }

    @Test func httpLimitsAreKeys() throws {
        let configuration = try load([
            "--max-connections", "7", "--max-body-bytes", "100", "--idle-timeout-ms", "500",
        ])
        #expect(configuration.http.maxConnections == 7)
        #expect(configuration.http.limits.maxBodyBytes == 100)
        #expect(configuration.http.idleTimeoutMilliseconds == 500)
    }

    @Test(arguments: [
        (["--fps", "0"], "fps"), (["--fps", "abc"], "fps"), (["--size", "641x480"], "size"),
        (["--listen", "8080"], "listen"), (["--quality", "101"], "quality"), (["--unknown"], "--unknown"),
        (["--fps"], "needs a value"), (["--camera", "/etc/passwd"], "camera"),
        (["--log-level", "loud"], "log_level"),
    ])
    func badValuesSayWhatIsWrong(arguments: [String], word: String) {
        #expect {
            try load(arguments)
        } throws: { error in
            "\(error)".contains(word)
        }
    }

    @Test func tlsCertificateAndKeyComeFromEverySource() throws {
        let flags = try load(["--tls-cert", "/c.pem", "--tls-key", "/k.pem"])
        #expect(flags.tlsCertificatePath == "/c.pem" && flags.tlsKeyPath == "/k.pem")
        let environment = try load(
            [], environment: ["SHUTTERD_TLS_CERT": "/e.pem", "SHUTTERD_TLS_KEY": "/ek.pem"])
        #expect(environment.tlsCertificatePath == "/e.pem" && environment.tlsKeyPath == "/ek.pem")
        let file = try load(["--config", "f"], file: #"{"tls_cert": "/f.pem", "tls_key": "/fk.pem"}"#)
        #expect(file.tlsCertificatePath == "/f.pem" && file.tlsKeyPath == "/fk.pem")
        #expect(try load([]).tlsCertificatePath == nil)
    }

    @Test(arguments: [["--tls-cert", "/c.pem"], ["--tls-key", "/k.pem"]])
    func tlsCertificateAndKeyGoTogether(arguments: [String]) {
        #expect {
            try load(arguments)
        } throws: { error in
            "\(error)".contains("tls_cert and tls_key go together")
        }
    }

    @Test func anEmptyTLSPathUnsetsTheFilesValue() throws {
        let configuration = try load(
            ["--config", "f", "--tls-cert", "", "--tls-key="],
            file: #"{"tls_cert": "/f.pem", "tls_key": "/fk.pem"}"#)
        #expect(configuration.tlsCertificatePath == nil && configuration.tlsKeyPath == nil)
    }

    @Test func unknownFileKeysAreRejected() {
        #expect(throws: ConfigurationError.self) { try load(["--config", "f"], file: #"{"colour": "red"}"#) }
        #expect(throws: ConfigurationError.self) { try load(["--config", "f"], file: "not json") }
    }

    @Test func helpMentionsEveryKey() throws {
        let help = ConfigurationLoader.helpText()
        for key in ConfigurationKey.all {
            #expect(help.contains(key.flag))
            #expect(help.contains(key.environmentVariable))
        }
    }
}
