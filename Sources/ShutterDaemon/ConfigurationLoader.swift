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
        return .run(config)
    }

    private static func applyFile(
        _ path: String, to config: inout ShutterConfiguration, readFile: (String) throws -> [UInt8]
    ) throws {
        let bytes: [UInt8]
        do { bytes = try readFile(path) } catch {
            throw ConfigurationError("config file \(path): \(error)")
        }
        let object: [String: JSONValue]
        do { object = try JSONDecoder().decode([String: JSONValue].self, from: Data(bytes)) } catch {
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
