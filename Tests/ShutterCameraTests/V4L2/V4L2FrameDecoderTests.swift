import CV4L2
import Testing

@testable import ShutterCamera

@Suite struct V4L2FrameDecoderTests {
    @Test func yuyvFramesBecomePlanar422Images() {
        var decoder = V4L2FrameDecoder(pixelFormat: .yuyv, width: 2, height: 1, bytesPerLine: 4)
        let outcome = [UInt8]([16, 90, 235, 170]).withUnsafeBytes { decoder.decode($0) }
        guard case .image(.yuv(let image), 2, 1) = outcome else {
            Issue.record("expected a 2x1 YUV image, got \(outcome)")
            return
        }
        #expect(image.subsampling == .yuv422)
        // Deinterleaved and expanded to full range in one pass, ready for the encoder.
        #expect(image.isFullRange)
        #expect(image.bytes == [0, 255, 85, 176])
    }

    @Test func shortUncompressedFramesAreCorrupt() {
        var decoder = V4L2FrameDecoder(pixelFormat: .nv12, width: 4, height: 4, bytesPerLine: 4)
        let outcome = [UInt8](repeating: 0, count: 20).withUnsafeBytes { decoder.decode($0) }
        guard case .corrupt(let reason) = outcome else {
            Issue.record("expected a corrupt frame")
            return
        }
        #expect(reason == "20 bytes where a 4x4 frame needs 24")
    }

    @Test func mjpegFramesAreRepairedAndSizedFromTheirOwnHeader() throws {
        let (stripped, _) = MJPEGRepairTests.strippingHuffmanTables(try MJPEGRepairTests.patternJPEG())
        // The driver claims another size; the JPEG's SOF is what the picture really is.
        var decoder = V4L2FrameDecoder(pixelFormat: .mjpeg, width: 640, height: 480, bytesPerLine: 0)
        let padded = stripped + [UInt8](repeating: 0, count: 300)
        let outcome = padded.withUnsafeBytes { decoder.decode($0) }
        guard case .image(.jpeg(let jpeg), 64, 48) = outcome else {
            Issue.record("expected a 64x48 JPEG, got \(outcome)")
            return
        }
        #expect(jpeg == (try MJPEGRepair.insertingStandardHuffmanTables(stripped)))
    }

    /// A header naming far more than the camera was set to is damage or a forgery, and the
    /// overlay would decode it: dropped as corrupt. Up to twice each side is still a picture.
    @Test func anMJPEGFrameFarLargerThanTheCameraWasSetToIsCorrupt() throws {
        let frame = try MJPEGRepairTests.patternJPEG(width: 64, height: 48)
        var small = V4L2FrameDecoder(pixelFormat: .mjpeg, width: 32, height: 24, bytesPerLine: 0)
        guard case .image(_, 64, 48) = frame.withUnsafeBytes({ small.decode($0) }) else {
            Issue.record("a frame twice the set size is a picture")
            return
        }
        var smaller = V4L2FrameDecoder(pixelFormat: .mjpeg, width: 32, height: 23, bytesPerLine: 0)
        let outcome = frame.withUnsafeBytes { smaller.decode($0) }
        guard case .corrupt(let reason) = outcome else {
            Issue.record("expected a corrupt frame, got \(outcome)")
            return
        }
        #expect(reason == "the frame header says 64x48, the camera was set to 32x23")
    }

    @Test func brokenMJPEGFramesAreCorrupt() {
        var decoder = V4L2FrameDecoder(pixelFormat: .mjpeg, width: 64, height: 48, bytesPerLine: 0)
        let outcome = [UInt8](repeating: 0x42, count: 300).withUnsafeBytes { decoder.decode($0) }
        guard case .corrupt(let reason) = outcome else {
            Issue.record("expected a corrupt frame")
            return
        }
        #expect(reason == MJPEGRepair.Defect.missingStartOfImage.description)
    }

    @Test func aFrameStillHeldIsNotOverwrittenByTheNext() {
        var decoder = V4L2FrameDecoder(pixelFormat: .yuv420, width: 2, height: 2, bytesPerLine: 2)
        let first = [UInt8](repeating: 1, count: 6).withUnsafeBytes { decoder.decode($0) }
        let second = [UInt8](repeating: 2, count: 6).withUnsafeBytes { decoder.decode($0) }
        guard case .image(.yuv(let a), _, _) = first, case .image(.yuv(let b), _, _) = second else {
            Issue.record("expected two YUV images")
            return
        }
        #expect(a.bytes == [UInt8](repeating: 1, count: 6))
        #expect(b.bytes == [UInt8](repeating: 2, count: 6))
    }

