import ShutterCapture
import ShutterSystem
import Testing

@testable import ShutterAPI

@Suite struct PreviewPartTests {
    private static func head(sequence: UInt64, wallMilliseconds: Int64, jpegBytes: Int) -> String {
        let frame = EncodedFrame(
            sequence: sequence, capturedAt: MonotonicInstant(nanoseconds: 1),
            wallMilliseconds: wallMilliseconds,
            width: 2, height: 2, jpeg: [UInt8](repeating: 0xFF, count: jpegBytes))
        return String(decoding: PreviewPart(frame).head, as: UTF8.self)
    }

    @Test func theHeadNamesTypeLengthCaptureTimeAndSequence() {
        #expect(
            Self.head(sequence: 4321, wallMilliseconds: 1_796_019_205_054, jpegBytes: 109_667)
                == "Content-Type: image/jpeg\r\nContent-Length: 109667\r\nX-Timestamp: 1796019205.054\r\nX-Frame-Sequence: 4321\r\n\r\n"
        )
    }

    @Test func zeroesArePaddedWhereTheyMatter() {
        #expect(
            Self.head(sequence: 0, wallMilliseconds: 7, jpegBytes: 0)
                == "Content-Type: image/jpeg\r\nContent-Length: 0\r\nX-Timestamp: 0.007\r\nX-Frame-Sequence: 0\r\n\r\n"
        )
    }

    @Test func decimalsMatchTheStandardLibrary() {
        for value: UInt64 in [0, 9, 10, 99, 1000, 123_456_789, UInt64.max] {
            var bytes: [UInt8] = []
            PreviewPart.appendDecimal(value, to: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == String(value))
        }
    }
}
