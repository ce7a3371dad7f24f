import ShutterSystem
import ShutterTestSupport
import Testing

@testable import ShutterHTTP

/// The access log's lines are the logger's lines, written in batches of 32 KiB or a tick's worth.
@Suite struct AccessLogTests {
    private let clock = ManualClock(wallMillis: 1_796_013_600_123)

    private func makeLog(_ sink: RecordingLogSink, level: Logger.Level = .info) -> AccessLog {
        AccessLog(
            logger: Logger(label: "shutterd", level: level, sink: sink).with("component", "http"),
            clock: clock)
    }

    @Test func aLineHasTheLoggersFormatWithKeysInOrder() {
        let sink = RecordingLogSink()
        let log = makeLog(sink)
        let started = clock.monotonicNow()
        clock.advance(by: 1_234_567)
        log.record(
            requestID: "7", method: .get, target: "/library?limit=50", status: 200, bytes: 1234,
            startedAt: started)
        log.flush()
        #expect(
            sink.lines == [
                "2026-11-30T04:40:00.124Z info shutterd: request bytes=1234 component=http duration_ms=1.234 method=GET request_id=7 status=200 target=\"/library?limit=50\""
            ])
    }

    @Test func theSameFieldsGiveTheSameLineAsTheLogger() {
        let fromAccessLog = RecordingLogSink()
        let log = makeLog(fromAccessLog)
        log.record(
            requestID: "9", method: .post, target: "/snap", status: 201, bytes: 0,
            startedAt: clock.monotonicNow())
        log.flush()
        let fromLogger = RecordingLogSink()
        Logger(label: "shutterd", sink: fromLogger).with("component", "http").info(
            "request",
            [
                "request_id": "9", "method": "POST", "target": "/snap", "status": "201", "bytes": "0",
                "duration_ms": "0.000",
            ])
        // Everything but the time, which the logger reads from the system clock.
        let strip: (String) -> Substring = { $0.drop { $0 != " " } }
        #expect(fromAccessLog.lines.map(strip) == fromLogger.lines.map(strip))
    }

    @Test func linesWaitForTheFlushAndLeaveInOneWrite() {
        let sink = RecordingLogSink()
        let log = makeLog(sink)
        for id in 1...50 {
            log.record(
                requestID: String(id), method: .get, target: "/healthz", status: 200, bytes: 16,
                startedAt: clock.monotonicNow())
        }
        #expect(sink.lines.isEmpty)
        log.flush()
        #expect(sink.lines.count == 50 && sink.writes == 1)
        #expect(sink.lines.last?.contains("request_id=50") == true)
        log.flush()
        #expect(sink.writes == 1, "nothing left to write")
    }

    @Test func aFullBatchIsWrittenWithoutWaitingForTheFlush() {
        let sink = RecordingLogSink()
        let log = makeLog(sink)
        let longTarget = "/" + String(repeating: "x", count: 4000)
        for id in 1...20 {
            log.record(
                requestID: String(id), method: .get, target: longTarget, status: 404, bytes: 80,
                startedAt: clock.monotonicNow())
        }
        // Lines of about 4.1 KB: 32 KiB is passed after the 8th and the 16th, not one line earlier.
        #expect(AccessLog.batchBytes == 32 * 1024)
        #expect(sink.writes == 2)
        #expect(sink.lines.count == 16)
        log.flush()
        #expect(sink.writes == 3 && sink.lines.count == 20)
    }

    /// The values written as digits without a string in between, and the bytes made once at the
    /// start, give the logger's line in every style, byte for byte after the time.
    @Test(arguments: [
        LogStyle(), LogStyle(format: .json), LogStyle(format: .text, journalPriorities: true),
        LogStyle(format: .json, journalPriorities: true),
    ])
    func everyStyleGivesTheLoggersLine(style: LogStyle) {
        let fromAccessLog = RecordingLogSink()
        let logger = Logger(label: "shutterd", sink: fromAccessLog, style: style).with("component", "http")
            .with("zone", "a b")
        let log = AccessLog(logger: logger, clock: clock)
        let started = clock.monotonicNow()
        clock.advance(by: 12_345_678_901)
        log.record(
            requestID: "r-1", method: .delete, target: "/library/7?x=\"q\"", status: 204, bytes: 0,
            startedAt: started)
        log.record(
            requestID: "", method: .get, target: "/media/1.jpg", status: 200, bytes: 9_876_543_210,
            startedAt: clock.monotonicNow())
        log.flush()
        let fromLogger = RecordingLogSink()
        let reference = Logger(label: "shutterd", sink: fromLogger, style: style).with("component", "http")
            .with("zone", "a b")
        reference.info(
            "request",
            [
                "request_id": "r-1", "method": "DELETE", "target": "/library/7?x=\"q\"", "status": "204",
                "bytes": "0", "duration_ms": "12345.678",
            ])
        reference.info(
            "request",
            [
                "request_id": "", "method": "GET", "target": "/media/1.jpg", "status": "200",
                "bytes": "9876543210", "duration_ms": "0.000",
            ])
        // The time is the only difference: the logger reads it from the system clock.
        let withoutTime: (String) -> String = {
            $0.replacing(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/, with: "T")
        }
        #expect(fromAccessLog.lines.count == 2)
        #expect(fromAccessLog.lines.map(withoutTime) == fromLogger.lines.map(withoutTime))
    }

    @Test func nothingIsBuiltWhenInfoIsOff() {
        let sink = RecordingLogSink()
        let log = makeLog(sink, level: .warning)
        log.record(
            requestID: "1", method: .get, target: "/", status: 200, bytes: 1, startedAt: clock.monotonicNow())
        log.flush()
        #expect(sink.writes == 0)
    }

    @Test func theTimestampCacheAgreesWithTheFormatterAcrossSeconds() {
        var cache = LogTimestampCache()
        for milliseconds: Int64 in [
            0, 999, 1000, 1001, 59_999, 60_000, 1_796_013_599_999, 1_796_013_600_000, 1_796_013_600_001,
            951_782_400_000,
        ] {
            var bytes: [UInt8] = []
            cache.append(millisecondsSince1970: milliseconds, to: &bytes)
            #expect(
                String(decoding: bytes, as: UTF8.self)
                    == Timestamp.iso8601(millisecondsSince1970: milliseconds))
        }
    }
}