    /// Where an image's planes live, to tell a buffer drawn on in place from a copy.
    private static func address(_ image: YUVImage) -> UInt {
        image.bytes.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
    }

    /// A 4x2 YUYV frame whose every luma is `luma` and chroma 128.
    private static func yuyvFrame(luma: UInt8) -> [UInt8] {
        (0..<8).flatMap { _ in [luma, 128] }
    }

    @Test func aLentCanvasIsDrawnOnInPlaceAndComesBackForTheNextFrameWithoutTheDrawing() throws {
        var decoder = V4L2FrameDecoder(pixelFormat: .yuyv, width: 4, height: 2, bytesPerLine: 8)
        guard
            case .image(.yuv(var frame), _, _) = Self.yuyvFrame(luma: 60).withUnsafeBytes({
                decoder.decode($0)
            })
        else {
            Issue.record("expected a YUV image")
            return
        }
        let lent = Self.address(frame)
        let lending = decoder.lendCanvas()
        #expect(lending)
        // Stands for the burned-in text: with the decoder's reference gone, nothing is copied.
        frame.fill(x: 0, y: 0, width: 2, height: 2, luma: 255, cb: 90, cr: 200)
        #expect(Self.address(frame) == lent)
        decoder.takeBackCanvas(consume frame)

        guard
            case .image(.yuv(let next), _, _) = Self.yuyvFrame(luma: 120).withUnsafeBytes({
                decoder.decode($0)
            })
        else {
            Issue.record("expected a YUV image")
            return
        }
        #expect(Self.address(next) == lent)
        var fresh = V4L2FrameDecoder(pixelFormat: .yuyv, width: 4, height: 2, bytesPerLine: 8)
        guard
            case .image(.yuv(let expected), _, _) = Self.yuyvFrame(luma: 120).withUnsafeBytes({
                fresh.decode($0)
            })
        else {
            Issue.record("expected a YUV image")
            return
        }
        #expect(next.bytes == expected.bytes)
        #expect(next.isFullRange)
    }

    @Test func aCanvasHeldByTheDecoderIsCopiedRatherThanDrawnOnInPlace() {
        var decoder = V4L2FrameDecoder(pixelFormat: .yuyv, width: 4, height: 2, bytesPerLine: 8)
        guard
            case .image(.yuv(var frame), _, _) = Self.yuyvFrame(luma: 60).withUnsafeBytes({
                decoder.decode($0)
            })
        else {
            Issue.record("expected a YUV image")
            return
        }
        let held = Self.address(frame)
        frame.fill(x: 0, y: 0, width: 2, height: 2, luma: 255, cb: 90, cr: 200)
        // Not lent: the decoder's own canvas is left as it was converted.
        #expect(Self.address(frame) != held)
        guard
            case .image(.yuv(let next), _, _) = Self.yuyvFrame(luma: 60).withUnsafeBytes({
                decoder.decode($0)
            })
        else {
            Issue.record("expected a YUV image")
            return
        }
        #expect(Self.address(next) == held)
    }

    @Test func nothingIsLentBeforeAFrameOrForMJPEGAndACanvasOfAnotherSizeIsNotTakenBack() throws {
        var mjpeg = V4L2FrameDecoder(pixelFormat: .mjpeg, width: 64, height: 48, bytesPerLine: 0)
        var decoder = V4L2FrameDecoder(pixelFormat: .yuyv, width: 4, height: 2, bytesPerLine: 8)
        let lentByMJPEG = mjpeg.lendCanvas()
        let lentBeforeAFrame = decoder.lendCanvas()
        _ = Self.yuyvFrame(luma: 60).withUnsafeBytes { decoder.decode($0) }
        let lentAfterAFrame = decoder.lendCanvas()
        let lentTwice = decoder.lendCanvas()
        #expect(!lentByMJPEG && !lentBeforeAFrame && lentAfterAFrame && !lentTwice)
        let other = YUVImage(width: 2, height: 2, subsampling: .yuv422)
        let otherAddress = Self.address(other)
        decoder.takeBackCanvas(other)
        guard
            case .image(.yuv(let next), 4, 2) = Self.yuyvFrame(luma: 60).withUnsafeBytes({
                decoder.decode($0)
            })
        else {
            Issue.record("expected a 4x2 YUV image")
            return
        }
        #expect(Self.address(next) != otherAddress)
    }
}
