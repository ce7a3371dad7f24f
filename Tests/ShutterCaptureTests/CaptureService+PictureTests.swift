import ShutterCamera
import ShutterSystem
import ShutterTestSupport
import Testing

@testable import ShutterCapture

/// What `storedPicture` stores: the frame's bytes plus EXIF, or, when pictures carry their own
/// text, the frame as captured with the text for this picture drawn by the same code, encoded once.
@Suite struct CaptureServicePictureTests {
    private let quiet = Logger(label: "test", level: .critical)
    static let takenAt: Int64 = 1_700_000_000_123

    static func frame(pictureSource: RawImage?) -> (EncodedFrame, YUVImage) {
        var image = YUVImage(width: 160, height: 120, subsampling: .yuv422)
        image.fill(x: 0, y: 0, width: 80, height: 120, luma: 200, cb: 128, cr: 128)
        let frame = EncodedFrame(
            sequence: 9, capturedAt: MonotonicInstant(nanoseconds: 1), wallMilliseconds: takenAt, width: 160,
            height: 120, jpeg: [0xFF, 0xD8, 1, 2, 3, 0xFF, 0xD9], pictureSource: pictureSource ?? .yuv(image))
        return (frame, image)
    }

    func capture(_ overlay: CaptureOverlay?) throws -> CaptureService {
        try CaptureService(
            source: FakeCameraSource(name: "cam"), quality: 80, overlay: overlay, software: "shutterd 9",
            logger: quiet)
    }

    static func overlay(on targets: Set<String>) -> CaptureOverlay {
        CaptureOverlay(
            template: OverlayTemplate("%H:%M:%S.%f {label} #{frame} job {job}")!,
            style: .init(position: .bottomRight, pixelSize: 14), utc: true,
            onPictures: targets.contains("pictures"),
            onPreview: targets.contains("preview"))
    }

    @Test func withoutAnOverlayThePictureIsTheFramesBytesAfterTheEXIFBlock() throws {
        let (frame, _) = Self.frame(pictureSource: nil)
        let stored = try capture(nil).storedPicture(of: frame, label: "door")
        let exif = EXIFBlock(
            takenAtMilliseconds: Self.takenAt,
            utcOffsetSeconds: EXIFBlock.localUTCOffsetSeconds(atMilliseconds: Self.takenAt), make: "Shutter",
            model: "cam", software: "shutterd 9", imageDescription: "door")
        #expect(stored == exif.inserted(into: frame.jpeg))
    }

    @Test func aPicturesTextIsTheExpectedTextForItsTimeLabelAndJob() throws {
        let (frame, image) = Self.frame(pictureSource: nil)
        let stored = try capture(Self.overlay(on: ["pictures", "preview"])).storedPicture(
            of: frame, label: "door", jobID: 4)
        // The same text, drawn and encoded by the same code on the same pixels.
        var expected = image
        let renderer = TextOverlay(style: Self.overlay(on: []).style)
        renderer.draw(["22:13:20.123 door #9 job 4"], into: &expected)
        let jpeg = try JPEGEncoder(quality: 80).encode(expected)
        let exif = EXIFBlock(
            takenAtMilliseconds: Self.takenAt,
            utcOffsetSeconds: EXIFBlock.localUTCOffsetSeconds(atMilliseconds: Self.takenAt), make: "Shutter",
            model: "cam", software: "shutterd 9", imageDescription: "door")
        #expect(stored == exif.inserted(into: jpeg))
        // And it is not the picture without the text.
        #expect(stored != exif.inserted(into: try JPEGEncoder(quality: 80).encode(image)))
    }

    @Test func previewOnlyTextLeavesPicturesAsCaptured() throws {
        let exif = EXIFBlock(
            takenAtMilliseconds: Self.takenAt,
            utcOffsetSeconds: EXIFBlock.localUTCOffsetSeconds(atMilliseconds: Self.takenAt), make: "Shutter",
            model: "cam", software: "shutterd 9", imageDescription: nil)
        let (frame, image) = Self.frame(pictureSource: nil)
        let stored = try capture(Self.overlay(on: ["preview"])).storedPicture(of: frame, label: nil)
        #expect(stored == exif.inserted(into: try JPEGEncoder(quality: 80).encode(image)))
        // An MJPEG camera's bytes stay the camera's.
        let camera: [UInt8] = [0xFF, 0xD8, 9, 9, 0xFF, 0xD9]
        let (mjpeg, _) = Self.frame(pictureSource: .jpeg(camera))
        let storedMJPEG = try capture(Self.overlay(on: ["preview"])).storedPicture(of: mjpeg, label: nil)
        #expect(storedMJPEG == exif.inserted(into: camera))
    }

    @Test func whoNeedsTheFrameAsCaptured() {
        // The text names the label and job: pictures draw their own even though the preview has it.
        #expect(Self.overlay(on: ["pictures", "preview"]).picturesDrawTheirOwn)
        var shared = Self.overlay(on: ["pictures", "preview"])
        shared.template = OverlayTemplate("%H:%M:%S")!
        #expect(!shared.picturesNeedTheFrameAsCaptured)
        #expect(Self.overlay(on: ["pictures"]).picturesDrawTheirOwn)
        #expect(Self.overlay(on: ["preview"]).picturesNeedTheFrameAsCaptured)
        #expect(!Self.overlay(on: ["preview"]).picturesDrawTheirOwn)
    }
}
