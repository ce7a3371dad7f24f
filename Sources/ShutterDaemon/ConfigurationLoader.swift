import FoundationEssentials
import ShutterAPI
import ShutterSystem

/// Builds the configuration from its sources with one precedence:
/// flags, then `SHUTTERD_*` environment variables, then the config file, then defaults.
public enum ConfigurationLoader {
    /// What the command line asked for.
    public enum Outcome: Equatable {
        case run(ShutterConfiguration)
        case help(String)
        case version
    }

    /// Reads `arguments` (without the program name), `environment` and the config file they name.
    public static func load(
        arguments: [String], environment: [String: String],
        readFile: (String) throws -> [UInt8] = readWholeFile
    ) throws -> Outcome {
        var flags: [(ConfigurationKey, String)] = []
        var configPath = environment["SHUTTERD_CONFIG"]
        var index = 0
        while index < arguments.count {
            var argument = arguments[index]
            index += 1
            if argument == "--help" || argument == "-h" { return .help(helpText()) }
            // The man page (scripts/install) is printed from the same keys as --help.
            if argument == "--man" { return .help(manualPage(version: ShutterDaemon.version)) }
            if argument == "--version" { return .version }
            var inlineValue: String?
            if let equals = argument.firstIndex(of: "="), argument.hasPrefix("--") {
                inlineValue = String(argument[argument.index(after: equals)...])
                argument = String(argument[..<equals])
            }
            func value() throws -> String {
                if let inlineValue { return inlineValue }
                guard index < arguments.count else { throw ConfigurationError("\(argument) needs a value") }
                index += 1
                return arguments[index - 1]
            }
            if argument == "--config" {
                configPath = try value()
                continue
            }
            guard let key = ConfigurationKey.all.first(where: { $0.flag == argument }) else {
                throw ConfigurationError("unknown option '\(argument)'; see --help")
            }
            // A boolean flag alone (`--insecure-no-auth`) means true.
            if key.valueName == "BOOL", inlineValue == nil,
                index >= arguments.count || arguments[index].hasPrefix("--")
            {
                flags.append((key, "true"))
                continue
            }
            flags.append((key, try value()))
        }

        var config = ShutterConfiguration()
        if let configPath {
            try applyFile(configPath, to: &config, readFile: readFile)
        }
        for key in ConfigurationKey.all {
            if let value = environment[key.environmentVariable] { try key.apply(&config, value) }
        }
        for (key, value) in flags { try key.apply(&config, value) }
        if (config.tlsCertificatePath == nil) != (config.tlsKeyPath == nil) {
            throw ConfigurationError(
                "tls_cert and tls_key go together: give both to serve HTTPS, or neither to serve HTTP")
        }
        config.credentialsDirectory = environment["CREDENTIALS_DIRECTORY"]
        return .run(config)
    }

    private static func applyFile(
        _ path: String, to config: inout ShutterConfiguration, readFile: (String) throws -> [UInt8]
    ) throws {
        let bytes: [UInt8]
        do { bytes = try readFile(path) } catch {
            throw ConfigurationError("config file \(path): \(error)")
        }
        let object: [String: ConfigurationFileValue]
        do {
            object = try JSONDecoder().decode([String: ConfigurationFileValue].self, from: Data(bytes))
        } catch {
            throw ConfigurationError("config file \(path): not a JSON object (\(error))")
        }
        for (name, value) in object.sorted(by: { $0.key < $1.key }) {
            // Keys starting with "_" are comments, so the example file can explain itself.
            if name.hasPrefix("_") { continue }
            guard let key = ConfigurationKey.all.first(where: { $0.name == name }) else {
                throw ConfigurationError("config file \(path): unknown key '\(name)'")
            }
            try key.apply(&config, value.text)
        }
    }

