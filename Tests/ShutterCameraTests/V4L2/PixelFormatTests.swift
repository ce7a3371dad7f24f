import CV4L2
import Testing

@testable import ShutterCamera

@Suite struct PixelFormatTests {
    @Test func fourccCodesMatchTheKernelHeader() {
        #expect(FourCC.code("MJPG") == cv4l2_pix_fmt_mjpeg())
        #expect(FourCC.code("JPEG") == cv4l2_pix_fmt_jpeg())
        #expect(FourCC.code("YUYV") == cv4l2_pix_fmt_yuyv())
        #expect(FourCC.code("NV12") == cv4l2_pix_fmt_nv12())
        #expect(FourCC.code("YU12") == cv4l2_pix_fmt_yuv420())
        #expect(FourCC.code("MJP") == nil)
        #expect(FourCC.code("MJPÉ") == nil)
    }

    @Test func fourccCodesReadBack() {
        #expect(FourCC.string(cv4l2_pix_fmt_mjpeg()) == "MJPG")
        #expect(FourCC.string(FourCC.code("Y16 ")!) == "Y16 ")
        #expect(FourCC.string(FourCC.code("Y16 ")! | 1 << 31) == "Y16 -BE")
        #expect(FourCC.string(0x0102_4142) == "BA..")
    }

    @Test func formatsAreFoundByAnyOfTheirCodes() {
        #expect(PixelFormat(fourcc: cv4l2_pix_fmt_jpeg()) == .mjpeg)
        #expect(PixelFormat(fourcc: cv4l2_pix_fmt_mjpeg()) == .mjpeg)
        #expect(PixelFormat(fourcc: cv4l2_pix_fmt_yuv420()) == .yuv420)
        #expect(PixelFormat(fourcc: FourCC.code("H264")!) == nil)
        #expect(PixelFormat.mjpeg.fourccs.first == cv4l2_pix_fmt_mjpeg())
    }
}
