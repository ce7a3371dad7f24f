import FoundationEssentials
import Testing

@testable import ShutterDaemon

/// The README's configuration table is the one `ConfigurationKey.all` makes, so the keys, flags,
/// defaults and meanings people read are the ones `--help` prints and the daemon applies.
@Suite struct ConfigurationTableTests {
    static let begin =
        "<!-- configuration table: made by ConfigurationLoader.markdownTable(); do not edit by hand -->"
    static let end = "<!-- end of configuration table -->"

    @Test func theReadmeHoldsTheGeneratedTable() throws {
        // Tests/ShutterDaemonTests/this file → the package root.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let start = try #require(
            readme.firstRange(of: Self.begin), "README.md lacks the table's opening marker")
        let stop = try #require(readme.firstRange(of: Self.end), "README.md lacks the table's closing marker")
        let table = Self.trimmed(readme[start.upperBound..<stop.lowerBound])
        let expected = Self.trimmed(Substring(ConfigurationLoader.markdownTable()))
        #expect(table == expected, "replace README.md's table with:\n\(expected)")
    }

    @Test func everyKeyHasOneRowAndNoCellBreaksTheTable() {
        let rows = ConfigurationLoader.markdownTable().split(separator: "\n")
        // The header, its rule, --config, then one row per key.
        #expect(rows.count == ConfigurationKey.all.count + 3)
        for row in rows { #expect(row.filter { $0 == "|" }.count == 6, "\(row)") }
    }

    private static func trimmed(_ text: Substring) -> String {
        String(text.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