    /// `--help`: every key with its flag, environment variable and default.
    public static func helpText() -> String {
        let defaults = ShutterConfiguration()
        var text = """
            shutterd: a camera capture daemon with an HTTP API.

            Usage: shutterd [--config FILE] [OPTIONS]

            Every option can also be set as an environment variable or a key in the
            JSON config file; precedence is flags > environment > file > defaults.

              --config FILE  (SHUTTERD_CONFIG)  JSON config file, e.g. config/shutterd.json
              --help         this text
              --version      print the version


            """
        for key in ConfigurationKey.all {
            text += "  \(key.flag) \(key.valueName)  (\(key.environmentVariable), \"\(key.name)\")\n"
            text += "      \(key.help); default \(key.current(defaults))\n"
        }
        return text
    }

    /// The configuration table of the README, made from `ConfigurationKey.all` so the two cannot
    /// drift apart (a unit test checks the README holds exactly this).
    /// `shutterd(8)` in roff (man(7)), made from `ConfigurationKey.all` like `--help`, so the
    /// two cannot drift apart.
    public static func manualPage(version: String) -> String {
        let defaults = ShutterConfiguration()
        func roff(_ text: String) -> String {
            // A backslash starts an escape and a leading dot or quote a request (groff(7)).
            var escaped = text.replacingAll("\\", with: "\\e").replacingAll("-", with: "\\-")
            if escaped.hasPrefix(".") || escaped.hasPrefix("'") { escaped = "\\&" + escaped }
            return escaped
        }
        var page = """
            .TH SHUTTERD 8 "" "shutterd \(version)" "System Administration"
            .SH NAME
            shutterd \\- a camera capture daemon with an HTTP API
            .SH SYNOPSIS
            .B shutterd
            [\\fB\\-\\-config\\fR \\fIFILE\\fR] [\\fIOPTIONS\\fR]
            .SH DESCRIPTION
            .B shutterd
            turns a V4L2 camera (or a built\\-in test pattern) into an HTTP service: POST /snap stores a
            JPEG in a SQLite\\-catalogued library, GET /library lists it, /preview.mjpg streams the live
            picture, and the page at / is a camera app. It listens on loopback unless told otherwise.
            .PP
            Every option can also be set as an environment variable or a key in the JSON config file;
            flags win over the environment, which wins over the file.
            .SH OPTIONS
            .TP
            \\fB\\-\\-config\\fR \\fIFILE\\fR
            JSON config file (environment SHUTTERD_CONFIG).
            .TP
            \\fB\\-\\-help\\fR
            Print the options and exit.
            .TP
            \\fB\\-\\-version\\fR
            Print the version and exit.

            """
        for key in ConfigurationKey.all {
            page += ".TP\n\\fB\(roff(key.flag))\\fR \\fI\(roff(key.valueName))\\fR\n"
            page += "\(roff(key.help)). Default: \(roff(key.current(defaults))). "
            page += "Environment \(roff(key.environmentVariable)), config key \(roff(key.name)).\n"
        }
        page += """
            .SH SIGNALS
            SIGTERM and SIGINT stop accepting, let requests in flight finish, and exit 0.
            .SH FILES
            .TP
            .I /etc/shutterd.json
            The configuration the systemd unit passes with \\-\\-config.
            .TP
            .I /var/lib/shutterd
            The data directory under systemd: catalog.sqlite, media/, link\\-signing.key.
            .SH SEE ALSO
            .BR systemd.service (5),
            .BR journalctl (1)

            """
        return page
    }

    public static func markdownTable() -> String {
        let defaults = ShutterConfiguration()
        var table = """
            | key (file) | flag | environment | default | meaning |
            |---|---|---|---|---|
            | | `--config FILE` | `SHUTTERD_CONFIG` | none | JSON config file, e.g. `config/shutterd.json` |

            """
        for key in ConfigurationKey.all {
            table +=
                "| `\(key.name)` | `\(key.flag) \(key.valueName)` | `\(key.environmentVariable)` | `\(key.current(defaults))` | \(key.help) |\n"
        }
        return table
    }

    /// Reads a whole file into memory.
    public static func readWholeFile(_ path: String) throws -> [UInt8] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return [UInt8](data)
    }
}

extension String {
    /// The text with every `target` replaced by `replacement`.
    fileprivate func replacingAll(_ target: String, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
