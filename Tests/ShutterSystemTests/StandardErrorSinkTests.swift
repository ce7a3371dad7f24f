import ShutterSystem
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The sink over a real pipe: a reader that stops must never hold a thread that logs.
@Suite(.timeLimit(.minutes(1))) struct StandardErrorSinkTests {
    @Test func aStderrNobodyReadsNeverBlocksTheLoggerAndTheDropsAreCounted() throws {
        var descriptors: [Int32] = [0, 0]
        #expect(pipe(&descriptors) == 0)
        let (readEnd, writeEnd) = (descriptors[0], descriptors[1])
        // The pipe shrunk to one page (F_SETPIPE_SZ, fcntl(2)): with the default 64 KiB, a writer
        // thread that got no CPU until the loop below had ended took the whole queue in one batch,
        // which fitted in the pipe, and nothing was left waiting (seen at load average 11).
        #expect(fcntl(writeEnd, 1031, 4096) == 4096)
        let sink = StandardErrorSink(descriptor: writeEnd, capacity: 64 * 1024)
        // The pipe holds 4 KiB and the queue 64 KiB more; the rest is dropped. None of these
        // writes may wait for the reader, which reads nothing yet (a hang fails the time limit).
        let line = String(repeating: "x", count: 99)
        for _ in 0..<5000 { sink.write(line) }
        let dropped = sink.droppedLines
        #expect(dropped > 3000)
        #expect(!sink.flush(seconds: 0))
        // The reader comes back: what was queued arrives whole and in order, then the count.
        let received = LockedValue<[UInt8]>([])
        let reader = try OSThread.spawn(name: "test-reader") {
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = read(readEnd, &buffer, buffer.count)
                if n <= 0 { break }
                received.withLock { $0 += buffer[0..<n] }
            }
        }
        #expect(sink.flush(seconds: 10))
        sink.write("after")
        #expect(sink.flush(seconds: 10))
        close(writeEnd)
        reader.join()
        close(readEnd)
        let lines = String(decoding: received.withLock { $0 }, as: UTF8.self).split(separator: "\n")
        #expect(lines.filter { $0 == line }.count == 5000 - dropped)
        // Reported as stderr takes lines again, perhaps in parts (counted as each batch is taken).
        let reported = lines.filter { $0.contains("log lines dropped: stderr was not read dropped=") }
            .compactMap { Int($0.split(separator: "=").last ?? "") }
        #expect(!reported.isEmpty && reported.reduce(0, +) == dropped)
        #expect(lines.last == "after")
        #expect(lines.allSatisfy { $0 == line || $0 == "after" || $0.contains("log lines dropped") })
    }
}
