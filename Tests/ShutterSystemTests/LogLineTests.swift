import ShutterSystem
import ShutterTestSupport
import Testing

@Suite struct LogLineTests {
    private func line(_ style: LogStyle, _ level: Logger.Level = .warning) -> String {
        let sink = RecordingLogSink()
        let logger = Logger(label: "shutterd", level: .info, sink: sink, style: style).with(
            "component", "http")
        logger.log(level, "camera \"failed\"", ["error": "a b\nc", "n": "1"])
        return sink.lines.joined()
    }

    @Test func textLinesAreKeyValue() {
        let text = line(LogStyle())
        #expect(
            text.hasSuffix(#" warning shutterd: camera "failed" component=http error="a b\nc" n=1"#))
        #expect(text.first?.isNumber == true)
    }

    @Test func jsonLinesAreOneObjectWithEveryFieldEscaped() throws {
        let json = line(LogStyle(format: .json))
        #expect(json.hasPrefix(#"{"ts":""#))
        #expect(
            json.hasSuffix(
                #"","level":"warning","label":"shutterd","msg":"camera \"failed\"","component":"http","error":"a b\nc","n":"1"}"#
            ))
    }

    /// A value a client chose (a decoded path, a Host) cannot start a line of its own: a
    /// forged line in the journal would look like the daemon's.
    @Test func textValuesCannotBreakTheLine() {
        let sink = RecordingLogSink()
        let logger = Logger(label: "shutterd", level: .info, sink: sink, style: LogStyle())
        logger.warning(
            "authentication failed",
            ["path": "/x\n2026-12-02T00:00:00.000Z error shutterd: forged", "cr": "a\rb", "bs": "c\\d\u{1b}"])
        let text = sink.lines.joined()
        #expect(!text.contains("\n") && !text.contains("\r") && !text.contains("\u{1b}"))
        #expect(text.contains(#"path="/x\n2026-12-02T00:00:00.000Z error shutterd: forged""#))
        #expect(text.contains(#"cr="a\rb""#))
        #expect(text.contains(#"bs="c\\d\u001b""#))
    }

    /// Numbers written as digits straight into the line are the bytes their strings would give.
    @Test(arguments: [LogStyle(), LogStyle(format: .json)])
    func numbersAreWrittenAsTheirStringsWouldBe(style: LogStyle) {
        for value in [0, 7, 10, 204, 999, 1000, 206_730, -42, Int.max, Int.min] {
            var direct: [UInt8] = []
            LogLine.appendValue(to: &direct, style: style, integer: value)
            var viaString: [UInt8] = []
            LogLine.appendValue(to: &viaString, style: style, value: String(value))
            #expect(direct == viaString, "\(value)")
        }
        for value: UInt64 in [0, 1, 9, 10, 999, 1000, 1001, 1234, 12_345_678, UInt64.max] {
            var direct: [UInt8] = []
            LogLine.appendValue(to: &direct, style: style, thousandths: value)
            var viaString: [UInt8] = []
            LogLine.appendValue(to: &viaString, style: style, value: Timestamp.thousandths(value))
            #expect(direct == viaString, "\(value)")
        }
    }

    @Test func journalLinesStartWithTheirSyslogPriority() {
        #expect(line(LogStyle(journalPriorities: true), .warning).hasPrefix("<4>2"))
        #expect(line(LogStyle(journalPriorities: true), .error).hasPrefix("<3>2"))
        #expect(line(LogStyle(format: .json, journalPriorities: true), .notice).hasPrefix(#"<5>{"ts":"#))
    }

    @Test func linesLoggedForARequestCarryItsId() async {
        let sink = RecordingLogSink()
        let logger = Logger(label: "shutterd", level: .info, sink: sink)
        await Logger.$requestID.withValue("r-42") {
            logger.info("stored")
            await Task.yield()
            logger.info("again", ["request_id": "explicit"])
        }
        logger.info("outside")
        #expect(sink.lines[0].hasSuffix("info shutterd: stored request_id=r-42"))
        #expect(sink.lines[1].hasSuffix("request_id=explicit"))
        #expect(!sink.lines[2].contains("request_id"))
    }

    @Test func stderrIsTheJournalOnlyWhenItsDeviceAndInodeMatch() {
        #expect(!LogStyle.stderrIsJournal(environment: [:]))
        #expect(!LogStyle.stderrIsJournal(environment: ["JOURNAL_STREAM": "1:2"]))
        #expect(!LogStyle.stderrIsJournal(environment: ["JOURNAL_STREAM": "garbage"]))
    }
}
